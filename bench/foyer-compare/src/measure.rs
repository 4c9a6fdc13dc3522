//! What the bench measures with, the same for both engines: the heap
//! (a counting allocator), the bytes this process sent towards the device
//! (`/proc/self/io`), the files' allocated size, the page cache, quantiles.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The system allocator, counting the bytes live on the heap: the index's
/// memory per block is the growth of this count.
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on unchanged to the system allocator, which
// upholds `GlobalAlloc`'s contract; the wrapper only adds relaxed atomic
// counts, which allocate nothing and cannot unwind.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc`, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc`, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

/// Bytes live on the heap now (requested sizes, not the allocator's
/// rounding).
pub fn heap() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// `write_bytes` of `/proc/self/io`: what this process caused to be sent
/// to the storage layer (buffered writes count when a page is dirtied,
/// direct I/O when submitted), over all its threads.
pub fn io_write_bytes() -> u64 {
    proc_io("write_bytes")
}

/// `wchar` of `/proc/self/io`: the bytes this process passed to write
/// calls (what the engine's format adds to the payload, before pages).
pub fn io_write_calls_bytes() -> u64 {
    proc_io("wchar")
}

fn proc_io(field: &str) -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(": "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Bytes allocated on disk (`st_blocks`) for the files under `dir`.
pub fn allocated_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            total += allocated_bytes(&entry.path());
        } else {
            total += meta.blocks() * 512;
        }
    }
    total
}

/// Flushes every dirty page and empties the page cache (root only):
/// whether it could.
pub fn drop_page_cache() -> bool {
    rustix::fs::sync();
    std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}

/// The `q` quantile (0 to 1) of `samples`, in microseconds.
pub fn quantile_us(samples: &mut [Duration], q: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    samples.sort_unstable();
    let i = ((samples.len() - 1) as f64 * q).round() as usize;
    samples[i].as_secs_f64() * 1e6
}

/// The median of `values` (NaN if none).
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
