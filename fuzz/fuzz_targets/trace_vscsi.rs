//! libFuzzer entry of `coopcache_fuzz::targets::trace_vscsi` (its doc says what
//! is checked; `scripts/fuzz.sh` runs it, the tests replay its corpus).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| coopcache_fuzz::targets::trace_vscsi::run(data));
