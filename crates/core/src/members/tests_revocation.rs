//! The revocation rule: a list is put in force only if newer than the one
//! in force, and passed to every linked member but its sender, and to every
//! member linked later.

use super::swim::{Swim, SwimId};
use super::{MemberAction, Membership, View};
use crate::coop::NodeId;

fn membership() -> Membership<u32, u32> {
    let me = SwimId {
        node: 0,
        listen: "me:1".into(),
        incarnation: 1,
    };
    Membership::new(View::new(0, "me:1".into(), 8, 8), Swim::new(me, 7))
}

fn link(m: &mut Membership<u32, u32>, id: NodeId) {
    let addr = format!("p:{id}");
    m.handle_join(addr.clone());
    m.dialled(addr.clone(), id, false);
    m.handle_link_up(&addr, id, addr.clone(), |&l| l, 0);
}

fn passed(m: &mut Membership<u32, u32>) -> Vec<NodeId> {
    let mut to: Vec<NodeId> = std::iter::from_fn(|| m.poll())
        .filter_map(|a| match a {
            MemberAction::PassRevocation { to } => Some(to),
            _ => None,
        })
        .collect();
    to.sort_unstable();
    to
}

#[test]
fn only_a_newer_list_is_taken_and_it_reaches_every_member_but_its_sender() {
    let mut m = membership();
    assert!(!m.handle_revocation(0, None), "no list is not a list");
    link(&mut m, 1);
    link(&mut m, 2);
    link(&mut m, 3);
    assert_eq!(passed(&mut m), Vec::<NodeId>::new(), "none in force yet");
    assert!(m.handle_revocation(5, Some(2)));
    assert_eq!(passed(&mut m), vec![1, 3], "all linked but the sender");
    assert_eq!(m.revocation(), 5);
    // A replay, or an older list, can never lift a revocation.
    assert!(!m.handle_revocation(5, Some(1)));
    assert!(!m.handle_revocation(4, None));
    assert_eq!((passed(&mut m), m.revocation()), (vec![], 5));
    // The operator's own newer list goes to every member.
    assert!(m.handle_revocation(6, None));
    assert_eq!(passed(&mut m), vec![1, 2, 3]);
    // A member linked later is told the list in force.
    link(&mut m, 4);
    assert_eq!(passed(&mut m), vec![4]);
}
