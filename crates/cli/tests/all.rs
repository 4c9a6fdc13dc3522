//! The `coopcache` binary's tests, run as a user runs it (each file a
//! module of one test binary; one binary per file cost CI minutes of
//! linking). The tests that mount FUSE are the `fuse` binary
//! (`tests/fuse.rs`): they must not share a process with tests that start
//! programs (see `common/mounts.rs`). Run one module's tests with `cargo
//! test -p coopcache --test all live::`.

#[path = "common/cluster.rs"]
mod cluster;
mod common;
#[path = "common/proc_memory.rs"]
mod proc_memory;

mod bench;
mod bench_live;
mod bench_rss;
mod classes;
mod cli;
mod consistency;
mod dashboard;
mod demo;
mod deploy;
mod disk;
mod disk_peers;
mod join;
mod live;
mod mrc;
mod partition;
mod policy_knobs;
mod private;
mod s3_clients;
mod startup;
mod trace;
mod unify;
mod upgrade;
