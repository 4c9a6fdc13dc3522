//! C2Cfs `exclusive` mode against Mallory, a member: she may send opens,
//! commits and forgets (any member may), but an answer counts only from
//! the node its request went to, a commit carries no version for her to
//! forge (the manager stats the origin itself), and an opener refuses an
//! answer carrying another path's version. (A manager that lies with the
//! right path is a documented residual risk, not tested here.)

use super::*;
use coopcache_core::c2cfs::exclusive::manager_key;
use coopcache_core::c2cfs::{Committed, Tcommit};
use coopcache_core::coop::AlgorithmKind;
use coopcache_core::protocol::manager_of;
use coopcache_node::NodeHandle;

/// How long every origin stat takes in
/// [`answers_to_a_request_sent_to_another_node_are_refused`]: the window in
/// which an honest manager's answer is pending and Mallory forges hers
/// (well under the 1 s an opener waits for its manager).
const STAT_DELAY: Duration = Duration::from_millis(600);

/// A `Tcommit` no manager issued.
const FORGED: Tcommit = Tcommit {
    epoch: 0xbad,
    serial: 1,
};

/// The live members as every real node sees them: the real nodes and
/// Mallory.
fn members(c: &TestCluster) -> Vec<NodeId> {
    let mut m: Vec<NodeId> = (0..c.nodes.len() as NodeId).collect();
    m.push(MALLORY);
    m
}

/// The manager of `path` over the live members.
fn manager(c: &TestCluster, path: &str) -> NodeId {
    manager_of(manager_key(path), &members(c)).unwrap()
}

/// A file of `names` that a real node manages, and that node.
fn managed_by_a_real_node(c: &TestCluster, names: &[String]) -> (String, NodeId) {
    names
        .iter()
        .map(|n| (n.clone(), manager(c, n)))
        .find(|&(_, m)| m != MALLORY)
        .expect("every file is Mallory's")
}

/// The violations `node` counted against `peer` (its metric, per peer).
fn violations_by(node: &NodeHandle, peer: &str) -> u64 {
    let key = format!("coopcache_protocol_violations_total{{peer=\"{peer}\"}} ");
    let metrics = node.metrics().encode();
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&key))
        .map_or(0, |n| n.trim().parse().unwrap())
}

async fn origin_stats(node: &NodeHandle) -> u64 {
    node.status().await.unwrap().origin_stats
}

