//! Every fuzz target's body, one module each: `fuzz_targets/NAME.rs` hands
//! libFuzzer's inputs to `NAME::run`, and the tests replay each target's
//! corpus (`fuzz/corpus/NAME/`) through the same function on stable Rust.

pub mod attr_notation;
pub mod class_file;
pub mod frame_decode;
pub mod frame_roundtrip;
pub mod gateway_conditional;
pub mod gateway_range;
pub mod hello;
pub mod join_wire;
pub mod node_config;
pub mod origin_path;
pub mod origin_spec;
pub mod size;
pub mod trace_be32;
pub mod trace_compressed;
pub mod trace_csv;
pub mod trace_file_requests;
pub mod trace_lcs;
pub mod trace_lirs;
pub mod trace_lis;
pub mod trace_msr;
pub mod trace_oracle;
pub mod trace_tencent;
pub mod trace_twr;
pub mod trace_txt;
pub mod trace_vscsi;

/// A target's body: one input, which it checks.
pub type Target = fn(&[u8]);

/// Each target by name, as `fuzz_targets/` and `fuzz/corpus/` name it.
pub const ALL: &[(&str, Target)] = &[
    ("attr_notation", attr_notation::run),
    ("class_file", class_file::run),
    ("frame_decode", frame_decode::run),
    ("frame_roundtrip", frame_roundtrip::run),
    ("gateway_conditional", gateway_conditional::run),
    ("gateway_range", gateway_range::run),
    ("hello", hello::run),
    ("join_wire", join_wire::run),
    ("node_config", node_config::run),
    ("origin_path", origin_path::run),
    ("origin_spec", origin_spec::run),
    ("size", size::run),
    ("trace_be32", trace_be32::run),
    ("trace_compressed", trace_compressed::run),
    ("trace_csv", trace_csv::run),
    ("trace_file_requests", trace_file_requests::run),
    ("trace_lcs", trace_lcs::run),
    ("trace_lirs", trace_lirs::run),
    ("trace_lis", trace_lis::run),
    ("trace_msr", trace_msr::run),
    ("trace_oracle", trace_oracle::run),
    ("trace_tencent", trace_tencent::run),
    ("trace_twr", trace_twr::run),
    ("trace_txt", trace_txt::run),
    ("trace_vscsi", trace_vscsi::run),
];
