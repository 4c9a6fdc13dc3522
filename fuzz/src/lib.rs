//! The fuzz targets (`targets`, one module each) and the helpers they
//! share. `fuzz_targets/NAME.rs` is libFuzzer's entry to `targets::NAME`
//! (`scripts/fuzz.sh`, nightly and cargo-fuzz); the tests (`replay`) run
//! every committed seed of `corpus/NAME/`, and seeded mutations of each,
//! through the same functions on stable Rust, in CI. See
//! `docs/reliability.md`, section Fuzzing.

#[cfg(test)]
mod replay;
pub mod targets;

use coopcache_sim::TraceError;
use coopcache_sim::trace::{ReadOptions, Request, TraceFormat};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Most requests a target takes from one trace: a short line can announce
/// billions of blocks (`lis` counts, byte ranges at a 1-byte block size),
/// which is a long trace, not a bug.
pub const MAX_REQUESTS: usize = 4096;

/// Reads `data` as an uncompressed trace of `format` and checks what comes
/// out: the stream ends at its first error, and byte-addressed formats keep
/// clients apart in the id's top bits.
pub fn read_trace(data: &[u8], format: TraceFormat, opts: &ReadOptions) {
    let input = Box::new(std::io::Cursor::new(data.to_vec()));
    let requests = coopcache_sim::trace::read(input, Path::new("fuzz"), format, opts);
    drain(requests);
}

/// Takes up to [`MAX_REQUESTS`] from `requests`, checking that nothing
/// follows an error.
pub fn drain(mut requests: impl Iterator<Item = Result<Request, TraceError>>) {
    for _ in 0..MAX_REQUESTS {
        match requests.next() {
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                let _ = e.to_string();
                assert!(requests.next().is_none(), "a request after an error");
                return;
            }
            None => return,
        }
    }
}

/// Reads `data` as an uncompressed byte-range trace of `format` (`msr`,
/// `tencent`) at the block size its first byte picks ([`block_size`]).
pub fn read_ranges(data: &[u8], format: TraceFormat) {
    let Some((&size, trace)) = data.split_first() else {
        return;
    };
    let opts = ReadOptions {
        block_size: block_size(size),
        csv: None,
    };
    read_trace(trace, format, &opts);
}

/// A block size for the byte-addressed formats from one input byte:
/// `--block-size` takes any positive size, so the extremes too.
pub fn block_size(selector: u8) -> u64 {
    const SIZES: [u64; 8] = [8192, 512, 1, 4096, 65536, 3, 1 << 20, 1 << 40];
    SIZES[usize::from(selector) % SIZES.len()]
}

/// A file holding `data`, for the readers that open a path (decompression
/// sniffs the file's first bytes). One per process, rewritten each run.
pub struct ScratchFile {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl ScratchFile {
    /// A scratch file in a new directory, in `/dev/shm` where there is one.
    pub fn new() -> ScratchFile {
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            tempfile::tempdir_in(shm)
        } else {
            tempfile::tempdir()
        }
        .expect("a scratch directory");
        ScratchFile {
            path: dir.path().join("input"),
            _dir: dir,
        }
    }

    /// Replaces the file's contents with `data`; its path.
    pub fn write(&self, data: &[u8]) -> &Path {
        let mut f = std::fs::File::create(&self.path).expect("scratch file");
        f.write_all(data).expect("scratch write");
        &self.path
    }
}

impl Default for ScratchFile {
    fn default() -> Self {
        ScratchFile::new()
    }
}
