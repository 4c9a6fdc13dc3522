//! The listing machine driven by hand: a few nodes, a wire, an origin of
//! directories whose listings can be held in flight.

use super::{ListAction, ListConfig, ListMsg, ListProtocol, Listing, MAX_PATH, MAX_WAITERS};
use crate::c2cfs::exclusive::manager_key;
use crate::coop::NodeId;
use crate::policy::Policy;
use crate::protocol::manager_of;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

const TIMEOUT: u64 = 1_000;
const STABLE: u64 = 10_000;

/// A listing: the directory and its names, a byte each.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Names(Arc<str>, Vec<String>);

impl Listing for Names {
    fn bytes(&self) -> usize {
        self.1.len()
    }

    fn dir(&self) -> &str {
        &self.0
    }
}

struct Net {
    nodes: BTreeMap<NodeId, ListProtocol<Names>>,
    wire: VecDeque<(NodeId, NodeId, ListMsg<Names>)>,
    origin: BTreeMap<String, Vec<String>>,
    /// Origin listings asked and not yet answered, while `hold` is set.
    held: Vec<(NodeId, Arc<str>)>,
    hold: bool,
    /// Origin listings asked, per node.
    lists: BTreeMap<NodeId, usize>,
    /// Nodes whose messages are lost.
    down: BTreeSet<NodeId>,
    done: Vec<(NodeId, ListAction<Names>)>,
    now: u64,
    next_req: u64,
}

impl Net {
    fn new(ids: &[NodeId], cfg: ListConfig) -> Net {
        let mut nodes = BTreeMap::new();
        for &id in ids {
            let mut n = ListProtocol::new(id, cfg).unwrap();
            n.set_members(ids, 0);
            nodes.insert(id, n);
        }
        let mut net = Net {
            nodes,
            wire: VecDeque::new(),
            origin: BTreeMap::new(),
            held: Vec::new(),
            hold: false,
            lists: BTreeMap::new(),
            down: BTreeSet::new(),
            done: Vec::new(),
            now: 0,
            next_req: 0,
        };
        net.advance(STABLE);
        net
    }

    fn cfg() -> ListConfig {
        ListConfig {
            capacity: 100,
            max_listing: 10,
            timeout_us: TIMEOUT,
            stable_us: STABLE,
        }
    }

    fn node(&mut self, id: NodeId) -> &mut ListProtocol<Names> {
        self.nodes.get_mut(&id).unwrap()
    }

    fn advance(&mut self, us: u64) {
        self.now += us;
        let now = self.now;
        for n in self.nodes.values_mut() {
            n.handle_timeout(now);
        }
        self.pump();
    }

    fn listing(&self, dir: &str) -> Names {
        Names(
            dir.into(),
            self.origin.get(dir).cloned().unwrap_or_default(),
        )
    }

    fn answer_origin(&mut self, id: NodeId, dir: Arc<str>) {
        let l = self.listing(&dir);
        let now = self.now;
        self.node(id).handle_listed(&dir, Some(l), now);
    }

    /// Runs the nodes until nothing moves.
    fn pump(&mut self) {
        loop {
            let mut moved = false;
            let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
            for id in ids {
                while let Some(a) = self.node(id).poll() {
                    moved = true;
                    match a {
                        ListAction::Send { to, msg } => self.wire.push_back((id, to, msg)),
                        ListAction::List { dir } => {
                            *self.lists.entry(id).or_default() += 1;
                            if self.hold {
                                self.held.push((id, dir));
                            } else {
                                self.answer_origin(id, dir);
                            }
                        }
                        a => self.done.push((id, a)),
                    }
                }
            }
            while let Some((from, to, msg)) = self.wire.pop_front() {
                moved = true;
                if self.down.contains(&to) || self.down.contains(&from) {
                    continue;
                }
                let now = self.now;
                if let Some(n) = self.nodes.get_mut(&to) {
                    n.handle_message(from, msg, now);
                }
            }
            if !moved {
                return;
            }
        }
    }

    fn release(&mut self) {
        for (id, dir) in std::mem::take(&mut self.held) {
            self.answer_origin(id, dir);
        }
        self.pump();
    }

    fn start_list(&mut self, id: NodeId, dir: &str) -> u64 {
        let req = self.next_req;
        self.next_req += 1;
        let now = self.now;
        self.node(id).handle_list(req, dir.into(), now);
        self.pump();
        req
    }

    fn start_change(&mut self, id: NodeId, dir: &str) -> u64 {
        self.start_change_of(id, dir, false)
    }

    fn start_change_of(&mut self, id: NodeId, dir: &str, subtree: bool) -> u64 {
        let req = self.next_req;
        self.next_req += 1;
        let now = self.now;
        self.node(id).handle_changed(req, dir.into(), subtree, now);
        self.pump();
        req
    }

