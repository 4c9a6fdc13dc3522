//! The dashboard at `/` as an operator sees it: three real `coopcache node`
//! processes on 127.0.0.1, and Debian's Chromium, headless, holding the
//! first node's page open while files are read through the gateways.
//!
//! Chromium is driven over the DevTools protocol on a pipe
//! (`--remote-debugging-pipe`: JSON messages ending in a NUL byte on file
//! descriptors 3 and 4, given to it through two FIFOs). `--dump-dom` is not
//! enough: each dump loads the page afresh, and the page's rates are
//! differences between its own polls, so reads done between two dumps
//! never show; one page kept open over real time is what an operator has.
//!
//! Without `/usr/bin/chromium` the test fails saying how to install it,
//! unless `COOPCACHE_ALLOW_SKIP=1` asks for a skip (printed). Set
//! `COOPCACHE_DASHBOARD_PNG=docs/figures/dashboard.png` (relative to this
//! crate's directory, or absolute) to keep its screenshot; otherwise it
//! stays in the test's temporary directory.

use crate::cluster;

use cluster::*;
use serde_json::{Value, json};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";

/// Chromium as this machine needs it: as root, with no GPU, and without
/// the background connections a closed network refuses. Timers are not
/// throttled, so the page polls once a second although nobody looks at it.
const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
    "--window-size=1280,900",
    "--remote-debugging-pipe",
];

// ---- the cluster ---------------------------------------------------------

/// Nodes a, b, c with keys from `coopcache cluster init` in `dir/keys`,
/// reading `dir/origin`, once each sees all three.
fn start_abc(dir: &Path) -> Vec<Node> {
    let keys = dir.join("keys");
    cluster_init(&keys, &["a", "b", "c"]);
    let extra = ["--max-pinned", "16MiB"];
    start_cluster(&["a", "b", "c"], &keys, &dir.join("origin"), &extra)
}

// ---- Chromium ------------------------------------------------------------

/// Headless Chromium on the DevTools protocol, killed and reaped on drop.
struct Browser {
    child: Child,
    to: File,
    from: mpsc::Receiver<Value>,
    next_id: u64,
    log: PathBuf,
}

