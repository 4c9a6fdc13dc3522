//! Reading a trace on its own thread, in chunks, while the caller
//! simulates: the pipeline under every replay.

use crate::error::TraceError;
use crate::interval::Cut;
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
    mut consume: impl FnMut(&C) -> Result<(), E>,
) -> Result<(), E>
where
    C: Chunk,
    E: From<TraceError>,
{
    for_each_chunk_cut(requests, None, new_chunk, |chunk, _| consume(chunk))
}

/// [`for_each_chunk`], with chunks also cut where `cut` ends an interval:
/// no chunk spans two intervals, and the last chunk of each interval comes
/// with the interval's end (see [`Cutter`]), so the caller sees the state
/// at each one (a miss ratio per interval). That chunk may be empty, where
/// the interval's last request ended a full chunk before its end was
/// known. Intervals without requests (a gap in a trace's time) are not
/// reported: they have no miss ratio.
pub(crate) fn for_each_chunk_cut<C, E>(
    requests: Requests,
    cut: Option<Cut>,
    new_chunk: impl Fn() -> C + Send,
    mut consume: impl FnMut(&C, Option<u64>) -> Result<(), E>,
) -> Result<(), E>
where
    C: Chunk,
    E: From<TraceError>,
{
    let (full_tx, full_rx) = mpsc::sync_channel::<Full<C>>(CHUNKS_IN_FLIGHT);
    // Used buffers go back to the reader, so chunks are allocated once.
    let (empty_tx, empty_rx) = mpsc::channel::<C>();
    std::thread::scope(|scope| {
        scope.spawn(move || read_chunks(requests, cut, new_chunk, &full_tx, &empty_rx));
        for full in full_rx {
            let (chunk, end) = full?;
            consume(&chunk, end)?;
            // The reader may have finished; a failed send just drops it.
            let _ = empty_tx.send(chunk);
        }
        Ok(())
    })
}

/// A chunk read, and the end of the interval it closes, if it does.
type Full<C> = Result<(C, Option<u64>), TraceError>;

/// Finds where intervals end, one request at a time, in trace order.
struct Cutter {
    cut: Cut,
    /// Requests seen.
    read: u64,
    /// The first request's time: intervals of time count from it.
    start: Option<u64>,
    /// The interval of time the last request fell in (0 for the first).
    interval: u64,
}

impl Cutter {
    fn new(cut: Cut) -> Self {
        Cutter {
            cut,
            read: 0,
            start: None,
            interval: 0,
        }
    }

    /// Takes the next request: if it is the first of a later interval, the
    /// end of the one before (requests read, or ticks after the first
    /// request's time). A request earlier than the one before it (a trace
    /// not sorted by time, or merged round-robin) stays in the current
    /// interval: intervals of time never go back.
    fn starts_interval(&mut self, request: &Request) -> Option<u64> {
        let read = self.read;
        self.read += 1;
        match self.cut {
            Cut::Requests(n) => (read > 0 && read.is_multiple_of(n.max(1))).then_some(read),
            Cut::Time { every, .. } => {
                let start = *self.start.get_or_insert(request.time);
                let interval = request.time.saturating_sub(start) / every.max(1);
                if interval <= self.interval {
                    return None;
                }
                let end = self.end();
                self.interval = interval;
                Some(end)
            }
        }
    }

    /// The end of the interval open now.
    fn end(&self) -> u64 {
        match self.cut {
            Cut::Requests(_) => self.read,
            Cut::Time { every, .. } => (self.interval + 1).saturating_mul(every),
        }
    }
}

