//! Locks across the cluster's mounts, tried with the programs users lock
//! with (`flock(1)`, Python's `fcntl`): a lock held through one node's
//! mount is refused, waited for and tested through another's, a waiter is
//! granted at the holder's close, an interrupted wait ends, and a dead
//! node's locks go with it.

use crate::mounts::*;
use std::path::Path;
use std::process::{Child, Command};
use std::thread;
use std::time::{Duration, Instant};

/// Starts `script` under `sh` in the background, in a process group of
/// its own.
fn background(script: &str) -> Child {
    use std::os::unix::process::CommandExt;
    Command::new("sh")
        .args(["-c", script])
        .process_group(0)
        .spawn()
        .unwrap()
}

/// Waits until `file` exists (a holder says it holds).
fn wait_for(file: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !file.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            file.display()
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// `sh -c script`'s exit code.
fn code(script: &str) -> i32 {
    Command::new("sh")
        .args(["-c", script])
        .status()
        .unwrap()
        .code()
        .unwrap_or(-1)
}

/// A process on node A holding an exclusive `fcntl` lock of bytes 0..=99
/// of `file` until `stop` exists, after writing `held`.
fn python_holder(file: &str, held: &Path, stop: &Path) -> Child {
    let script = format!(
        "import fcntl, os, time
fd = os.open('{file}', os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 0)
open('{held}', 'w').close()
while not os.path.exists('{stop}'):
    time.sleep(0.02)",
        held = held.display(),
        stop = stop.display()
    );
    Command::new("python3")
        .args(["-c", &script])
        .spawn()
        .unwrap()
}

#[test]
fn a_lock_held_through_one_nodes_mount_holds_on_the_others() {
    let Some(work) = Work::new(&["origin", "a", "b"]) else {
        return;
    };
    if !have("flock") || !have("python3") {
        return;
    }
    let origin = work.join("origin");
    std::fs::write(origin.join("f"), b"locked file\n").unwrap();
    let (a_dir, b_dir) = (work.join("a"), work.join("b"));
    let a = Mount::start_named(work.path(), &origin, &a_dir, "a", None);
    let b = Mount::start_named(work.path(), &origin, &b_dir, "b", Some(&a));
    wait_members(&a, 2);
    wait_members(&b, 2);
    let (fa, fb) = (a_dir.join("f"), b_dir.join("f"));
    let (fa, fb) = (fa.display(), fb.display());

    // flock(1): held on A for 2 s; refused on B at once, waited for and
    // granted at A's close.
    let held = work.join("flock-held");
    let mut holder = background(&format!(
        "exec flock {fa} -c 'touch {}; sleep 2'",
        held.display()
    ));
    wait_for(&held);
    assert_eq!(
        code(&format!("flock -n {fb} -c true")),
        1,
        "B took A's flock"
    );
    let t = Instant::now();
    assert_eq!(
        code(&format!("flock -w 20 {fb} -c true")),
        0,
        "B never got it"
    );
    assert!(holder.wait().unwrap().success());
    assert!(t.elapsed() > Duration::from_millis(500), "B did not wait");

    // An interrupted wait ends: flock -w's alarm, while A holds for 30 s.
    let held = work.join("flock-held-2");
    let mut holder = background(&format!(
        "exec flock {fa} -c 'touch {}; sleep 30'",
        held.display()
    ));
    wait_for(&held);
    let t = Instant::now();
    assert_eq!(code(&format!("flock -w 1 {fb} -c true")), 1);
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    // A killed holder's close releases its lock (flock's command holds the
    // descriptor too: the whole group is killed).
    assert_eq!(code(&format!("kill -KILL -{}", holder.id())), 0);
    holder.wait().unwrap();
    assert_eq!(code(&format!("flock -w 20 {fb} -c true")), 0);

    // fcntl record locks: A holds bytes 0..=99; B is refused them, F_GETLK
    // on B names the lock, and B may lock bytes past them.
    let (held, stop) = (work.join("lockf-held"), work.join("lockf-stop"));
    let mut holder = python_holder(&fa.to_string(), &held, &stop);
    wait_for(&held);
    let out = Command::new("python3")
        .args([
            "-c",
            &format!(
                "import errno, fcntl, os, struct
fd = os.open('{fb}', os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 50)
    print('granted')
except OSError as e:
    print(errno.errorcode[e.errno])
fmt = 'hhqqi'
got = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack(fmt, fcntl.F_WRLCK, 0, 0, 10, 0))
ltype, _, start, length, _ = struct.unpack(fmt, got)
print(ltype == fcntl.F_WRLCK, start, length)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 100)
print('past granted')"
            ),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text, "EAGAIN\nTrue 0 100\npast granted\n");
    std::fs::write(&stop, b"").unwrap();
    assert!(holder.wait().unwrap().success());
    // Its exit closed the file: the range is free.
    let free = format!(
        "python3 -c \"import fcntl, os; fcntl.lockf(os.open('{fb}', os.O_RDWR), fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 0)\""
    );
    assert_eq!(code(&free), 0);
    assert!(b.terminate().success());
    assert!(a.terminate().success());
}

