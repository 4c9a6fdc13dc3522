//! The tests that mount FUSE (`coopcache mount`), one binary apart from
//! the others: every close of a file on a mount commits it, and that
//! includes the close a forked child makes of inherited descriptors when
//! it execs, so these tests run one at a time (`mounts::SERIAL`) and in a
//! process where no other test starts programs. Run one module's tests
//! with `cargo test -p coopcache --test fuse mount_histories::`.

mod common;
#[path = "common/mounts.rs"]
mod mounts;
#[path = "../../node/tests/servers/mod.rs"]
mod servers;
#[path = "common/shell.rs"]
mod shell;

mod bench_dataset;
mod bench_files;
mod guides;
mod mount;
mod mount_attrs;
mod mount_fsx;
mod mount_histories;
mod mount_locks;
mod mount_owners;
mod mount_posix;
mod mount_s3;
mod mount_s3fs;
mod readme_tour;
mod s3_minio;