impl Browser {
    /// Starts Chromium with a fresh profile under `dir`. Its descriptors 3
    /// and 4 are FIFOs the shell opens before `exec`, in the order this
    /// side opens them, so neither open waits forever.
    fn launch(dir: &Path) -> Browser {
        let (to, from) = (dir.join("cdp-in"), dir.join("cdp-out"));
        let fifo = Command::new("mkfifo").arg(&to).arg(&from).status();
        assert!(fifo.is_ok_and(|s| s.success()), "mkfifo failed");
        let log = dir.join("chromium.log");
        let child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<"$CDP_IN" 4>"$CDP_OUT""#)
            .arg(CHROMIUM)
            .args(CHROMIUM_FLAGS)
            .arg(format!("--user-data-dir={}", dir.join("profile").display()))
            .env("CDP_IN", &to)
            .env("CDP_OUT", &from)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&log).unwrap())
            .spawn()
            .expect("start chromium");
        let to = File::options().write(true).open(&to).unwrap();
        let from = BufReader::new(File::open(&from).unwrap());
        // A thread reads, so a Chromium that stops answering fails the test
        // after PATIENCE instead of hanging it.
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for message in from.split(0) {
                let Ok(message) = message else { return };
                let Ok(v) = serde_json::from_slice::<Value>(&message) else {
                    return;
                };
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        Browser {
            child,
            to,
            from: rx,
            next_id: 0,
            log,
        }
    }

    /// Sends `method` (to the page of `session`, if one) and returns its
    /// result, skipping the events that arrive meanwhile.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).expect("write to chromium");
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(reply) = self.from.recv_timeout(left) else {
                panic!("chromium did not answer {method}:\n{}", self.log_text());
            };
            if reply["id"] != json!(id) {
                continue;
            }
            assert!(reply.get("error").is_none(), "{method}: {reply}");
            return reply["result"].clone();
        }
    }

    /// Opens `url` in a new page and returns the page's session.
    fn open(&mut self, url: &str) -> String {
        let target = self.call(None, "Target.createTarget", json!({ "url": url }));
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target["targetId"], "flatten": true }),
        );
        attached["sessionId"].as_str().unwrap().to_string()
    }

    /// The value of the JavaScript `expression` in the page of `session`.
    fn eval(&mut self, session: &str, expression: &str) -> Value {
        let r = self.call(
            Some(session),
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true }),
        );
        assert!(r.get("exceptionDetails").is_none(), "{expression}: {r}");
        r["result"]["value"].clone()
    }

    /// The page of `session` as a PNG.
    fn screenshot(&mut self, session: &str) -> Vec<u8> {
        let r = self.call(
            Some(session),
            "Page.captureScreenshot",
            json!({ "format": "png" }),
        );
        base64_decode(r["data"].as_str().expect("screenshot data"))
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Standard base64 (the protocol's encoding of binary data).
fn base64_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes().filter(|&c| c != b'=') {
        let v = ALPHABET.iter().position(|&a| a == c).expect("base64") as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

// ---- the test ------------------------------------------------------------

/// A chart's `data-*` attribute as a number.
fn chart(browser: &mut Browser, page: &str, id: &str, attribute: &str) -> f64 {
    let v = browser.eval(
        page,
        &format!("document.getElementById('{id}').dataset.{attribute}"),
    );
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("#{id} data-{attribute}: {v}"))
}

/// Reads every file through every gateway, over and over, until `stop`.
fn read_until(stop: &AtomicBool, gateways: &[SocketAddr], files: &[String]) {
    while !stop.load(Ordering::Relaxed) {
        for addr in gateways {
            for file in files {
                let r = get(*addr, &format!("/v1/files/{file}"), None).expect("read");
                assert_eq!(r.code, 200, "{file} at {addr}: {}", r.text());
            }
        }
    }
}

/// Whether Chromium is here; fails the test if not, unless
/// `COOPCACHE_ALLOW_SKIP` asks for a skip.
fn have_chromium() -> bool {
    if Path::new(CHROMIUM).exists() {
        return true;
    }
    assert!(
        std::env::var_os("COOPCACHE_ALLOW_SKIP").is_some(),
        "the dashboard test needs Chromium at {CHROMIUM}: apt-get install chromium \
         (scripts/test-deps.sh does), or set COOPCACHE_ALLOW_SKIP=1 to skip it"
    );
    eprintln!("SKIPPED: no {CHROMIUM}");
    false
}

#[test]
fn the_dashboard_shows_the_members_and_its_charts_move_with_reads() {
    if !have_chromium() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let origin = dir.path().join("origin");
    std::fs::create_dir(&origin).unwrap();
    let files: Vec<String> = (0..8).map(|i| format!("f{i}.bin")).collect();
    for (i, f) in files.iter().enumerate() {
        std::fs::write(origin.join(f), vec![i as u8; 200_000]).unwrap();
    }
    let nodes = start_abc(dir.path());
    let a = nodes[0].http;

    for (path, kind) in [
        ("/", "text/html"),
        ("/dashboard.js", "text/javascript"),
        ("/dashboard.css", "text/css"),
    ] {
        let r = get(a, path, None).unwrap();
        assert_eq!(r.code, 200, "{path}");
        let content_type = r.header("content-type").unwrap_or_default();
        assert!(content_type.starts_with(kind), "{path}: {content_type}");
        assert_eq!(r.header("cache-control"), Some("no-cache"), "{path}");
    }

    let mut browser = Browser::launch(dir.path());
    let page = browser.open(&format!("http://{a}/"));
    wait_until("the page shows 3 members", || {
        // Optional: the page may still be loading, or still be about:blank.
        browser.eval(&page, "document.getElementById('members')?.dataset.members") == json!("3")
    });
    assert_eq!(
        browser.eval(&page, "document.title"),
        json!("coopcache dashboard")
    );
    let names = browser.eval(
        &page,
        "[...document.querySelectorAll('#members tbody td:first-child')]\
         .map(td => td.textContent).sort().join(',')",
    );
    assert_eq!(names, json!("a,b,c"));
    // Each member's release and the protocol its link speaks, as
    // `coopcache status --cluster` shows them.
    let releases = browser.eval(
        &page,
        "[...document.querySelectorAll('#members tbody tr')]\
         .map(tr => tr.dataset.release).join(',')",
    );
    let protocol = coopcache_node::frame::PROTOCOL_VERSION;
    let release = format!("{}/{protocol}", env!("CARGO_PKG_VERSION"));
    assert_eq!(releases, json!(vec![release; 3].join(",")));
    // Each member's memory, as its own pings say (a peer's once it has
    // pinged a's node): capacity as its status says.
    wait_until("the page shows every member's memory", || {
        browser.eval(
            &page,
            "document.querySelectorAll('#members tbody tr[data-capacity]').length",
        ) == json!(3)
    });
    let capacities = browser.eval(
        &page,
        "[...document.querySelectorAll('#members tbody tr')]\
         .map(tr => tr.dataset.capacity).join(',')",
    );
    let members = nodes[0].status()["members"].clone();
    let want: Vec<String> = members
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["memory"]["capacity_bytes"].as_u64().unwrap().to_string())
        .collect();
    assert_eq!(capacities, json!(want.join(",")));
    assert_ne!(want[1], "0", "a peer's capacity was heard");
    let budget = nodes[0].status()["budget_bytes"].as_u64().unwrap();
    let shown = browser.eval(
        &page,
        "document.getElementById('memory-used').dataset.budget",
    );
    assert_eq!(shown, json!(budget.to_string()));

    // Idle, the charts run along zero: nothing reads.
    wait_until("two samples on the reads chart", || {
        chart(&mut browser, &page, "reads", "points") >= 2.0
    });
    assert_eq!(chart(&mut browser, &page, "reads", "max"), 0.0);
    assert_eq!(chart(&mut browser, &page, "origin", "max"), 0.0);
    let idle_points = chart(&mut browser, &page, "reads", "points");

    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (stop, files) = (stop.clone(), files.clone());
        let gateways: Vec<SocketAddr> = nodes.iter().map(|n| n.http).collect();
        thread::spawn(move || read_until(&stop, &gateways, &files))
    };
    wait_until("the reads chart shows reads going on", || {
        reader.is_finished() || chart(&mut browser, &page, "reads", "last") > 0.0
    });
    assert!(!reader.is_finished(), "the reads stopped early");
    assert!(chart(&mut browser, &page, "reads", "points") > idle_points);
    // The first pass read every block from the origin through some node,
    // a's share at least its own first read of each file.
    assert!(chart(&mut browser, &page, "origin", "max") > 0.0);
    let used = browser.eval(&page, "document.getElementById('memory-used').dataset.used");
    assert_ne!(used, json!("0"), "a caches blocks after reads");
    wait_until("the peers' cached memory shows their reads", || {
        let peers_cached = browser.eval(
            &page,
            "[...document.querySelectorAll('#members tbody tr')].slice(1)\
             .every(tr => Number(tr.dataset.cached) > 0)",
        );
        reader.is_finished() || peers_cached == json!(true)
    });
    assert!(!reader.is_finished(), "the reads stopped early");

    // The error counters say what the status says, highlighted when not 0.
    let status = nodes[0].status();
    for counter in [
        "integrity_failures",
        "protocol_violations",
        "peer_errors",
        "timeouts",
    ] {
        let shown = browser.eval(
            &page,
            &format!(
                "(e => e.querySelector('.value').textContent + ' ' + \
                 e.classList.contains('alarm'))(document.getElementById('{counter}'))"
            ),
        );
        let n = status[counter].as_u64().unwrap();
        assert_eq!(shown, json!(format!("{n} {}", n > 0)), "{counter}");
    }

    // Pin and unpin a file from the page, as an operator would: the node
    // holds what the page says, and the table lists it.
    let op = |browser: &mut Browser, button: &str| {
        let click = format!("el('op-path').value = 'f0.bin'; el('{button}').click(); true");
        browser.eval(&page, &click);
        wait_until(&format!("{button} is done"), || {
            browser.eval(&page, "el('op-progress').dataset.done") == json!("true")
        });
        browser.eval(&page, "el('op-progress').textContent")
    };
    let said = op(&mut browser, "op-pin");
    assert!(
        said.as_str().unwrap().starts_with("pinned 1 of 1 files"),
        "{said}"
    );
    assert_eq!(nodes[0].status()["pinned_bytes"], 200_000);
    wait_until("the table lists the pin", || {
        browser.eval(&page, "el('pins').dataset.pins") == json!("1")
    });
    let said = op(&mut browser, "op-unpin");
    assert!(
        said.as_str().unwrap().starts_with("unpinned 1 files"),
        "{said}"
    );
    assert_eq!(nodes[0].status()["pinned_bytes"], 0);
    let said = op(&mut browser, "op-evict");
    assert!(
        said.as_str().unwrap().starts_with("evicted 1 of 1 files"),
        "{said}"
    );

    // A few more seconds of reads, so the picture has lines in it.
    thread::sleep(Duration::from_secs(3));
    let png = browser.screenshot(&page);
    stop.store(true, Ordering::Relaxed);
    reader.join().expect("reader");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let keep = std::env::var_os("COOPCACHE_DASHBOARD_PNG")
        .map_or_else(|| dir.path().join("dashboard.png"), PathBuf::from);
    std::fs::write(&keep, &png).unwrap();
    eprintln!("screenshot: {}", keep.display());
}
