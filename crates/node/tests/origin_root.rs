//! A directory origin is its path, not the directory found there at
//! start: one removed and made again, or swapped for another with `mv`,
//! is read at once; and what is there but is no file (a UNIX socket) is
//! not found, not an origin failure.

use crate::gateway::{gateway, request};
use coopcache_node::gateway::GatewayOptions;
use coopcache_node::origin::{Origin, OriginError};
use std::path::Path;

fn open(dir: &Path) -> Origin {
    Origin::open(dir.to_str().expect("utf-8 temp path")).expect("open origin")
}

async fn read_all(origin: &Origin, path: &str) -> Result<Vec<u8>, OriginError> {
    let v = origin.stat(path).await?;
    Ok(origin.read(path, &v, 0..v.size).await?.to_vec())
}

#[tokio::test]
async fn a_recreated_or_swapped_origin_directory_is_seen_at_once() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("origin");
    std::fs::create_dir(&root).expect("mkdir");
    std::fs::write(root.join("a.txt"), b"first").expect("write");
    let origin = open(&root);
    assert_eq!(read_all(&origin, "a.txt").await.expect("read"), b"first");

    // Removed and made again, with other contents.
    std::fs::remove_dir_all(&root).expect("rm -r");
    std::fs::create_dir(&root).expect("mkdir again");
    std::fs::write(root.join("a.txt"), b"second").expect("write");
    std::fs::write(root.join("new.txt"), b"new").expect("write");
    assert_eq!(
        read_all(&origin, "a.txt")
            .await
            .expect("a.txt in the new directory"),
        b"second"
    );
    assert_eq!(
        read_all(&origin, "new.txt")
            .await
            .expect("a file only the new one has"),
        b"new"
    );
    let names: Vec<String> = origin
        .list("")
        .await
        .expect("list the root")
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["a.txt", "new.txt"]);

    // Swapped with `mv`, as a deploy switches releases.
    let next = tmp.path().join("next");
    std::fs::create_dir(&next).expect("mkdir");
    std::fs::write(next.join("a.txt"), b"third").expect("write");
    std::fs::rename(&root, tmp.path().join("old")).expect("mv origin old");
    std::fs::rename(&next, &root).expect("mv next origin");
    assert_eq!(
        read_all(&origin, "a.txt")
            .await
            .expect("a.txt after the swap"),
        b"third"
    );
    assert!(
        origin
            .stat("new.txt")
            .await
            .expect_err("new.txt is in the old tree only")
            .is_not_found()
    );

    // Gone altogether: not found, not a failure of the origin.
    std::fs::remove_dir_all(&root).expect("rm -r");
    assert!(
        origin
            .stat("a.txt")
            .await
            .expect_err("no origin directory")
            .is_not_found()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_in_the_origin_is_not_found() {
    let g = gateway(&[("a.bin", 10)], GatewayOptions::default()).await;
    let _socket =
        std::os::unix::net::UnixListener::bind(g.c.origin_dir.join("sock")).expect("bind");
    let stat = open(&g.c.origin_dir).stat("sock").await;
    assert!(
        matches!(
            &stat,
            Err(OriginError::NotAFile {
                kind: "a socket",
                ..
            })
        ),
        "{stat:?}"
    );
    for method in ["GET", "HEAD"] {
        let r = request(g.addr, method, "/v1/files/sock", &[]).await;
        assert_eq!(
            r.status,
            404,
            "{method}: {}",
            String::from_utf8_lossy(&r.body)
        );
    }
}
