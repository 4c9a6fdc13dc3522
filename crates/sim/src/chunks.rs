//! Reading a trace on its own thread, in chunks, while the caller
//! simulates: the pipeline under every replay.

use crate::error::TraceError;
use crate::trace::{Request, Requests};
use std::sync::mpsc;

/// Requests per chunk handed from the reader thread to the simulation.
pub(crate) const CHUNK: usize = 1 << 16;
/// Chunks in flight between the reader and the simulation.
const CHUNKS_IN_FLIGHT: usize = 4;

/// Calls `consume` with successive chunks of `requests`, each request
/// turned into a `T` by `map`, reading (and decompressing, parsing) on
/// another thread meanwhile. Memory stays at a few chunks whatever the
/// trace's length. Stops at the first trace error or `consume` error.
pub(crate) fn for_each_chunk<T, E>(
    requests: Requests,
    map: fn(&Request) -> T,
    mut consume: impl FnMut(&[T]) -> Result<(), E>,
) -> Result<(), E>
where
    T: Send,
    E: From<TraceError>,
{
    let (full_tx, full_rx) = mpsc::sync_channel::<Result<Vec<T>, TraceError>>(CHUNKS_IN_FLIGHT);
    // Used buffers go back to the reader, so chunks are allocated once.
    let (empty_tx, empty_rx) = mpsc::channel::<Vec<T>>();
    std::thread::scope(|scope| {
        scope.spawn(move || read_chunks(requests, map, &full_tx, &empty_rx));
        for chunk in full_rx {
            let chunk = chunk?;
            consume(&chunk)?;
            // The reader may have finished; a failed send just drops it.
            let _ = empty_tx.send(chunk);
        }
        Ok(())
    })
}

fn read_chunks<T>(
    mut requests: Requests,
    map: fn(&Request) -> T,
    full: &mpsc::SyncSender<Result<Vec<T>, TraceError>>,
    empty: &mpsc::Receiver<Vec<T>>,
) {
    loop {
        let mut chunk = empty
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        chunk.clear();
        for request in requests.by_ref().take(CHUNK) {
            match request {
                Ok(r) => chunk.push(map(&r)),
                Err(e) => {
                    let _ = full.send(Err(e));
                    return;
                }
            }
        }
        let last = chunk.len() < CHUNK;
        if chunk.is_empty() || full.send(Ok(chunk)).is_err() || last {
            return;
        }
    }
}
