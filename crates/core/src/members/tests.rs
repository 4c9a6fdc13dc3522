//! The view driven by hand: links as numbers, members as their link's
//! number.

use super::{HINT_ATTEMPTS, LinkDown, LinkUp, NoDial, View};

type V = View<u32, u32>;

fn view() -> V {
    View::new(0, "me:1".into(), 4, 2)
}

fn linked(v: &mut V, addr: &str, id: u32, link: u32) -> LinkUp {
    assert_eq!(v.may_dial(addr), Ok(()));
    v.dialled(addr.into(), link, false);
    v.link_up(addr, id, addr.into(), |&l| l)
}

#[test]
fn dials_are_refused_when_needless_or_past_the_bound() {
    let mut v = view();
    assert_eq!(v.may_dial("me:1"), Err(NoDial::Needless), "its own address");
    for i in 0..4 {
        let addr = format!("p:{i}");
        assert_eq!(v.may_dial(&addr), Ok(()));
        v.dialled(addr.clone(), i, false);
        assert_eq!(v.may_dial(&addr), Err(NoDial::Needless), "dialled");
    }
    assert_eq!(v.may_dial("p:9"), Err(NoDial::Full));
    v.leave();
    assert_eq!(v.may_dial("p:9"), Err(NoDial::Needless), "leaving");
}

#[test]
fn a_member_linked_twice_keeps_its_first_link() {
    let mut v = view();
    assert_eq!(
        linked(&mut v, "a:1", 7, 1),
        LinkUp::Joined { was_down: false }
    );
    assert_eq!(v.may_dial("a:1"), Err(NoDial::Needless));
    v.dialled("a:2".into(), 2, false);
    assert_eq!(v.link_up("a:2", 7, "a:1".into(), |&l| l), LinkUp::Duplicate);
    assert_eq!(v.member(7).map(|m| m.link), Some(1));
    assert_eq!(v.sizes().0, 1, "the duplicate's address is dropped");
    assert_eq!(
        v.link_down("a:2", Some(7)),
        LinkDown::Nothing,
        "not its link"
    );
    assert_eq!(v.live(), vec![0, 7]);
    assert!(matches!(v.link_down("a:1", Some(7)), LinkDown::Lost(m) if m.link == 1));
    assert_eq!(v.live(), vec![0]);
    assert_eq!(v.link_up("gone:1", 8, "x".into(), |&l| l), LinkUp::Unknown);
}

#[test]
fn a_member_declared_down_is_not_live_until_seen_alive() {
    let mut v = view();
    linked(&mut v, "a:1", 7, 1);
    linked(&mut v, "b:1", 8, 2);
    let m = v.declare_down(7, false).expect("linked");
    assert_eq!((m.link, v.live()), (1, vec![0, 8]));
    assert_eq!(v.may_dial("a:1"), Ok(()), "its link went with it");
    // Its link comes up again before the detector sees it: linked, not live.
    assert_eq!(
        linked(&mut v, "a:1", 7, 3),
        LinkUp::Joined { was_down: true }
    );
    assert_eq!(v.live(), vec![0, 8]);
    assert_eq!(v.advertised(), vec![(0, "me:1".into()), (8, "b:1".into())]);
    assert_eq!(v.detected_up(7), (true, false), "live again, linked");
    assert_eq!(v.live(), vec![0, 7, 8]);
    assert_eq!(
        v.declare_down(0, false).map(|m| m.link),
        None,
        "never itself"
    );
}

#[test]
fn a_member_that_left_is_not_dialled_on_a_peers_word() {
    let mut v = view();
    linked(&mut v, "a:1", 7, 1);
    assert!(!v.worth_hint(7), "linked");
    assert!(!v.worth_hint(0), "itself");
    v.declare_down(7, true);
    assert!(v.has_left(7) && v.is_down(7));
    assert!(!v.worth_hint(7), "it left");
    assert_eq!(v.detected_up(7), (true, true), "seen back, not linked");
    assert!(v.worth_hint(7));
}

#[test]
fn a_hinted_address_gets_its_attempts_then_is_forgotten() {
    let mut v = view();
    v.dialled("h:1".into(), 1, true);
    v.dialled("seed:1".into(), 2, false);
    for _ in 1..HINT_ATTEMPTS {
        assert_eq!(v.link_down("h:1", None), LinkDown::Nothing);
    }
    assert_eq!(v.link_down("h:1", None), LinkDown::Forgotten);
    assert_eq!(v.may_dial("h:1"), Ok(()), "forgotten: may be named again");
    for _ in 0..2 * HINT_ATTEMPTS {
        assert_eq!(v.link_down("seed:1", None), LinkDown::Nothing, "seeds stay");
    }
    // A hinted address that answers as a member stays.
    v.dialled("h:2".into(), 3, true);
    assert_eq!(
        v.link_up("h:2", 9, "h:2".into(), |&l| l),
        LinkUp::Joined { was_down: false }
    );
    for _ in 0..HINT_ATTEMPTS {
        v.link_down("h:2", None);
    }
    assert_eq!(v.may_dial("h:2"), Err(NoDial::Needless));
}

#[test]
fn down_and_left_forget_their_oldest_first() {
    let mut v = view();
    for id in [9, 3, 5] {
        v.declare_down(id, true);
    }
    assert_eq!(v.sizes().1, 2, "bounded");
    assert!(
        !v.is_down(9) && !v.has_left(9),
        "the oldest went, not the smallest"
    );
    assert!(v.is_down(3) && v.is_down(5) && v.has_left(3));
}