fn read_chunks<C: Chunk>(
    mut requests: Requests,
    cut: Option<Cut>,
    new_chunk: impl Fn() -> C,
    full: &mpsc::SyncSender<Full<C>>,
    empty: &mpsc::Receiver<C>,
) {
    let mut cutter = cut.map(Cutter::new);
    // The first request of the next interval, read before its chunk.
    let mut next: Option<Request> = None;
    // Whether requests were read since the last interval's end.
    let mut open = false;
    loop {
        let mut chunk = empty.try_recv().unwrap_or_else(|_| new_chunk());
        chunk.clear();
        let mut end = None;
        let mut finished = false;
        while chunk.len() < CHUNK {
            let request = match next.take() {
                Some(r) => r,
                None => match requests.next() {
                    Some(Ok(r)) => {
                        end = cutter.as_mut().and_then(|c| c.starts_interval(&r));
                        if end.is_some() {
                            next = Some(r);
                            open = false;
                            break;
                        }
                        r
                    }
                    Some(Err(e)) => {
                        let _ = full.send(Err(e));
                        return;
                    }
                    None => {
                        finished = true;
                        end = cutter.as_ref().filter(|_| open).map(Cutter::end);
                        break;
                    }
                },
            };
            chunk.push(&request);
            open = true;
        }
        if (chunk.len() > 0 || end.is_some()) && full.send(Ok((chunk, end))).is_err() {
            return;
        }
        if finished {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(times: &[u64]) -> Requests {
        let requests: Vec<_> = times
            .iter()
            .enumerate()
            .map(|(i, &time)| {
                Ok(Request {
                    id: i as u64,
                    time,
                    ..Request::default()
                })
            })
            .collect();
        Box::new(requests.into_iter())
    }

    /// A chunk as a test sees it: its first and last id (request index),
    /// if any, and the interval end it carries.
    type Seen = (Option<(u64, u64)>, Option<u64>);

    fn chunks(requests: Requests, cut: Cut) -> Vec<Seen> {
        let mut seen = Vec::new();
        for_each_chunk_cut(requests, Some(cut), Vec::new, |c: &Vec<Request>, end| {
            let span = c.first().map(|f| (f.id, c.last().unwrap().id));
            seen.push((span, end));
            Ok::<(), TraceError>(())
        })
        .unwrap();
        seen
    }

    #[test]
    fn time_cuts_fall_before_the_first_request_of_each_later_interval() {
        // Intervals of 10 ticks from t=100: [100, 110) holds 0-2, [110, 120)
        // holds 3 (the request at 109 is the last of the first), nothing
        // falls in [120, 140), 140 opens [140, 150), and a request back in
        // time (105) stays there.
        let cut = Cut::Time {
            every: 10,
            per_second: 1,
        };
        let seen = chunks(timed(&[100, 101, 109, 110, 141, 105, 149]), cut);
        assert_eq!(
            seen,
            [
                (Some((0, 2)), Some(10)),
                (Some((3, 3)), Some(20)),
                (Some((4, 6)), Some(50)),
            ]
        );
    }

    #[test]
    fn an_interval_ending_on_a_full_chunk_closes_with_an_empty_one() {
        // CHUNK requests at time 0, then one at 5: the first interval fills
        // a whole chunk, and is closed when the request at 5 is read.
        let mut times = vec![0; CHUNK];
        times.push(5);
        let cut = Cut::Time {
            every: 5,
            per_second: 1,
        };
        let last = CHUNK as u64 - 1;
        assert_eq!(
            chunks(timed(&times), cut),
            [
                (Some((0, last)), None),
                (None, Some(5)),
                (Some((last + 1, last + 1)), Some(10)),
            ]
        );
    }

    #[test]
    fn request_cuts_close_every_n_and_the_rest() {
        let seen = chunks(timed(&[0; 7]), Cut::Requests(3));
        assert_eq!(
            seen,
            [
                (Some((0, 2)), Some(3)),
                (Some((3, 5)), Some(6)),
                (Some((6, 6)), Some(7)),
            ]
        );
        // A trace of a whole number of intervals ends on the last one.
        let seen = chunks(timed(&[0; 6]), Cut::Requests(3));
        assert_eq!(seen.last(), Some(&(Some((3, 5)), Some(6))));
        assert!(chunks(timed(&[]), Cut::Requests(3)).is_empty());
    }
}
