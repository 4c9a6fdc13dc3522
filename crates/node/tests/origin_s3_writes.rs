//! Writes to an S3 origin on a real MinIO: drafts put at the commit
//! (single and multipart), concurrent drafts merged over each other's
//! commits, directories as prefixes kept by markers, renames, and what S3
//! cannot hold refused with the errors programs expect.

use crate::servers;
use servers::*;

use coopcache_node::origin::{EntryKind, FileVersion, Origin, OriginError};
use futures::StreamExt;
use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed ^ (i >> 16) as u8)
        .collect()
}

struct S3 {
    _server: Server,
    store: Box<dyn ObjectStore>,
    origin: Origin,
}

fn s3(prefix: &str) -> Option<S3> {
    let server = start_minio()?;
    let mut builder = AmazonS3Builder::new().with_bucket_name(BUCKET);
    for (key, value) in s3_options(server.addr) {
        builder = builder.with_config(key.parse().expect("config key"), value);
    }
    let store = Box::new(builder.build().expect("store"));
    let origin = open_s3(&format!("s3://{BUCKET}/{prefix}"), server.addr).expect("open");
    Some(S3 {
        _server: server,
        store,
        origin,
    })
}

async fn contents(origin: &Origin, path: &str) -> (FileVersion, Vec<u8>) {
    let v = origin.stat(path).await.expect("stat");
    let bytes = origin.read(path, &v, 0..v.size).await.expect("read");
    (v, bytes.to_vec())
}

/// Compares contents without printing megabytes when they differ.
fn assert_same(got: &[u8], want: &[u8], what: &str) {
    let first = got.iter().zip(want).position(|(a, b)| a != b);
    assert!(
        got.len() == want.len() && first.is_none(),
        "{what}: {} bytes, want {}; first difference at {first:?}",
        got.len(),
        want.len()
    );
}

async fn names(origin: &Origin, dir: &str) -> Vec<(String, EntryKind)> {
    let list = origin.list(dir).await.expect("list");
    list.into_iter().map(|e| (e.name, e.kind)).collect()
}

#[tokio::test]
async fn a_draft_is_put_at_its_commit_and_leaves_nothing_if_dropped() {
    let Some(s) = s3("w") else { return };
    assert!(s.origin.writable());
    let mut draft = s
        .origin
        .draft("new.bin", false, 0o644)
        .await
        .expect("draft");
    draft.write_at(0, &pattern(100_000, 1)).expect("write");
    assert!(
        s.origin
            .stat("new.bin")
            .await
            .expect_err("not yet")
            .is_not_found(),
        "a draft is invisible before its commit"
    );
    let version = draft.commit().await.expect("commit");
    let (now, bytes) = contents(&s.origin, "new.bin").await;
    assert_same(&bytes, &pattern(100_000, 1), "new.bin");
    assert_eq!(
        version.version, now.version,
        "the commit reports the put's version"
    );

    // A rewrite through a draft keeping the bytes changes only its range.
    let mut draft = s.origin.draft("new.bin", true, 0o644).await.expect("draft");
    draft.write_at(10, b"NEW").expect("write");
    assert_eq!(draft.read_at(8, 7).expect("read draft"), {
        let mut want = pattern(100_000, 1)[8..15].to_vec();
        want[2..5].copy_from_slice(b"NEW");
        want
    });
    draft.commit().await.expect("commit");
    let mut want = pattern(100_000, 1);
    want[10..13].copy_from_slice(b"NEW");
    assert_same(&contents(&s.origin, "new.bin").await.1, &want, "new.bin");

    let mut dropped = s
        .origin
        .draft("new.bin", false, 0o644)
        .await
        .expect("draft");
    dropped.write_at(0, b"lost").expect("write");
    drop(dropped);
    assert_same(&contents(&s.origin, "new.bin").await.1, &want, "new.bin");
    assert_eq!(
        names(&s.origin, "").await,
        [("new.bin".into(), EntryKind::File)]
    );
}