#[test]
fn a_dead_nodes_locks_go_with_it() {
    let Some(work) = Work::new(&["origin", "a", "b"]) else {
        return;
    };
    if !have("python3") {
        return;
    }
    let origin = work.join("origin");
    std::fs::write(origin.join("f"), b"locked file\n").unwrap();
    let (a_dir, b_dir) = (work.join("a"), work.join("b"));
    let mut a = Mount::start_named(work.path(), &origin, &a_dir, "a", None);
    let b = Mount::start_named(work.path(), &origin, &b_dir, "b", Some(&a));
    wait_members(&a, 2);
    wait_members(&b, 2);
    let (held, stop) = (work.join("held"), work.join("stop"));
    let fa = a_dir.join("f").display().to_string();
    let mut holder = python_holder(&fa, &held, &stop);
    wait_for(&held);
    let fb = b_dir.join("f").display().to_string();
    let try_lock = format!(
        "python3 -c \"import fcntl, os; fcntl.lockf(os.open('{fb}', os.O_RDWR), fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 0)\" 2>/dev/null"
    );
    assert_ne!(code(&try_lock), 0, "B took A's lock");
    // Node A dies with the lock held (its holder is left hanging on a dead
    // mount): B gets the lock once membership says A is gone.
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while code(&try_lock) != 0 {
        assert!(Instant::now() < deadline, "A's lock outlived A");
        thread::sleep(Duration::from_millis(200));
    }
    let _ = holder.kill();
    let _ = holder.wait();
    drop(a);
    assert!(b.terminate().success());
}

/// sqlite in its default (rollback journal) mode with writers on two
/// nodes at once: its locks go through the file's manager and each lock
/// reads what the last holder committed, so no row is lost and the
/// database stays sound.
#[test]
fn sqlite_writers_on_two_nodes_lose_no_row() {
    for env in [Vec::new(), exclusive_env()] {
        sqlite_writers_on_two_nodes(&env);
    }
}

fn sqlite_writers_on_two_nodes(env: &[(String, String)]) {
    let Some(work) = Work::new(&["origin", "a", "b"]) else {
        return;
    };
    if !have("sqlite3") {
        return;
    }
    let origin = work.join("origin");
    let (a_dir, b_dir) = (work.join("a"), work.join("b"));
    let a = Mount::start_env(work.path(), &origin, &a_dir, "a", None, env);
    let b = Mount::start_env(work.path(), &origin, &b_dir, "b", Some(&a), env);
    wait_members(&a, 2);
    wait_members(&b, 2);
    let (da, db) = (a_dir.display(), b_dir.display());
    sh(&format!(
        "sqlite3 {da}/t.db 'create table t(node text, i int)'"
    ));
    let inserts = |node: &str| {
        let mut script = String::from(".timeout 60000\n");
        for i in 0..40 {
            script += &format!("insert into t values('{node}', {i});\n");
        }
        script
    };
    let writers: Vec<_> = [(&a_dir, "a"), (&b_dir, "b")]
        .into_iter()
        .map(|(dir, node)| {
            let script = work.join(&format!("{node}.sql"));
            std::fs::write(&script, inserts(node)).unwrap();
            background(&format!(
                "sqlite3 {}/t.db < {}",
                dir.display(),
                script.display()
            ))
        })
        .collect();
    for mut w in writers {
        assert!(w.wait().unwrap().success());
    }
    let out = Command::new("sqlite3")
        .arg(format!("{db}/t.db"))
        .arg("select node, count(*) from t group by node; pragma integrity_check;")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "a|40\nb|40\nok\n",
        "{env:?}"
    );
    assert!(b.terminate().success());
    assert!(a.terminate().success());
}

/// A third node joins while a process on A holds locks on 16 files: the
/// files whose manager it becomes are reclaimed from it, so every lock
/// still keeps B out, and B gets each once A lets go.
#[test]
fn locks_survive_a_member_joining() {
    let Some(work) = Work::new(&["origin", "a", "b", "c"]) else {
        return;
    };
    if !have("python3") {
        return;
    }
    let origin = work.join("origin");
    for i in 0..16 {
        std::fs::write(origin.join(format!("f{i}")), b"x").unwrap();
    }
    let (a_dir, b_dir, c_dir) = (work.join("a"), work.join("b"), work.join("c"));
    let a = Mount::start_named(work.path(), &origin, &a_dir, "a", None);
    let b = Mount::start_named(work.path(), &origin, &b_dir, "b", Some(&a));
    wait_members(&a, 2);
    wait_members(&b, 2);
    let (held, stop) = (work.join("held"), work.join("stop"));
    let holder = format!(
        "import fcntl, os, time
fds = [os.open('{a}/f%d' % i, os.O_RDWR) for i in range(16)]
for fd in fds:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
open('{held}', 'w').close()
while not os.path.exists('{stop}'):
    time.sleep(0.02)",
        a = a_dir.display(),
        held = held.display(),
        stop = stop.display()
    );
    let mut holder = Command::new("python3")
        .args(["-c", &holder])
        .spawn()
        .unwrap();
    wait_for(&held);
    let c = Mount::start_named(work.path(), &origin, &c_dir, "c", Some(&a));
    for m in [&a, &b, &c] {
        wait_members(m, 3);
    }
    // Past the new manager's grace, B tries every file.
    thread::sleep(Duration::from_secs(6));
    let tries = |dir: &Path| {
        let script = format!(
            "import fcntl, os
got = 0
for i in range(16):
    try:
        fcntl.lockf(os.open('{}/f%d' % i, os.O_RDWR), fcntl.LOCK_EX | fcntl.LOCK_NB)
        got += 1
    except BlockingIOError:
        pass
print(got)",
            dir.display()
        );
        let out = Command::new("python3")
            .args(["-c", &script])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(tries(&b_dir), "0", "B took locks A holds");
    assert_eq!(tries(&c_dir), "0", "C took locks A holds");
    std::fs::write(&stop, b"").unwrap();
    assert!(holder.wait().unwrap().success());
    assert_eq!(tries(&b_dir), "16");
    for m in [c, b, a] {
        assert!(m.terminate().success());
    }
}
