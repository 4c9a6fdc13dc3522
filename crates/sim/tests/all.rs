//! The simulator's integration tests, one binary (each file a module): a
//! test binary links the crate and instantiates its generic protocol code
//! again, so one binary per file cost CI minutes of compiling and linking.
//! Run one file's tests with `cargo test -p coopcache-sim --test all
//! golden::`. `streaming.rs` is a binary of its own: it counts the
//! process's allocations with its own global allocator.

mod common;
#[path = "common/idle.rs"]
mod idle;

mod attr_curves;
mod class_policies;
mod coop_model;
mod disk;
mod disk_peers;
mod faults;
mod first_block;
mod golden;
mod golden_sizes;
mod grants;
mod lru_curve;
mod netcache;
mod pinned;
mod private;
mod protocol_sim;
mod readers;
mod readers_libcachesim;
mod reproduction;
mod roles;
mod segments;
mod trace_stats;
mod unify;
