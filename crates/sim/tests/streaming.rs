//! Readers and the replay pipeline stream: memory does not grow with the
//! trace. A generated trace of millions of lines is read through each text
//! and binary reader, and replayed, while a counting allocator tracks the
//! peak of live heap bytes.

use coopcache_core::PolicyKind;
use coopcache_sim::replay::{RunSpec, replay};
use coopcache_sim::trace::{self, ReadOptions, TraceFormat};
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{BufReader, Read};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards every call unchanged to the system allocator; the
// counters are bookkeeping only.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live =
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed) + layout.size() as isize;
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: the caller's layout contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Tests share the process-wide counters, so they run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// An endless trace in one of the formats, generated on the fly.
struct Endless {
    format: TraceFormat,
    n: u64,
    pending: Vec<u8>,
}

impl Read for Endless {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pending.is_empty() {
            let id = self.n % 100_003;
            self.n += 1;
            self.pending = match self.format {
                TraceFormat::Lirs => format!("{id}\n").into_bytes(),
                TraceFormat::Lis => format!("{id} 3 0 0\n").into_bytes(),
                TraceFormat::Be32 => (id as u32).to_be_bytes().to_vec(),
                TraceFormat::Msr => {
                    format!("{},hm,{},Read,{},16384,7\n", self.n, id % 4, id * 4096).into_bytes()
                }
                _ => unreachable!("not generated"),
            };
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        Ok(n)
    }
}

fn endless(format: TraceFormat) -> trace::Requests {
    let input = Box::new(BufReader::new(Endless {
        format,
        n: 0,
        pending: Vec::new(),
    }));
    trace::read(input, Path::new("endless"), format, &ReadOptions::default())
}

/// Peak live heap growth while `f` runs.
fn peak_growth(f: impl FnOnce()) -> isize {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    f();
    PEAK.load(Ordering::Relaxed) - base
}

#[test]
fn readers_hold_constant_memory_over_millions_of_requests() {
    let _serial = SERIAL.lock().unwrap();
    for format in [
        TraceFormat::Lirs,
        TraceFormat::Lis,
        TraceFormat::Be32,
        TraceFormat::Msr,
    ] {
        let grew = peak_growth(|| {
            let n = endless(format)
                .take(3_000_000)
                .filter(|r| r.is_ok())
                .count();
            assert_eq!(n, 3_000_000);
        });
        assert!(
            grew < 256 << 10,
            "{format}: reading 3M requests grew the heap by {grew} bytes"
        );
    }
}

#[test]
fn replay_holds_memory_to_its_caches_and_a_few_chunks() {
    let _serial = SERIAL.lock().unwrap();
    let spec = [RunSpec {
        policy: PolicyKind::Lru.into(),
        capacity: coopcache_core::Capacity::Blocks(1000),
    }];
    let short = peak_growth(|| {
        replay(
            Box::new(endless(TraceFormat::Lirs).take(500_000)),
            &spec,
            |_| {},
        )
        .unwrap();
    });
    let long = peak_growth(|| {
        replay(
            Box::new(endless(TraceFormat::Lirs).take(5_000_000)),
            &spec,
            |_| {},
        )
        .unwrap();
    });
    // Ten times the trace, the same footprint, within the pipeline's own
    // bound: up to six chunks of 64Ki requests (9 bytes each: id and op;
    // 13 with sizes, for byte caches) between reader and simulation, under
    // 6 MiB, depending on how far the reader runs ahead (in
    // debug builds the simulation is slower and the short run ends before
    // the pipeline fills). A leak of even one byte per request would add
    // 4.5 MB over the 4.5M extra requests.
    const PIPELINE: isize = 6 * (1 << 16) * 16;
    assert!(
        long < short + PIPELINE,
        "500k requests peaked at {short} bytes, 5M at {long}"
    );
}