    /// The answer to request `req` of node `id`, if it came.
    fn listed(&self, id: NodeId, req: u64) -> Option<Option<Vec<String>>> {
        self.done.iter().find_map(|(n, a)| match a {
            ListAction::Listed { req: r, listing } if *n == id && *r == req => {
                Some(listing.clone().map(|l| l.1))
            }
            _ => None,
        })
    }

    fn noted(&self, id: NodeId, req: u64) -> Option<bool> {
        self.done.iter().find_map(|(n, a)| match a {
            ListAction::Noted { req: r, assured } if *n == id && *r == req => Some(*assured),
            _ => None,
        })
    }

    fn list(&mut self, id: NodeId, dir: &str) -> Option<Vec<String>> {
        let req = self.start_list(id, dir);
        self.listed(id, req).expect("answered")
    }

    /// `name` is added to `dir` at the origin by node `id`'s user, which
    /// then notes the change: whether it was assured.
    fn add(&mut self, id: NodeId, dir: &str, name: &str) -> bool {
        let names = self.origin.entry(dir.to_owned()).or_default();
        names.push(name.to_owned());
        let req = self.start_change(id, dir);
        self.noted(id, req).expect("noted")
    }

    fn violations(&self) -> Vec<(NodeId, &'static str)> {
        (self.done.iter())
            .filter_map(|(n, a)| match a {
                ListAction::Violation { from, why } => Some((*n, *from, *why)),
                _ => None,
            })
            .map(|(_, from, why)| (from, why))
            .collect()
    }

    fn origin_lists(&self) -> usize {
        self.lists.values().sum()
    }
}

/// A directory whose manager among `members` is `m`.
fn dir_managed_by(members: &[NodeId], m: NodeId) -> String {
    (0..)
        .map(|i| format!("d{i}"))
        .find(|d| manager_of(manager_key(d), members) == Some(m))
        .unwrap()
}

fn names(n: &[&str]) -> Option<Vec<String>> {
    Some(n.iter().map(|s| s.to_string()).collect())
}

#[test]
fn a_directory_is_listed_at_the_origin_once_for_every_member() {
    let mut net = Net::new(&[1, 2, 3], Net::cfg());
    let d = dir_managed_by(&[1, 2, 3], 3);
    net.origin.insert(d.clone(), vec!["a".into(), "b".into()]);
    for id in [1, 2, 3, 1] {
        assert_eq!(net.list(id, &d), names(&["a", "b"]));
    }
    assert_eq!(net.lists.get(&3), Some(&1), "only the manager listed");
    assert_eq!(net.origin_lists(), 1);
    assert_eq!(net.node(3).counters().from_table, 3);
    assert!(net.violations().is_empty());
}

#[test]
fn a_writers_change_is_seen_by_every_listing_begun_after_it() {
    let mut net = Net::new(&[1, 2, 3], Net::cfg());
    let d = dir_managed_by(&[1, 2, 3], 2);
    net.origin.insert(d.clone(), vec!["a".into()]);
    assert_eq!(net.list(1, &d), names(&["a"]));
    assert!(net.add(3, &d, "b"), "the manager noted it");
    assert_eq!(net.list(1, &d), names(&["a", "b"]));
    assert_eq!(net.origin_lists(), 2, "the change dropped the listing");
    assert_eq!(net.list(3, &d), names(&["a", "b"]));
    assert_eq!(net.origin_lists(), 2);
}

#[test]
fn a_listing_in_flight_when_a_change_arrives_answers_earlier_listers_and_is_not_kept() {
    let mut net = Net::new(&[1, 2], Net::cfg());
    let d = dir_managed_by(&[1, 2], 2);
    net.origin.insert(d.clone(), vec!["a".into()]);
    net.hold = true;
    let early = net.start_list(1, &d);
    // The origin listed `a` before the write reached it.
    let stale = net.listing(&d);
    net.held.clear();
    assert!(net.add(1, &d, "b"));
    let late = net.start_list(1, &d);
    assert_eq!(
        net.listed(1, late),
        Some(None),
        "asked after the change: origin"
    );
    net.hold = false;
    let now = net.now;
    net.node(2).handle_listed(&d, Some(stale), now);
    net.pump();
    assert_eq!(
        net.listed(1, early),
        Some(names(&["a"])),
        "concurrent with the write"
    );
    assert_eq!(
        net.list(1, &d),
        names(&["a", "b"]),
        "the stale one was not kept"
    );
}

