//! The daemon library's integration tests, one binary (each file or
//! folder a module): real nodes on loopback, real origins (MinIO, nginx),
//! hostile peers. A test binary links the whole daemon again, so one
//! binary per file cost CI minutes of compiling and linking. Run one
//! module's tests with `cargo test -p coopcache-node --test all hostile::`.

mod common;
mod servers;

mod attacker;
mod bursts;
mod classes;
mod cluster;
mod discovery;
mod disk;
mod equivalence;
mod faultfs;
mod frame_fuzz;
mod gateway;
mod gateway_fair;
mod holders;
mod hostile;
mod listings;
mod origin;
mod origin_changes;
mod origin_local;
mod origin_root;
mod origin_s3_writes;
mod pins;
mod tls;
mod tls_receive;
mod warm;
