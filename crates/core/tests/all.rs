//! The core's integration tests, one binary (each file a module): a test
//! binary links the whole crate and its generic code again, so one binary
//! per file cost CI minutes of compiling and linking. Run one file's tests
//! with `cargo test -p coopcache-core --test all model_clockpro::`.

mod c2cfs_model;
mod classes;
mod knob_extremes;
mod lhd_long;
mod live_hooks;
mod model;
mod model_clockpro;
mod model_lecar;
mod two_q_sizes;
