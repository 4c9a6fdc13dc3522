//! Joining with nothing but a token (issue 15, item 4): `coopcache cluster
//! token` on the CA node's key directory, `coopcache node --join ADDR
//! --token T` on an empty data directory. Each test fails if the check it
//! names is removed from the code (tried by hand: see the commit message).

use crate::cluster;
use crate::common;

use cluster::{Node, NodeSpec, PATIENCE, fetch, free_addr, members, wait_until};
use common::{coopcache_args, stderr, stdout};
use coopcache_node::join::JoinToken;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A CA node `a` serving `origin`, with its key directory.
struct Ca {
    _tmp: tempfile::TempDir,
    keys: PathBuf,
    origin: PathBuf,
    node: Node,
}

fn ca_node() -> Ca {
    ca_node_with(&[])
}

fn ca_node_with(extra: &[&str]) -> Ca {
    let tmp = tempfile::tempdir().unwrap();
    let (keys, origin) = (tmp.path().join("keys-a"), tmp.path().join("origin"));
    std::fs::create_dir_all(&origin).unwrap();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(origin.join("f.bin"), &data).unwrap();
    cluster::cluster_init(&keys, &["a"]);
    let node = Node::start(&NodeSpec {
        name: "a",
        keys: &keys,
        origin: &origin,
        join: None,
        extra,
    });
    Ca {
        keys,
        origin,
        node,
        _tmp: tmp,
    }
}

