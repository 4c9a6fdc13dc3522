//! Every shell block of the guides (`docs/guide/*.md`), run as a reader
//! would run it, as the README's tour is (`readme_tour.rs`; the machinery
//! is `common/shell.rs`): taken from the guide itself, line by line, from
//! a directory standing for a checkout (its `docs` the repository's, the
//! shared traces at `../shared`), daemons in the background. What a reader
//! must put in place of a guide's placeholders is in [`SUBSTITUTIONS`],
//! the guide run elsewhere (python.md) in [`ELSEWHERE`]; each guide's test counts
//! its blocks, so a block added to a guide fails it until it is run. Where
//! a guide shows what a command prints (the plain block after it, or after
//! a paragraph beginning "prints"), every line shown must be printed
//! (times masked, `...` lines skipped), and a command commented `# prints
//! TEXT...` must print TEXT. Among the FUSE tests because
//! mount.md mounts; one at a time (`mounts::serial`) as they start
//! programs and use the default ports.

use crate::common::shared_trace;
use crate::mounts::serial;
use crate::shell::{Fence, Shell, commands, fences, sh_blocks, with_args};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// What takes the place of a guide's text in a test.
enum Put {
    Text(&'static str),
    /// `TMP/NAME`, `TMP` the test's temporary directory.
    Tmp(&'static str),
    /// The token the block's `coopcache cluster token` printed.
    Token,
    /// Nothing, where the text ends a command.
    AtEnd,
    /// `--seeds 100`, in place of any `--seeds N`, where no `--seed` is.
    Seeds,
}

/// What a reader would put in place of the guides' placeholders, and
/// the runs the tests cut short: each text's replacement, and why.
const SUBSTITUTIONS: &[(&str, Put)] = &[
    // Separate machines are loopback addresses of this one (each node's
    // gateway then on its own address: `--http 127.0.0.N:7171` added).
    ("10.0.0.", Put::Text("127.0.0.")),
    // The directory every member reads.
    ("/mnt/nfs/data", Put::Tmp("nfs")),
    // A mount's origin directory.
    ("/srv/data", Put::Tmp("srv")),
    // The mount point.
    ("/mnt/data", Put::Tmp("mnt")),
    // An empty data directory, not the machine's.
    ("/var/lib/coopcache", Put::Tmp("var-lib-coopcache")),
    // Out of the way of other runs.
    ("/tmp/cc", Put::Tmp("cc")),
    // The token the previous command printed.
    ("cct1-...", Put::Token),
    // The options the guide leaves out: their defaults do on one machine.
    (" ...", Put::AtEnd),
    // 100 seeds: the guide's 1,000 and 10,000 take about 7 s and 2 min on
    // 2 cores; the sim crate's tests run 1,000 seeds in each mode.
    ("coopcache sim faults", Put::Seeds),
];

/// Guides not run by these tests: (guide, its shell blocks, why).
const ELSEWHERE: &[(&str, usize, &str)] = &[(
    "python.md",
    1,
    "scripts/test-python.sh runs it (CI, after `cargo test`): it installs \
     from PyPI and builds the wheel",
)];

/// A guide's blocks and a shell to run them in.
struct Guide {
    fences: Vec<Fence>,
    sh: Shell,
    tmp: tempfile::TempDir,
    token: Option<String>,
}

impl Guide {
    /// `docs/guide/NAME`, which must have `blocks` shell blocks; `None`
    /// (the test skips) without the shared traces, where that is allowed.
    fn open(name: &str, blocks: usize) -> Option<Guide> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let text = std::fs::read_to_string(root.join("docs/guide").join(name)).unwrap();
        let fences = fences(&text);
        let found = fences.iter().filter(|f| f.info == "sh").count();
        assert_eq!(found, blocks, "{name}'s shell blocks (run each here)");
        let traces = shared_trace("w106.trace.xz")?;
        let tmp = tempfile::tempdir().unwrap();
        let clone = tmp.path().join("clone");
        std::fs::create_dir(&clone).unwrap();
        std::os::unix::fs::symlink(root.join("docs"), clone.join("docs")).unwrap();
        let shared = traces.parent().unwrap().parent().unwrap();
        std::os::unix::fs::symlink(shared, tmp.path().join("shared")).unwrap();
        Some(Guide {
            fences,
            sh: Shell::new(&tmp.path().join("home")),
            tmp,
            token: None,
        })
    }

    /// The directory the blocks run in, standing for a checkout.
    fn clone(&self) -> PathBuf {
        self.tmp.path().join("clone")
    }

    fn tmp(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// Shell block `i`, and what the guide shows it prints.
    fn block(&self, i: usize) -> (String, Option<String>) {
        let at = self
            .fences
            .iter()
            .enumerate()
            .filter(|(_, f)| f.info == "sh")
            .nth(i)
            .expect("the block")
            .0;
        let shown = self.fences.get(at + 1).filter(|f| {
            let before = f.before.trim_start();
            f.info.is_empty() && (before.is_empty() || before.starts_with("prints"))
        });
        (self.fences[at].body.clone(), shown.map(|f| f.body.clone()))
    }

    /// `line` with [`SUBSTITUTIONS`] made.
    fn line(&self, line: &str) -> String {
        let mut line = line.to_string();
        for (text, put) in SUBSTITUTIONS {
            line = match put {
                Put::Text(to) => line.replace(text, to),
                Put::Tmp(name) => line.replace(text, self.tmp(name).to_str().unwrap()),
                Put::Token => match &self.token {
                    Some(token) => line.replace(text, token),
                    None => line,
                },
                Put::AtEnd => match line.trim_end().strip_suffix(text) {
                    Some(head) => head.to_string(),
                    None => line,
                },
                Put::Seeds if line.starts_with(text) && !line.contains(" --seed ") => {
                    match line.find("--seeds ") {
                        Some(at) => {
                            let rest = &line[at + "--seeds ".len()..];
                            let end = rest.find(' ').unwrap_or(rest.len());
                            format!("{}--seeds 100{}", &line[..at], &rest[end..])
                        }
                        None => with_args(&line, "--seeds 100"),
                    }
                }
                Put::Seeds => line,
            };
        }
        line
    }

    /// Runs shell block `i` line by line from the checkout, daemons
    /// started in the background; checks every line the guide shows it
    /// printing; what it printed.
    fn run(&mut self, i: usize) -> String {
        let (block, shown) = self.block(i);
        let cwd = self.clone();
        let mut out = String::new();
        for written in commands(&block) {
            let line = self.line(&written);
            let program = line
                .split(' ')
                .skip_while(|w| w.contains('=') && !w.starts_with('-'))
                .take(2)
                .collect::<Vec<_>>()
                .join(" ");
            if program == "coopcache node" {
                self.sh.start_node(&line, &cwd);
            } else if program == "coopcache mount" {
                let dir = line.split(' ').nth(2).expect("the mount point");
                self.sh.start(&line, &cwd, &format!("mountpoint -q {dir}"));
            } else {
                let printed = self.sh.run(&line, &cwd);
                // `# prints TEXT...`: what the command prints begins so.
                if let Some((_, said)) = written.split_once("# prints ") {
                    let want = said.trim_end().trim_end_matches("...");
                    assert!(printed.contains(want), "{written}: {printed}");
                }
                if line.contains("cluster token") {
                    self.token = Some(printed.trim().to_string());
                }
                out.push_str(&printed);
            }
        }
        if let Some(shown) = shown {
            prints(&shown, &out, &block);
        }
        out
    }
}

/// Fails unless every line of `shown` (what the guide shows `block`
/// printing) is a line of `out`, compared word by word. A table with
/// times (its heading ends `time (s)  Mreq/s`) is compared without its
/// last two columns; a `...` line stands for lines left out.
fn prints(shown: &str, out: &str, block: &str) {
    let timed = shown.lines().next().is_some_and(|l| l.ends_with("Mreq/s"));
    let words = |l: &str| {
        let mut w: Vec<&str> = l.split_whitespace().collect();
        if timed {
            w.truncate(w.len().saturating_sub(2));
        }
        w.join(" ")
    };
    let printed: Vec<String> = out.lines().map(words).collect();
    let mut checked = 0;
    for line in shown
        .lines()
        .filter(|l| !l.trim().is_empty() && l.trim() != "...")
    {
        assert!(
            printed.contains(&words(line)),
            "the guide shows `{line}`, not printed by\n{block}it printed:\n{out}"
        );
        checked += 1;
    }
    assert!(checked > 0, "nothing shown for\n{block}");
}

/// Every guide is run by one of the tests below.
#[test]
fn guide_every_file_has_its_test() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut names: Vec<String> = std::fs::read_dir(root.join("docs/guide"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let tested = [
        "cluster.md",
        "mount.md",
        "operations.md",
        "python.md",
        "s3.md",
        "simulator.md",
        "traces.md",
    ];
    assert_eq!(names, tested, "a new guide needs its test here");
    // The blocks run elsewhere are run there.
    let script = std::fs::read_to_string(root.join("scripts/test-python.sh")).unwrap();
    for (guide, blocks, why) in ELSEWHERE {
        let text = std::fs::read_to_string(root.join("docs/guide").join(guide)).unwrap();
        assert_eq!(sh_blocks(&text).len(), *blocks, "{guide}'s blocks: {why}");
        assert!(
            script.contains(&format!("docs/guide/{guide}")),
            "{guide}: {why}"
        );
    }
}

#[test]
fn guide_cluster_runs_as_written() {
    let _serial = serial();
    let Some(mut g) = Guide::open("cluster.md", 6) else {
        return;
    };
    let cwd = g.clone();

    // One node over the current directory, with a file in it.
    let (block, _) = g.block(0);
    g.sh.one_node(&block, &cwd);

    // Nodes a and b of three certified, over one directory.
    let (block, _) = g.block(1);
    g.sh.two_nodes(&g.line(&block), &cwd, &g.tmp("nfs"));

    // d joins with a token and an empty data directory.
    g.run(2);
    let a = "coopcache status --node 127.0.0.1:7171";
    g.sh.wait_for(a, &cwd, "members (3)", 30);
    assert!(
        g.tmp("var-lib-coopcache/d.pem").exists(),
        "d got its certificate"
    );

    // d revoked (what it prints checked): a tells every member, and
    // drops it.
    g.run(3);
    g.sh.wait_for(a, &cwd, "members (2)", 30);
    g.sh.stop();

    // a and b find each other by multicast, without seeds.
    g.run(4);
    let b = "coopcache status --node 127.0.0.2:7171";
    g.sh.wait_for(b, &cwd, "members (2)", 30);
    g.sh.stop();

    // The dedup key, and a private node using it (in the data directory
    // the first block's --init made).
    g.run(5);
    let key = cwd.join("keys/unify.key");
    let mode = std::fs::metadata(&key).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "keys/unify.key (0600)");
    g.sh.wait_for("coopcache status", &cwd, "members (1)", 10);
    g.sh.stop();
}

#[test]
fn guide_mount_runs_as_written() {
    let _serial = serial();
    if !crate::mounts::can_mount() {
        return;
    }
    let Some(mut g) = Guide::open("mount.md", 4) else {
        return;
    };
    let cwd = g.clone();
    // The guide's `keys`, made as guide/cluster.md makes them.
    g.sh.run("coopcache cluster init --dir keys --nodes a,b,c", &cwd);
    let srv = g.tmp("srv");
    std::fs::create_dir(&srv).unwrap();
    std::fs::write(srv.join("f.bin"), crate::shell::sample()).unwrap();

    // A mount of /srv/data, in both consistency modes, and as the first
    // block's comment has it: `# or: coopcache node --mount /mnt/data ...`
    // (the same options).
    let (block, _) = g.block(0);
    let first = commands(&block).into_iter().find(|l| l.contains(" # or: "));
    let (mount, node) = first.as_deref().unwrap().split_once(" # or: ").unwrap();
    let options = mount.trim_end().strip_prefix("coopcache mount /mnt/data");
    let node = node.replace(" ...", options.expect("the mount's options"));
    let mnt = g.tmp("mnt");
    for i in [0, 2, 4] {
        if i == 4 {
            let ready = format!("mountpoint -q {}", mnt.display());
            g.sh.start(&g.line(&node), &cwd, &ready);
        } else {
            g.run(i);
        }
        let read = std::fs::read(mnt.join("f.bin")).unwrap();
        let want = crate::shell::sample();
        assert!(read == want, "block {i}: the origin's bytes");
        g.sh.stop();
        g.sh.wait_unmounted(&mnt);
    }

    // Two mounts of one origin.
    let (block, _) = g.block(1);
    g.sh.two_mounts(&block, g.tmp.path());

    // The consistency schemes on a trace (its output checked).
    g.run(3);
}

#[test]
fn guide_s3_runs_as_written() {
    let _serial = serial();
    let Some(venv) = crate::common::s3_clients() else {
        return;
    };
    let Some(mut g) = Guide::open("s3.md", 2) else {
        return;
    };
    let cwd = g.clone();
    // The guide's `keys`, made as guide/cluster.md makes them; its `aws`,
    // the venv's.
    g.sh.run("coopcache cluster init --dir keys --nodes a", &cwd);
    g.sh.prepend_path(&venv.join("bin"));
    std::fs::create_dir(g.tmp("srv")).unwrap();
    g.run(0);
    // Pinning, listing, unpinning and evicting what block 0 wrote.
    g.run(1);
    g.sh.stop();
}

#[test]
fn guide_operations_runs_as_written() {
    let _serial = serial();
    let Some(mut g) = Guide::open("operations.md", 1) else {
        return;
    };
    let out = g.run(0);
    assert_eq!(out.matches("violations: 0").count(), 2, "{out}");
    assert!(out.contains("seed 42: "), "the replay: {out}");
}

#[test]
fn guide_simulator_runs_as_written() {
    let _serial = serial();
    let Some(mut g) = Guide::open("simulator.md", 8) else {
        return;
    };
    for i in 0..8 {
        let out = g.run(i);
        assert!(!out.trim().is_empty(), "block {i} printed nothing");
    }
    for png in ["attr-miss-ratio.png", "attr-disk-accesses.png"] {
        assert!(g.clone().join("figures").join(png).exists(), "{png}");
    }
}

#[test]
fn guide_traces_runs_as_written() {
    let _serial = serial();
    let Some(mut g) = Guide::open("traces.md", 2) else {
        return;
    };
    g.run(0);
    // "the replay of the converted file gives the same misses as the
    // original (1,069,622 and 435,503)"
    let out = g.run(1);
    for misses in ["1069622", "435503"] {
        assert!(out.contains(misses), "{out}");
    }
}
