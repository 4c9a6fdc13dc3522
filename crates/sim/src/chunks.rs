//! Reading a trace on its own thread, in chunks, while the caller
//! simulates: the pipeline under every replay.

use crate::error::TraceError;
use crate::trace::{Request, Requests};
use std::sync::mpsc;

/// Requests per chunk handed from the reader thread to the simulation.
pub(crate) const CHUNK: usize = 1 << 16;
/// Chunks in flight between the reader and the simulation.
const CHUNKS_IN_FLIGHT: usize = 4;

/// A buffer of requests read ahead: what [`for_each_chunk`] fills on the
/// reader thread and hands to the simulation.
pub(crate) trait Chunk: Send {
    /// Empties the buffer, keeping its allocation.
    fn clear(&mut self);
    /// Appends one request.
    fn push(&mut self, request: &Request);
    /// Requests held.
    fn len(&self) -> usize;
}

/// Whole requests, for simulations that use every field.
impl Chunk for Vec<Request> {
    fn clear(&mut self) {
        Vec::clear(self);
    }

    fn push(&mut self, request: &Request) {
        Vec::push(self, *request);
    }

    fn len(&self) -> usize {
        Vec::len(self)
    }
}

/// Calls `consume` with successive chunks of `requests`, each a buffer made
/// by `new_chunk` (with room for [`CHUNK`] requests), reading (and
/// decompressing, parsing) on another thread meanwhile. Memory stays at a
/// few chunks whatever the trace's length. Stops at the first trace error
/// or `consume` error.
pub(crate) fn for_each_chunk<C, E>(
    requests: Requests,
    new_chunk: impl Fn() -> C + Send,
    consume: impl FnMut(&C) -> Result<(), E>,
) -> Result<(), E>
where
    C: Chunk,
    E: From<TraceError>,
{
    for_each_chunk_cut(requests, None, new_chunk, consume)
}

/// [`for_each_chunk`], with chunks also cut after every `cut` requests
/// (where given, at least 1): no chunk spans a multiple of `cut`, so the
/// caller sees the state at each one (a miss ratio per interval).
pub(crate) fn for_each_chunk_cut<C, E>(
    requests: Requests,
    cut: Option<u64>,
    new_chunk: impl Fn() -> C + Send,
    mut consume: impl FnMut(&C) -> Result<(), E>,
) -> Result<(), E>
where
    C: Chunk,
    E: From<TraceError>,
{
    let (full_tx, full_rx) = mpsc::sync_channel::<Result<C, TraceError>>(CHUNKS_IN_FLIGHT);
    // Used buffers go back to the reader, so chunks are allocated once.
    let (empty_tx, empty_rx) = mpsc::channel::<C>();
    std::thread::scope(|scope| {
        scope.spawn(move || read_chunks(requests, cut, new_chunk, &full_tx, &empty_rx));
        for chunk in full_rx {
            let chunk = chunk?;
            consume(&chunk)?;
            // The reader may have finished; a failed send just drops it.
            let _ = empty_tx.send(chunk);
        }
        Ok(())
    })
}

fn read_chunks<C: Chunk>(
    mut requests: Requests,
    cut: Option<u64>,
    new_chunk: impl Fn() -> C,
    full: &mpsc::SyncSender<Result<C, TraceError>>,
    empty: &mpsc::Receiver<C>,
) {
    let mut read = 0u64;
    loop {
        // Up to the next multiple of `cut`, if that comes before CHUNK.
        let want = cut.map_or(CHUNK, |n| {
            let n = n.max(1);
            CHUNK.min(usize::try_from(n - read % n).unwrap_or(CHUNK))
        });
        let mut chunk = empty.try_recv().unwrap_or_else(|_| new_chunk());
        chunk.clear();
        for request in requests.by_ref().take(want) {
            match request {
                Ok(r) => chunk.push(&r),
                Err(e) => {
                    let _ = full.send(Err(e));
                    return;
                }
            }
        }
        read += chunk.len() as u64;
        let last = chunk.len() < want;
        if chunk.len() == 0 || full.send(Ok(chunk)).is_err() || last {
            return;
        }
    }
}
