//! libFuzzer entry of `coopcache_fuzz::targets::size` (its doc says what
//! is checked; `scripts/fuzz.sh` runs it, the tests replay its corpus).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| coopcache_fuzz::targets::size::run(data));
