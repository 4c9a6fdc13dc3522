//! `coopcache mount` over an S3 origin (a real MinIO): files written on one
//! mount are put at close and read on another from the writer's memory,
//! directories and renames behave as programs expect, and an origin that
//! goes away during a write fails it with `EIO`, committing nothing and
//! losing nothing committed.

use crate::mounts;
use crate::servers;
use mounts::*;
use servers::{BUCKET, minio_in, s3_env, start_minio};
use std::io::Write;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Instant;

#[test]
fn an_s3_origin_mounts_writable_and_readers_fetch_from_the_writer() {
    let Some(work) = Work::new(&["a", "b"]) else {
        return;
    };
    let Some(minio) = start_minio() else { return };
    let env = s3_env(minio.addr);
    let spec = format!("s3://{BUCKET}/data");
    let origin = Path::new(&spec);
    let (da, db) = (work.join("a"), work.join("b"));
    let a = Mount::start_env(work.path(), origin, &da, "a", None, &env);
    let b = Mount::start_env(work.path(), origin, &db, "b", Some(&a), &env);
    wait_members(&a, 2);
    wait_members(&b, 2);

    // Written and closed on a, read on b: from a's memory, not S3.
    let data = pattern(3_000_000, 1);
    std::fs::create_dir(da.join("d")).unwrap();
    std::fs::write(da.join("d/f.bin"), &data).unwrap();
    let before = b.status();
    assert!(
        std::fs::read(db.join("d/f.bin")).unwrap() == data,
        "b read other bytes"
    );
    let after = b.status();
    assert_eq!(reads(&after, "origin"), reads(&before, "origin"), "{after}");
    assert!(reads(&after, "peer") >= 45, "46 blocks from a: {after}");

    // A write into the middle keeps the rest (the draft copies the object).
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(db.join("d/f.bin"))
        .unwrap();
    std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(1_000_000)).unwrap();
    f.write_all(b"middle").unwrap();
    drop(f);
    let mut want = data.clone();
    want[1_000_000..1_000_006].copy_from_slice(b"middle");
    assert!(
        std::fs::read(da.join("d/f.bin")).unwrap() == want,
        "a misses b's write"
    );

    // Directories, renames and what S3 cannot hold.
    assert_eq!(names(&db), ["d"]);
    assert_eq!(
        errno_of(std::fs::remove_dir(da.join("d"))),
        Some(libc_errno::ENOTEMPTY)
    );
    assert_eq!(
        errno_of(symlink("f.bin", da.join("d/l"))),
        Some(libc_errno::EPERM)
    );
    std::fs::rename(da.join("d/f.bin"), da.join("d/g.bin")).unwrap();
    sh(&format!(
        "mv {0}/d {0}/e && cp -r {0}/e {0}/c",
        da.display()
    ));
    assert_eq!(names(&db), ["c", "e"]);
    assert!(std::fs::read(db.join("c/g.bin")).unwrap() == want);
    sh(&format!("rm -r {0}/c {0}/e", da.display()));
    assert!(names(&db).is_empty(), "{:?}", names(&db));

    // The mount's own name limit, the one statfs reports (S3 would hold a
    // 1,024-byte key): a 256-byte name is too long, a 255-byte one fits.
    assert_eq!(
        errno_of(std::fs::write(da.join("n".repeat(256)), b"x")),
        Some(libc_errno::ENAMETOOLONG)
    );
    std::fs::write(da.join("n".repeat(255)), b"x").unwrap();
    assert!(a.terminate().success());
    assert!(b.terminate().success());
}

#[test]
fn an_s3_origin_that_goes_away_during_a_write_fails_it_with_eio() {
    let Some(work) = Work::new(&["m"]) else {
        return;
    };
    let Some(minio) = start_minio() else { return };
    let addr = minio.addr;
    let env = s3_env(addr);
    let spec = format!("s3://{BUCKET}/data");
    let dir = work.join("m");
    let m = Mount::start_env(work.path(), Path::new(&spec), &dir, "m", None, &env);
    std::fs::write(dir.join("kept"), b"committed before").unwrap();

    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(dir.join("kept"))
        .unwrap();
    f.write_all(&pattern(100_000, 2)).unwrap();
    let data = minio.stop();
    let started = Instant::now();
    let err = f.sync_all().expect_err("S3 is gone: the commit fails");
    assert_eq!(err.raw_os_error(), Some(libc_errno::EIO), "{err}");
    drop(f);
    eprintln!("the failed commit took {:?}", started.elapsed());

    // Back again: the object is the one committed before, whole.
    let _minio = minio_in(data, addr).expect("minio again");
    assert_eq!(
        std::fs::read(dir.join("kept")).unwrap(),
        b"committed before"
    );
    std::fs::write(dir.join("kept"), b"after").unwrap();
    assert_eq!(std::fs::read(dir.join("kept")).unwrap(), b"after");
    assert!(m.terminate().success());
}