/// Mallory forges the answers to a request a real node sent to another
/// node: while node A's open waits on the file's honest manager B (its
/// stat of the origin takes [`STAT_DELAY`]), she sends A an `Opened` with
/// a forged `Tcommit` and version, a `Committed` and a `Forgot`, all with
/// the open's nonce (a fresh node's first request is nonce 1). A asked her
/// nothing: each is refused and counted against her, and the open returns
/// B's answer, the origin's real version. (An answer whose nonce no
/// request in flight carries is dropped as late, and not counted: the
/// attack needs a request in flight, hence the delayed stat.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_to_a_request_sent_to_another_node_are_refused() {
    let shape = Shape {
        nodes: 2,
        algorithm: AlgorithmKind::NChance,
        origin_delay: STAT_DELAY,
        ..Shape::default()
    };
    let (c, mut mallory, names) = attacked_cluster_shaped(shape, "u", Duration::from_secs(5)).await;
    let (path, b) = managed_by_a_real_node(&c, &names);
    let a = 1 - b;
    let node = c.nodes[a as usize].clone();
    let real = node.stat_fresh(&path).await.unwrap();
    let before = origin_stats(&c.nodes[b as usize]).await;
    let open = tokio::spawn({
        let (node, path) = (node.clone(), path.clone());
        async move { node.open_exclusive(&path).await.unwrap() }
    });
    // B's stat has begun: A's open (its first request) waits on it.
    let deadline = Instant::now() + Duration::from_secs(5);
    while origin_stats(&c.nodes[b as usize]).await == before {
        assert!(
            Instant::now() < deadline,
            "the manager never stat'ed the file"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let nonce = 1;
    let fake = PathVersion {
        path: Arc::from(path.as_str()),
        version: FileVersion {
            size: real.size,
            version: "forged".into(),
            modified: None,
            perm: 0o644,
            owner: None,
        },
    };
    let forged = [
        CommitMsg::Opened {
            nonce,
            answer: Some((FORGED, fake)),
            served: false,
        },
        CommitMsg::Committed {
            nonce,
            answer: Some(Committed {
                tcommit: FORGED,
                valid: true,
            }),
        },
        CommitMsg::Forgot { nonce },
    ];
    for msg in forged {
        mallory.send(a, &Wire::Commit(msg)).await;
    }
    mallory.barrier(a).await;
    let answered_early = open.is_finished();
    let (topen, version) = open.await.unwrap();
    assert_eq!(version, real, "the open read a forged version");
    assert!(topen.is_some_and(|t| t != FORGED), "{topen:?}");
    assert!(
        !answered_early,
        "the honest answer came before Mallory's: the test proves nothing"
    );
    assert_eq!(violations_by(&node, "mallory"), 3);
    assert_eq!(node.status().await.unwrap().protocol_violations, 3);
    assert_eq!(violations_by(&c.nodes[b as usize], "mallory"), 0);
}

/// A member's `Commit` (which any member may send) names no version, and
/// the manager takes none from her: it stats the origin itself, so the
/// next open reads exactly the origin's version. A write that bypassed the
/// cluster leaves the manager's table stale (the opens it answers from the
/// table show it), so the stat her commit caused is what changes the
/// answer. Her `Forget` is accepted too, and costs the manager one stat of
/// the origin at the next open, which again reads the origin's version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_members_commit_or_forget_only_makes_the_manager_ask_the_origin() {
    let (c, mut mallory, names) =
        attacked_cluster("c", AlgorithmKind::NChance, Duration::from_secs(5)).await;
    let (path, m) = managed_by_a_real_node(&c, &names);
    let manager = &c.nodes[m as usize];
    let opener = &c.nodes[1 - m as usize];
    let file = c.origin_dir.join(&path);
    let len = (BLOCKS_PER_FILE * BLOCK_SIZE) as usize;

    let (t1, v1) = opener.open_exclusive(&path).await.unwrap();
    assert!(t1.is_some(), "the manager did not answer");
    assert_eq!(v1, opener.stat_fresh(&path).await.unwrap());
    // A write that went around the cluster: the manager still answers v1
    // from its table, without a stat.
    rewrite(&file, &contents(77, len));
    let stats = origin_stats(manager).await;
    let (_, stale) = opener.open_exclusive(&path).await.unwrap();
    assert_eq!(stale, v1);
    assert_eq!(origin_stats(manager).await, stats);

    let commit = CommitMsg::Commit {
        nonce: 7,
        path: Arc::from(path.as_str()),
        topen: None,
    };
    mallory.send(m, &Wire::Commit(commit)).await;
    let (_, done) = mallory
        .next_commit_msg(|from, msg| {
            from == m && matches!(msg, CommitMsg::Committed { nonce: 7, .. })
        })
        .await;
    assert!(
        matches!(
            done,
            CommitMsg::Committed {
                answer: Some(_),
                ..
            }
        ),
        "her commit was not recorded: {done:?}"
    );
    assert_eq!(origin_stats(manager).await, stats + 1, "no stat");
    let (t2, v2) = opener.open_exclusive(&path).await.unwrap();
    assert_eq!(v2, opener.stat_fresh(&path).await.unwrap());
    assert_ne!(v2, v1);
    assert!(t2.is_some() && t2 != t1, "{t1:?} {t2:?}");

    // Another write around the cluster, then her Forget.
    rewrite(&file, &contents(78, len));
    let (_, stale) = opener.open_exclusive(&path).await.unwrap();
    assert_eq!(stale, v2);
    let stats = origin_stats(manager).await;
    let forget = CommitMsg::Forget {
        nonce: 8,
        path: Arc::from(path.as_str()),
    };
    mallory.send(m, &Wire::Commit(forget)).await;
    mallory
        .next_commit_msg(|from, msg| from == m && *msg == CommitMsg::Forgot { nonce: 8 })
        .await;
    assert_eq!(origin_stats(manager).await, stats, "a forget stats nothing");
    let (t3, v3) = opener.open_exclusive(&path).await.unwrap();
    assert_eq!(v3, opener.stat_fresh(&path).await.unwrap());
    assert_ne!(v3, v2);
    assert!(t3.is_some(), "the manager did not answer");
    assert_eq!(origin_stats(manager).await, stats + 1, "the open's stat");
    for node in &c.nodes {
        assert_eq!(violations_by(node, "mallory"), 0, "a member's right");
    }
}

/// Spawns `ask_manager(path)` at `node` (node 0), has Mallory answer its
/// `Open` with `answer`, and returns what `ask_manager` returned.
async fn answer_open(
    mallory: &mut Mallory,
    node: &Arc<NodeHandle>,
    path: &str,
    answer: PathVersion,
) -> Option<(Tcommit, FileVersion)> {
    let ask = tokio::spawn({
        let (node, path) = (node.clone(), path.to_string());
        async move { node.ask_manager(&path).await }
    });
    let (_, open) = mallory
        .next_commit_msg(|from, msg| from == 0 && matches!(msg, CommitMsg::Open { .. }))
        .await;
    let CommitMsg::Open {
        nonce, path: asked, ..
    } = open
    else {
        unreachable!()
    };
    assert_eq!(&*asked, path);
    let opened = CommitMsg::Opened {
        nonce,
        answer: Some((FORGED, answer)),
        served: false,
    };
    mallory.send(0, &Wire::Commit(opened)).await;
    ask.await.unwrap()
}

