//! Versions of another path under the same key are never answered, served
//! or taken: the check that used to sit three times in the daemon.

use super::harness::{STABLE, cfg, path_managed_by};
use super::{Action, CommitMsg, CommitProtocol, Version};
use crate::c2cfs::Tcommit;
use crate::coop::NodeId;
use std::sync::Arc;

/// A version that names its path, as the daemon's do.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Named {
    path: Arc<str>,
    n: u64,
}

impl Version for Named {
    fn has_first_block(&self) -> bool {
        true
    }

    fn is_of(&self, path: &str) -> bool {
        *self.path == *path
    }
}

fn named(path: &str, n: u64) -> Named {
    Named {
        path: path.into(),
        n,
    }
}

fn node(me: NodeId, members: &[NodeId]) -> CommitProtocol<Named> {
    let mut p = CommitProtocol::new(me, 7, cfg()).unwrap();
    p.set_members(members, 0);
    p
}

fn actions(p: &mut CommitProtocol<Named>) -> Vec<Action<Named>> {
    std::iter::from_fn(|| p.poll()).collect()
}

#[test]
fn a_manager_never_answers_or_serves_another_paths_version() {
    let f = path_managed_by(&[(&[1, 2], 2)]);
    let mut m = node(2, &[1, 2]);
    let now = STABLE + 1;
    // The first open stats the origin; its answer (wrongly, as a colliding
    // entry would be) is another path's version.
    let first = Some(super::FirstBlock { tlocal: None });
    let open = |nonce| CommitMsg::Open {
        nonce,
        path: f.clone(),
        first,
    };
    m.handle_message(1, open(1), now);
    assert!(matches!(&actions(&mut m)[..], [Action::Stat { .. }]));
    m.handle_stat(&f, Ok(named("/other", 3)), now);
    let out = actions(&mut m);
    assert!(
        matches!(
            &out[..],
            [Action::Send {
                to: 1,
                msg: CommitMsg::Opened {
                    nonce: 1,
                    answer: None,
                    served: false
                }
            }]
        ),
        "answered None and nothing served: {out:?}"
    );
    // The table holds that entry: a second open is not answered from it,
    // it stats again.
    m.handle_message(1, open(2), now);
    assert!(matches!(&actions(&mut m)[..], [Action::Stat { .. }]));
    assert_eq!(m.counters().opens_from_table, 0);
    m.handle_stat(&f, Ok(named(&f, 4)), now);
    let out = actions(&mut m);
    assert!(
        out.iter().any(|a| matches!(a, Action::Send {
            msg: CommitMsg::Opened { answer: Some((_, v)), served: true, .. }, ..
        } if v.n == 4))
            && out
                .iter()
                .any(|a| matches!(a, Action::ServeFirst { version, .. } if version.n == 4)),
        "the path's own version is answered and served: {out:?}"
    );
}

#[test]
fn an_opener_refuses_an_answer_with_another_paths_version() {
    let f = path_managed_by(&[(&[1, 2], 2)]);
    let mut c = node(1, &[1, 2]);
    c.handle_open(10, f.clone(), 0);
    let nonce = actions(&mut c)
        .into_iter()
        .find_map(|a| match a {
            Action::Send {
                to: 2,
                msg: CommitMsg::Open { nonce, .. },
            } => Some(nonce),
            _ => None,
        })
        .expect("the open goes to the manager");
    let tcommit = Tcommit {
        epoch: 3,
        serial: 5,
    };
    let lie = CommitMsg::Opened {
        nonce,
        answer: Some((tcommit, named("/other", 9))),
        served: true,
    };
    c.handle_message(2, lie, 1);
    let out = actions(&mut c);
    assert!(
        out.iter()
            .any(|a| matches!(a, Action::Violation { from: 2, .. })),
        "{out:?}"
    );
    assert!(
        out.iter().any(|a| matches!(
            a,
            Action::Opened {
                req: 10,
                answer: None
            }
        )),
        "the open goes to the origin: {out:?}"
    );
    assert!(
        !out.iter().any(|a| matches!(a, Action::ReadFirst { .. })),
        "nothing read on its word: {out:?}"
    );
}