impl Ca {
    fn token(&self, extra: &[&str]) -> String {
        let mut args = vec!["cluster", "token", "--dir", self.keys.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = coopcache_args(&args);
        assert!(out.status.success(), "cluster token: {}", stderr(&out));
        assert!(stderr(&out).contains("valid until"), "{}", stderr(&out));
        stdout(&out).trim().to_owned()
    }

    /// An empty data directory for a joiner (it holds the joiner's log).
    fn joiner_dir(&self, name: &str) -> PathBuf {
        let dir = self.keys.parent().unwrap().join(format!("keys-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn spec<'a>(&'a self, name: &'a str, dir: &'a Path, extra: &'a [&'a str]) -> NodeSpec<'a> {
        NodeSpec {
            name,
            keys: dir,
            origin: &self.origin,
            join: Some(self.node.listen),
            extra,
        }
    }
}

/// Starts a joiner that must fail; its log.
fn fails_to_join(spec: &NodeSpec) -> String {
    let mut node = Node::spawn(spec);
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Ok(Some(code)) = node.child.try_wait() {
            assert!(!code.success(), "{} exited 0", spec.name);
            return node.log_text();
        }
        assert!(
            Instant::now() < deadline,
            "{} still running:\n{}",
            spec.name,
            node.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_node_joins_with_a_token_serves_reads_and_restarts_without_it() {
    let ca = ca_node();
    let token = ca.token(&[]);
    let dir = ca.joiner_dir("b");
    let extra = ["--token", token.as_str()];
    let mut b = Node::start(&ca.spec("b", &dir, &extra));
    wait_until("a and b see each other", || {
        members(&ca.node.status()) == 2 && members(&b.status()) == 2
    });
    let want = std::fs::read(ca.origin.join("f.bin")).unwrap();
    assert_eq!(fetch(b.http, "f.bin").unwrap(), want);
    assert_eq!(fetch(ca.node.http, "f.bin").unwrap(), want);
    // The keys are b's own: a private key made there, 0600; the CA's
    // certificate is the cluster's; the CA key never left a.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir.join("b.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(
        std::fs::read(dir.join("ca.pem")).unwrap(),
        std::fs::read(ca.keys.join("ca.pem")).unwrap()
    );
    assert!(!dir.join("ca.key").exists());
    assert!(b.log_text().contains("joined"), "{}", b.log_text());
    // A restart needs no token.
    b.kill9();
    let b = Node::start(&ca.spec("b", &dir, &[]));
    wait_until("b is back", || members(&b.status()) == 2);
}

#[test]
fn a_used_token_is_refused_the_second_time() {
    let ca = ca_node();
    let token = ca.token(&[]);
    let extra = ["--token", token.as_str()];
    let b_dir = ca.joiner_dir("b");
    let _b = Node::start(&ca.spec("b", &b_dir, &extra));
    let c_dir = ca.joiner_dir("c");
    let log = fails_to_join(&ca.spec("c", &c_dir, &extra));
    assert!(
        log.contains("already used (by node b)") && log.contains("single-use"),
        "{log}"
    );
    assert!(!c_dir.join("c.pem").exists() && !c_dir.join("ca.pem").exists());
}

#[test]
fn an_expired_token_is_refused() {
    let ca = ca_node();
    let token = ca.token(&["--ttl", "1s"]);
    std::thread::sleep(Duration::from_millis(2100));
    let extra = ["--token", token.as_str()];
    let dir = ca.joiner_dir("b");
    let log = fails_to_join(&ca.spec("b", &dir, &extra));
    assert!(log.contains("the join token expired at"), "{log}");
    assert!(log.contains("cluster token"), "says what to do: {log}");
}

/// A token pinning another CA (as a man in the middle would present):
/// the joiner hangs up before sending the secret, so the genuine token
/// still works afterwards.
#[test]
fn a_token_for_another_ca_is_refused_by_the_joiner_before_the_secret_is_sent() {
    let ca = ca_node();
    let token = ca.token(&[]);
    let mut forged = JoinToken::decode(&token).unwrap();
    forged.fingerprint[0] ^= 1;
    let forged = forged.encode();
    let dir = ca.joiner_dir("b");
    let log = fails_to_join(&ca.spec("b", &dir, &["--token", &forged]));
    assert!(
        log.contains("is not of the token's cluster") && log.contains("secret was not sent"),
        "{log}"
    );
    assert!(!dir.join("b.pem").exists());
    let b = Node::start(&ca.spec("b", &dir, &["--token", &token]));
    wait_until("b joined with the genuine token", || {
        members(&b.status()) == 2
    });
}

#[test]
fn an_unreachable_ca_node_is_named() {
    let ca = ca_node();
    let token = ca.token(&[]);
    let dir = ca.joiner_dir("b");
    let nobody = free_addr().to_string();
    let extra = ["--token", token.as_str()];
    let mut spec = ca.spec("b", &dir, &extra);
    spec.join = None;
    let extra = ["--token", token.as_str(), "--join", nobody.as_str()];
    spec.extra = &extra;
    let log = fails_to_join(&spec);
    assert!(
        log.contains(&format!("cannot reach the CA node at {nobody}")),
        "{log}"
    );
}

/// Two joiners race with one token: exactly one gets a certificate.
#[test]
fn concurrent_joins_with_one_token_have_exactly_one_winner() {
    let ca = ca_node();
    let token = ca.token(&[]);
    let extra = ["--token", token.as_str()];
    let (c_dir, d_dir) = (ca.joiner_dir("c"), ca.joiner_dir("d"));
    let mut nodes = [
        Node::spawn(&ca.spec("c", &c_dir, &extra)),
        Node::spawn(&ca.spec("d", &d_dir, &extra)),
    ];
    let deadline = Instant::now() + PATIENCE;
    let mut outcome = [None, None];
    while outcome.iter().any(Option::is_none) {
        assert!(Instant::now() < deadline, "joiners undecided");
        for (node, result) in nodes.iter_mut().zip(&mut outcome) {
            if result.is_some() {
                continue;
            }
            if let Ok(Some(_)) = node.child.try_wait() {
                *result = Some(Err(node.log_text()));
            } else if node.log_text().contains("joined:") {
                *result = Some(Ok(()));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let wins = outcome.iter().filter(|r| matches!(r, Some(Ok(())))).count();
    assert_eq!(wins, 1, "{outcome:?}");
    let loser = outcome.iter().find_map(|r| r.clone()?.err()).unwrap();
    assert!(loser.contains("already used"), "{loser}");
}

/// With `--discover` and a token naming no address, the joiner finds the
/// CA node among its cluster's announcers (the token's fingerprint gives
/// the cluster tag) and joins with no --join.
#[test]
fn a_joiner_finds_the_ca_node_by_discovery() {
    // A group port of this process's own, so parallel runs do not meet.
    let group = format!("239.255.70.99:{}", 20000 + std::process::id() % 20000);
    let discover = ["--discover", "--discover-group", group.as_str()];
    let ca = ca_node_with(&discover);
    let token = ca.token(&[]);
    let dir = ca.joiner_dir("b");
    let extra = [
        "--token",
        token.as_str(),
        "--discover",
        "--discover-group",
        group.as_str(),
    ];
    let mut spec = ca.spec("b", &dir, &extra);
    spec.join = None;
    let b = Node::start(&spec);
    wait_until("b joined by discovery", || members(&b.status()) == 2);
    assert!(
        b.log_text()
            .contains("discovered a member of the token's cluster")
    );
}

/// A member without the CA key answers that it has none, naming what to
/// do; a joiner given it and the CA node tries the next and joins.
#[test]
fn a_member_without_the_ca_key_sends_the_joiner_on() {
    let ca = ca_node();
    // Member m holds its own pair and ca.pem, not ca.key.
    let m_dir = ca.joiner_dir("m");
    let out = coopcache_args(&["cluster", "issue", "m", "--dir", ca.keys.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    for f in ["ca.pem", "m.pem", "m.key"] {
        std::fs::copy(ca.keys.join(f), m_dir.join(f)).unwrap();
    }
    let m = Node::start(&ca.spec("m", &m_dir, &[]));
    let token = ca.token(&[]);
    let only_m = m.listen.to_string();
    let dir = ca.joiner_dir("b");
    let mut spec = ca.spec("b", &dir, &[]);
    spec.join = None;
    let extra = ["--token", token.as_str(), "--join", only_m.as_str()];
    spec.extra = &extra;
    let log = fails_to_join(&spec);
    assert!(log.contains("does not hold the cluster CA key"), "{log}");
    let both = format!("{},{}", m.listen, ca.node.listen);
    let extra = ["--token", token.as_str(), "--join", both.as_str()];
    spec.extra = &extra;
    let b = Node::start(&spec);
    wait_until("b joined through a", || members(&b.status()) == 3);
}
