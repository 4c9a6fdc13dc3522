//! A trace file as `coopcache sim` opens it: written to a scratch file and
//! opened by `trace::open`, which sniffs gzip, xz, zstd or bzip2 by magic
//! number and decompresses (concatenated streams too), then read as the
//! format the input's last byte picks (every `--format`, `csv` with the
//! default column map, `msr`/`tencent` at 8 KiB blocks). Beyond not
//! panicking: the stream ends at its first error (up to `MAX_REQUESTS`
//! requests are taken: a small compressed input may expand a lot).

use crate::ScratchFile;
use coopcache_sim::trace::{ReadOptions, TraceFormat};
use std::sync::OnceLock;

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    static FILE: OnceLock<ScratchFile> = OnceLock::new();
    let Some((&pick, file)) = data.split_last() else {
        return;
    };
    let format = TraceFormat::ALL[usize::from(pick) % TraceFormat::ALL.len()];
    let path = FILE.get_or_init(ScratchFile::new).write(file);
    if let Ok(stream) = coopcache_sim::trace::open(path, format, &ReadOptions::default()) {
        crate::drain(stream.requests);
    }
}