/// Mallory manages a file, and answers an open of it with the version of
/// another file she names (a real version, of a path whose key could
/// collide): the opener refuses it, `ask_manager` says nothing and
/// `open_exclusive` reads the origin's own version. As a control, her
/// answer with the file's own path and real version is taken, so the
/// refusals are the path check's, not a timeout's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_with_another_paths_version_is_refused() {
    let (c, mut mallory, names) =
        attacked_cluster("p", AlgorithmKind::NChance, Duration::from_secs(5)).await;
    let path = mallorys_file(&c, &names);
    let other = names.iter().find(|n| **n != path).unwrap().clone();
    let node = c.nodes[0].clone();
    let real = node.stat_fresh(&path).await.unwrap();
    let lie = node.stat_fresh(&other).await.unwrap();
    assert_ne!(real, lie);

    // The control: her answer for the file's own path is taken.
    let honest = PathVersion {
        path: Arc::from(path.as_str()),
        version: (*real).clone(),
    };
    let got = answer_open(&mut mallory, &node, &path, honest).await;
    assert_eq!(got, Some((FORGED, (*real).clone())));

    let other_path = PathVersion {
        path: Arc::from(other.as_str()),
        version: (*lie).clone(),
    };
    let got = answer_open(&mut mallory, &node, &path, other_path.clone()).await;
    assert_eq!(got, None, "another path's version was taken");

    let (open, msg) = open_at_mallory(&mut mallory, &node, &path).await;
    let CommitMsg::Open { nonce, .. } = msg else {
        unreachable!()
    };
    let opened = CommitMsg::Opened {
        nonce,
        answer: Some((FORGED, other_path)),
        served: false,
    };
    mallory.send(0, &Wire::Commit(opened)).await;
    assert_eq!(open.await.unwrap(), (None, real));
    // She was asked, so only the path is held against her: once per
    // answer naming another path (an honest manager filters its table).
    assert_eq!(violations_by(&node, "mallory"), 2);
}

/// Mallory manages a file and answers an open of it honestly but says she
/// serves its first block (`served`), then serves nothing. The opener,
/// which asked for the block with its open, waits for the answers that
/// never come, and its read goes to the origin at its timeout: the right
/// bytes, one timeout, nothing refused (she broke no role, she only
/// delayed a read, as any manager that drops a `Read` can).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_that_says_served_and_serves_nothing_costs_a_timeout() {
    let (c, mut mallory, names) =
        attacked_cluster("q", AlgorithmKind::Greedy, Duration::from_millis(200)).await;
    let path = mallorys_file(&c, &names);
    let node = c.nodes[0].clone();
    let real = node.stat_fresh(&path).await.unwrap();
    let (open, msg) = open_at_mallory(&mut mallory, &node, &path).await;
    let CommitMsg::Open { nonce, first, .. } = msg else {
        unreachable!()
    };
    assert!(first.is_some(), "the open asks for its first block");
    let answer = PathVersion {
        path: Arc::from(path.as_str()),
        version: (*real).clone(),
    };
    let opened = CommitMsg::Opened {
        nonce,
        answer: Some((FORGED, answer)),
        served: true,
    };
    mallory.send(0, &Wire::Commit(opened)).await;
    let (topen, version) = open.await.unwrap();
    assert_eq!((topen, &version), (Some(FORGED), &real));
    let timeouts = node.status().await.unwrap().timeouts;
    let path: Arc<str> = path.as_str().into();
    let (data, level) = node.read_block(&path, &version, 0).await.unwrap();
    let len = data.len();
    assert!(data[..] == std::fs::read(c.origin_dir.join(&*path)).unwrap()[..len]);
    assert_eq!(level, Level::Origin);
    assert_eq!(node.status().await.unwrap().timeouts, timeouts + 1);
    assert_eq!(violations_by(&node, "mallory"), 0);
}

/// A file of `names` that Mallory manages.
fn mallorys_file(c: &TestCluster, names: &[String]) -> String {
    names
        .iter()
        .find(|n| manager(c, n) == MALLORY)
        .expect("Mallory manages no file")
        .clone()
}

/// Node 0 (`node`) opens `path` in `exclusive` mode: the open in flight,
/// and its `Open` as Mallory, the file's manager, received it.
async fn open_at_mallory(
    mallory: &mut Mallory,
    node: &Arc<NodeHandle>,
    path: &str,
) -> (
    tokio::task::JoinHandle<(Option<Tcommit>, Arc<FileVersion>)>,
    CommitMsg<PathVersion>,
) {
    let open = tokio::spawn({
        let (node, path) = (node.clone(), path.to_string());
        async move { node.open_exclusive(&path).await.unwrap() }
    });
    let (_, msg) = mallory
        .next_commit_msg(|from, msg| from == 0 && matches!(msg, CommitMsg::Open { .. }))
        .await;
    (open, msg)
}