#[test]
fn a_listing_in_flight_with_no_change_answers_listers_who_asked_after_it_was_issued() {
    let mut net = Net::new(&[1, 2, 3], Net::cfg());
    let d = dir_managed_by(&[1, 2, 3], 1);
    net.origin.insert(d.clone(), vec!["x".into()]);
    net.hold = true;
    let first = net.start_list(2, &d);
    let second = net.start_list(3, &d);
    let own = net.start_list(1, &d);
    net.release();
    for (id, req) in [(2, first), (3, second), (1, own)] {
        assert_eq!(net.listed(id, req), Some(names(&["x"])));
    }
    assert_eq!(net.origin_lists(), 1);
}

#[test]
fn after_a_membership_change_listings_go_to_the_origin_until_views_settle() {
    let mut net = Net::new(&[1, 2], Net::cfg());
    let d = dir_managed_by(&[1, 2], 2);
    net.origin.insert(d.clone(), vec!["a".into()]);
    assert_eq!(net.list(1, &d), names(&["a"]));
    assert_eq!(net.node(2).table_len(), 1);
    let now = net.now;
    net.node(2).set_members(&[], now); // 1 seemed gone, and came back
    assert_eq!(net.node(2).table_len(), 0, "the table is dropped");
    net.node(2).set_members(&[1], now);
    assert_eq!(net.list(1, &d), None, "2 is not settled");
    net.advance(STABLE);
    assert_eq!(net.list(1, &d), names(&["a"]));
}

#[test]
fn a_change_the_manager_does_not_note_is_told_to_every_member() {
    let mut net = Net::new(&[1, 2, 3], Net::cfg());
    let d = dir_managed_by(&[1, 2, 3], 3);
    net.origin.insert(d.clone(), vec![]);
    assert_eq!(net.list(2, &d), names(&[]));
    // The manager is unreachable: the change times out and is told to
    // everyone else; not assured (the manager may still hold its listing).
    net.down.insert(3);
    let req = net.start_change(1, &d);
    assert_eq!(net.noted(1, req), None);
    net.advance(TIMEOUT);
    assert_eq!(net.noted(1, req), Some(false));
    assert_eq!(net.node(1).counters().spread, 1);
    // A manager whose view is not settled answers that it does not manage
    // the directory: the writer tells everyone else, and every one answers.
    net.down.clear();
    let d1 = dir_managed_by(&[1, 2, 3], 1);
    net.origin.insert(d1.clone(), vec!["a".into()]);
    assert_eq!(net.list(3, &d1), names(&["a"]));
    let now = net.now;
    net.node(1).set_members(&[1, 2], now);
    net.node(1).set_members(&[1, 2, 3], now);
    assert!(net.add(2, &d1, "b"), "every member answered");
    assert_eq!(net.node(2).counters().spread, 1);
    assert_eq!(net.list(3, &d1), None, "1 is not settled");
    net.advance(STABLE);
    assert_eq!(net.list(3, &d1), names(&["a", "b"]));
}

#[test]
fn a_listing_too_large_to_keep_is_neither_kept_nor_sent() {
    let mut net = Net::new(&[1, 2], Net::cfg());
    let d = dir_managed_by(&[1, 2], 2);
    let many: Vec<String> = (0..11).map(|i| format!("f{i}")).collect();
    net.origin.insert(d.clone(), many);
    assert_eq!(net.list(1, &d), None, "over max_listing: list the origin");
    assert_eq!(net.list(1, &d), None);
    assert_eq!(net.origin_lists(), 1, "remembered as large");
    assert_eq!(net.node(2).table_len(), 0);
    net.origin.get_mut(&d).unwrap().truncate(3);
    assert!(net.add(1, &d, "g"));
    assert_eq!(net.list(1, &d).map(|l| l.len()), Some(4));
}

#[test]
fn the_table_keeps_entries_within_its_capacity() {
    let mut net = Net::new(&[1], Net::cfg());
    for i in 0..30 {
        let d = format!("dir{i}");
        let six: Vec<String> = (0..6).map(|j| format!("f{j}")).collect();
        net.origin.insert(d.clone(), six);
        assert_eq!(net.list(1, &d).map(|l| l.len()), Some(6));
    }
    // 100 bytes: 14 listings of 6 bytes and one more each.
    assert_eq!(net.node(1).table_len(), 14);
    assert_eq!(net.list(1, "dir29").map(|l| l.len()), Some(6));
    assert_eq!(net.origin_lists(), 30, "the latest is kept");
}

#[test]
fn too_many_listers_of_one_directory_are_sent_to_the_origin() {
    let mut net = Net::new(&[1, 2], Net::cfg());
    let d = dir_managed_by(&[1, 2], 2);
    net.hold = true;
    let reqs: Vec<u64> = (0..MAX_WAITERS + 1)
        .map(|_| net.start_list(1, &d))
        .collect();
    assert_eq!(net.listed(1, reqs[MAX_WAITERS]), Some(None));
    net.release();
    assert_eq!(net.listed(1, reqs[0]), Some(names(&[])));
}