#[tokio::test]
async fn concurrent_drafts_merge_their_ranges_over_each_others_commits() {
    let Some(s) = s3("m") else { return };
    let base = pattern(50_000, 2);
    let mut seed = s.origin.draft("f", false, 0o644).await.expect("draft");
    seed.write_at(0, &base).expect("write");
    seed.commit().await.expect("commit");

    let mut one = s.origin.draft("f", true, 0o644).await.expect("one");
    let mut two = s.origin.draft("f", true, 0o644).await.expect("two");
    one.write_at(0, b"AAAA").expect("write");
    two.write_at(40_000, b"BBBB").expect("write");
    one.commit().await.expect("one commits");
    // Two copied the file before one's commit: its commit merges over it.
    two.commit().await.expect("two commits");
    let mut want = base.clone();
    want[..4].copy_from_slice(b"AAAA");
    want[40_000..40_004].copy_from_slice(b"BBBB");
    assert_same(&contents(&s.origin, "f").await.1, &want, "f");

    // Someone outside the mount puts the object between a draft's copy
    // and its commit: the commit keeps their bytes under its range.
    let mut three = s.origin.draft("f", true, 0o644).await.expect("three");
    three.write_at(100, b"CC").expect("write");
    let outside = pattern(50_000, 3);
    put(s.store.as_ref(), "m/f", &outside).await;
    three.commit().await.expect("three commits");
    let mut want = outside;
    want[100..102].copy_from_slice(b"CC");
    assert_same(&contents(&s.origin, "f").await.1, &want, "f");

    // A truncating open replaces the file whole, whatever came between.
    let mut four = s.origin.draft("f", false, 0o644).await.expect("four");
    four.write_at(0, b"short").expect("write");
    put(s.store.as_ref(), "m/f", b"someone else's").await;
    four.commit().await.expect("four commits");
    assert_eq!(contents(&s.origin, "f").await.1, b"short");
}

#[tokio::test]
async fn large_drafts_are_put_in_parts_and_merge_too() {
    let Some(s) = s3("big") else { return };
    let len = 20 << 20; // three parts of 8 MiB
    let mut draft = s
        .origin
        .draft("big.bin", false, 0o644)
        .await
        .expect("draft");
    let data = pattern(len, 4);
    let before = s.origin.counts();
    for (i, chunk) in data.chunks(1 << 20).enumerate() {
        draft.write_at((i << 20) as u64, chunk).expect("write");
    }
    let version = draft.commit().await.expect("commit");
    let put = s.origin.counts().since(&before);
    assert_eq!(
        (put.writes, put.written_bytes, put.commits),
        (3, len as u64, 1),
        "the origin saw three parts (the spool's writes are not the origin's)"
    );
    let (now, bytes) = contents(&s.origin, "big.bin").await;
    assert_same(&bytes, &data, "the multipart upload");
    assert_eq!((version.size, &version.version), (now.size, &now.version));

    let mut one = s.origin.draft("big.bin", true, 0o644).await.expect("one");
    let mut two = s.origin.draft("big.bin", true, 0o644).await.expect("two");
    one.write_at(1, b"one").expect("write");
    two.write_at(len as u64 - 3, b"two").expect("write");
    one.commit().await.expect("one");
    two.commit().await.expect("two");
    let mut want = data;
    want[1..4].copy_from_slice(b"one");
    want[len - 3..].copy_from_slice(b"two");
    assert_same(&contents(&s.origin, "big.bin").await.1, &want, "the merge");
    let parts: Vec<_> = s.store.list(None).collect::<Vec<_>>().await;
    assert_eq!(parts.len(), 1, "only the object is stored: {parts:?}");
}