#[test]
fn roles_are_checked_on_every_message() {
    let mut net = Net::new(&[1, 2], Net::cfg());
    let d: Arc<str> = dir_managed_by(&[1, 2], 2).into();
    let now = net.now;
    // A non-member asks or tells: refused, nothing answered.
    let list = ListMsg::List {
        nonce: 1,
        dir: d.clone(),
    };
    net.node(2).handle_message(9, list, now);
    let changed = ListMsg::Changed {
        nonce: 2,
        dir: d.clone(),
        subtree: false,
    };
    net.node(2).handle_message(9, changed, now);
    let long: Arc<str> = "x".repeat(MAX_PATH + 1).into();
    let list = ListMsg::List {
        nonce: 3,
        dir: long,
    };
    net.node(2).handle_message(1, list, now);
    net.pump();
    assert!(net.wire.is_empty());
    let why: Vec<_> = net.violations();
    assert_eq!(why.len(), 3, "{why:?}");
    assert!(why[..2].iter().all(|(from, _)| *from == 9));
    // Answers only from the member asked, of the kind asked, of the
    // directory asked.
    net.hold = true;
    let req = net.start_list(1, &d);
    net.held.clear();
    let forged = ListMsg::Listed {
        nonce: 0,
        listing: Some(Names(d.clone(), vec!["evil".into()])),
    };
    net.node(1).handle_message(3, forged, now);
    let other = ListMsg::Listed {
        nonce: 0,
        listing: Some(Names("elsewhere".into(), vec![])),
    };
    net.node(1).handle_message(2, other, now);
    net.pump();
    assert_eq!(
        net.listed(1, req),
        Some(None),
        "the other directory is refused"
    );
    let wrong_kind = net.start_list(1, &d);
    net.held.clear();
    let noted = ListMsg::Noted {
        nonce: 1,
        managed: true,
    };
    net.node(1).handle_message(2, noted, now);
    net.pump();
    assert_eq!(net.listed(1, wrong_kind), Some(None));
    let why: Vec<&str> = net.violations()[3..].iter().map(|v| v.1).collect();
    assert_eq!(why.len(), 3, "{why:?}");
    // A late answer (no such ask) is dropped quietly.
    let late = ListMsg::Noted {
        nonce: 77,
        managed: true,
    };
    net.node(1).handle_message(2, late, now);
    assert_eq!(net.node(1).counters().late_answers, 1);
}

#[test]
fn a_directory_moved_drops_every_listing_below_it_at_every_member() {
    let members = [1, 2, 3];
    let mut net = Net::new(&members, Net::cfg());
    // Directories below `top` with different managers, and one beside it.
    let top = "top";
    let below: Vec<String> = (0..40).map(|i| format!("top/s{i}")).collect();
    let beside = "topaz";
    for d in below.iter().map(String::as_str).chain([top, beside]) {
        net.origin.insert(d.to_owned(), vec!["old".into()]);
        assert_eq!(net.list(1, d), names(&["old"]));
    }
    let managers: BTreeSet<NodeId> = (below.iter())
        .filter_map(|d| manager_of(manager_key(d), &members))
        .collect();
    assert_eq!(managers.len(), 3, "listings kept at every member");
    // `top` is replaced by another tree (a rename over it): told to all.
    for names in net.origin.values_mut() {
        *names = vec!["new".into()];
    }
    let req = net.start_change_of(2, top, true);
    assert_eq!(net.noted(2, req), Some(true));
    let lists = net.origin_lists();
    for d in below.iter().map(String::as_str).chain([top]) {
        assert_eq!(net.list(3, d), names(&["new"]), "{d}");
    }
    assert_eq!(net.origin_lists(), lists + below.len() + 1);
    assert_eq!(net.list(3, beside), names(&["old"]), "not below top");
}

#[test]
fn is_under_follows_path_parts() {
    use super::is_under;
    assert!(is_under("a/b", "a") && is_under("a", "a") && is_under("a", ""));
    assert!(!is_under("ab", "a") && !is_under("a", "a/b"));
}

/// A new machine holds no listing and allocates little: its LRU is
/// weighed in bytes, so the default 8 MiB of listings is not room for
/// 8 M entries up front (16 MiB of memory touched at every start, the
/// fault harness's page faults: more system time than its own).
#[test]
fn a_new_machine_allocates_little() {
    let p = ListProtocol::<Names>::new(0, ListConfig::default()).unwrap();
    let bytes = p.order.metadata_bytes();
    assert!(bytes < 1 << 20, "{bytes} bytes allocated up front");
}