#[tokio::test]
async fn directories_are_prefixes_that_last_until_rmdir() {
    let Some(s) = s3("t") else { return };
    let o = &s.origin;
    let (file, dir) = (EntryKind::File, EntryKind::Dir);
    o.mkdir("d", 0o755, None).await.expect("mkdir");
    assert_eq!(names(o, "").await, [("d".into(), dir)]);
    assert_eq!(names(o, "d").await, [], "the marker is hidden");
    assert!(
        o.entry("d/.coopcache-dir")
            .await
            .expect_err("hidden")
            .is_not_found()
    );
    let exists = o.mkdir("d", 0o755, None).await.expect_err("again");
    assert!(matches!(exists, OriginError::Exists { .. }), "{exists}");

    let mut f = o.draft("d/f", false, 0o644).await.expect("draft");
    f.write_at(0, b"x").expect("write");
    f.commit().await.expect("commit");
    let err = o.rmdir("d").await.expect_err("not empty");
    assert!(matches!(err, OriginError::NotEmpty { .. }), "{err}");
    let err = o.rmdir("d/f").await.expect_err("a file");
    assert!(matches!(err, OriginError::NotADirectory { .. }), "{err}");
    let err = o.unlink("d").await.expect_err("a directory");
    assert!(matches!(err, OriginError::IsADirectory { .. }), "{err}");
    let err = o.draft("d", false, 0o644).await.expect_err("a directory");
    assert!(matches!(err, OriginError::IsADirectory { .. }), "{err}");

    // A file moved in from outside the mount, so no marker: removing the
    // directory's last file keeps the directory, as on a disk.
    put(s.store.as_ref(), "t/e/only", b"y").await;
    o.unlink("e/only").await.expect("unlink");
    assert_eq!(o.entry("e").await.expect("still there").kind, dir);
    o.rmdir("e").await.expect("rmdir the emptied directory");
    assert!(o.entry("e").await.expect_err("gone").is_not_found());

    o.rename("d/f", "d/g", false).await.expect("rename");
    assert_eq!(names(o, "d").await, [("g".into(), file)]);
    let err = o.rename("d", "d2", false).await.expect_err("a directory");
    assert!(matches!(err, OriginError::CrossDevice { .. }), "{err}");
    let mut h = o.draft("h", false, 0o644).await.expect("draft");
    h.write_at(0, b"h").expect("write");
    h.commit().await.expect("commit");
    let err = o.rename("h", "d/g", true).await.expect_err("no replace");
    assert!(matches!(err, OriginError::Exists { .. }), "{err}");
    o.rename("h", "d/g", false).await.expect("replace");
    assert_eq!(contents(o, "d/g").await.1, b"h");
    assert!(o.entry("h").await.expect_err("moved").is_not_found());

    let err = o.symlink("g", "d/link", None).await.expect_err("no links");
    assert!(matches!(err, OriginError::Unsupported { .. }), "{err}");
    o.set_mode("d/g", 0o600).await.expect("accepted, not kept");
    let err = o.set_mode("nothing", 0o600).await.expect_err("missing");
    assert!(err.is_not_found(), "{err}");
    o.unlink("d/g").await.expect("unlink");
    o.rmdir("d").await.expect("rmdir");
    assert_eq!(names(o, "").await, []);
    let left: Vec<_> = s.store.list(None).collect::<Vec<_>>().await;
    assert!(left.is_empty(), "nothing left in the bucket: {left:?}");
}

#[tokio::test]
async fn paths_outside_the_prefix_are_refused_for_writes() {
    let Some(s) = s3("p") else { return };
    for bad in ["../x", "/etc/x", "a/../../x", ""] {
        assert!(s.origin.draft(bad, false, 0o644).await.is_err(), "{bad}");
        assert!(s.origin.mkdir(bad, 0o755, None).await.is_err(), "{bad}");
    }
    let outside = s
        .store
        .list(Some(&Path::from("x")))
        .collect::<Vec<_>>()
        .await;
    assert!(outside.is_empty());
}

/// The version a commit put is read from the writer's copy, without the
/// store, until the writer forgets it (its node has it in memory then);
/// another version of the same path is never served from it.
#[tokio::test]
async fn a_committed_version_is_read_from_the_writers_copy_until_forgotten() {
    let Some(s) = s3("c") else { return };
    let data = pattern(300_000, 7);
    let mut draft = s.origin.draft("f", false, 0o644).await.expect("draft");
    draft.write_at(0, &data).expect("write");
    let version = draft.commit().await.expect("commit");
    let stat = s.origin.stat("f").await.expect("stat");
    assert_eq!(
        stat.version, version.version,
        "a stat finds the copy's version"
    );
    let mut older = version.clone();
    older.version = "\"another\"".into();

    let S3 {
        _server,
        store: _,
        origin,
    } = s;
    drop(_server.stop()); // S3 gone: only the copy can answer
    let got = origin
        .read("f", &version, 1000..201_000)
        .await
        .expect("from the copy");
    assert_same(&got, &data[1000..201_000], "the copy");
    assert!(
        origin.read("f", &older, 0..10).await.is_err(),
        "another version"
    );
    origin.forget_copy("f", &version);
    assert!(
        origin.read("f", &version, 0..10).await.is_err(),
        "forgotten"
    );
}
