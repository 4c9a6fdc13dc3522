//! One pass of LRU stack distances (Mattson et al., 1970) over one
//! sub-cache's block stream, giving its misses at every size at once.
//!
//! An LRU cache of `C` blocks holds a block at its next reference iff
//! fewer than `C` other distinct blocks were referenced in between (its
//! reuse distance `D < C`). So, per stream:
//!
//! - a read request hits at size `C` iff every block it reads does, i.e.
//!   its largest reuse distance is below `C` (first references miss at
//!   every size): a histogram of per-request maxima gives the request
//!   misses at every `C`;
//! - a block is evicted between two references (or after its last one, by
//!   the rest of the trace) iff that gap's distance `D >= C`; it is then
//!   dirty iff it was written since its last eviction, i.e. every gap since
//!   its last write had a distance below `C`. With `M` the largest of those
//!   gap distances, the gap expels a dirty block exactly for `M < C <= D`,
//!   an interval: a difference array gives write expulsions at every `C`.
//!
//! Distances come from the simulator's [`LruStack`]: `O(log n)` per
//! reference.

use crate::mrc::LruStack;

/// What a stream knows of one block.
#[derive(Clone, Copy, Default)]
struct BlockState {
    /// Whether it was written since... ever (a write makes it a candidate).
    written: bool,
    /// Largest gap distance since its latest write.
    gap_max: u32,
}

/// The stack-distance analysis of one sub-cache's stream.
pub struct StackAnalysis {
    stack: LruStack<BlockState>,
    /// Read requests by their largest reuse distance (`None`: cold).
    request_max: Histogram,
    /// Read block references by reuse distance.
    block_distance: Histogram,
    /// Write expulsions: +1 at `C = M + 1`, -1 at `C = D + 1`.
    expulsions: Vec<i64>,
    /// The request being read, its largest distance so far (`u32::MAX`
    /// for cold).
    open_request: Option<u32>,
}

/// Counts by distance, with cold (first) references apart.
#[derive(Default, Clone)]
struct Histogram {
    by_distance: Vec<u64>,
    cold: u64,
}

impl Histogram {
    fn add(&mut self, distance: Option<u32>) {
        match distance {
            None => self.cold += 1,
            Some(d) => {
                let d = d as usize;
                if d >= self.by_distance.len() {
                    self.by_distance.resize(d + 1, 0);
                }
                self.by_distance[d] += 1;
            }
        }
    }

    /// Counts that miss in a cache of `c` blocks: distance `>= c`, or cold.
    fn misses(&self, c: usize) -> u64 {
        self.cold + self.by_distance.iter().skip(c).sum::<u64>()
    }
}

impl Default for StackAnalysis {
    fn default() -> Self {
        StackAnalysis {
            stack: LruStack::new(false),
            request_max: Histogram::default(),
            block_distance: Histogram::default(),
            expulsions: Vec::new(),
            open_request: None,
        }
    }
}

impl StackAnalysis {
    /// Starts a read request (its blocks follow with [`reference`]).
    ///
    /// [`reference`]: StackAnalysis::reference
    pub fn begin_read(&mut self) {
        self.open_request = Some(0);
    }

    /// Ends the read request begun last.
    pub fn end_read(&mut self) {
        if let Some(max) = self.open_request.take() {
            self.request_max.add((max != u32::MAX).then_some(max));
        }
    }

    /// One reference to `block`, a read or a write.
    pub fn reference(&mut self, block: u64, write: bool) {
        let (reuse, state) = self.stack.reference(block, 1);
        let distance = reuse.map(|(r, _)| u32::try_from(r.objects).unwrap_or(u32::MAX));
        let before = *state;
        if write {
            state.written = true;
            state.gap_max = 0;
        } else if let Some(d) = distance {
            state.gap_max = state.gap_max.max(d);
        }
        if let Some(d) = distance {
            self.gap(before, d);
        }
        if !write {
            self.block_distance.add(distance);
            if let Some(max) = self.open_request.as_mut() {
                *max = match distance {
                    None => u32::MAX,
                    Some(d) => (*max).max(d),
                };
            }
        }
    }

    /// A gap of distance `d` after a reference to a block in `state`: an
    /// eviction at every size `C <= d`, a dirty one for `gap_max < C`.
    fn gap(&mut self, state: BlockState, d: u32) {
        if !state.written || d < state.gap_max + 1 {
            return;
        }
        let (from, to) = (state.gap_max as usize + 1, d as usize + 1);
        if to >= self.expulsions.len() {
            self.expulsions.resize(to + 1, 0);
        }
        self.expulsions[from] += 1;
        self.expulsions[to] -= 1;
    }

    /// Closes the trace: each block's last gap runs to the end.
    pub fn finish(&mut self) {
        let ends: Vec<(BlockState, u32)> = self
            .stack
            .residents()
            .map(|(s, r)| (*s, u32::try_from(r.objects).unwrap_or(u32::MAX)))
            .collect();
        for (s, d) in ends {
            self.gap(s, d);
        }
    }

    /// Read requests that miss in a cache of `c` blocks.
    pub fn read_misses(&self, c: usize) -> u64 {
        self.request_max.misses(c)
    }

    /// Read block references that miss in a cache of `c` blocks.
    pub fn block_misses(&self, c: usize) -> u64 {
        self.block_distance.misses(c)
    }

    /// Dirty blocks expelled from a cache of `c` blocks.
    pub fn write_expulsions(&self, c: usize) -> u64 {
        let end = (c + 1).min(self.expulsions.len());
        self.expulsions[..end].iter().sum::<i64>().max(0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_count_distinct_blocks_in_between() {
        let mut s = StackAnalysis::default();
        for b in [1, 2, 3, 2, 1] {
            s.begin_read();
            s.reference(b, false);
            s.end_read();
        }
        s.finish();
        // 1,2,3 cold; 2 at distance 1 (only 3); 1 at distance 2 (2, 3).
        assert_eq!(s.read_misses(1), 5);
        assert_eq!(s.read_misses(2), 4);
        assert_eq!(s.read_misses(3), 3);
        assert_eq!(s.read_misses(100), 3);
    }

    #[test]
    fn a_written_block_is_expelled_only_when_evicted_dirty() {
        let mut s = StackAnalysis::default();
        s.reference(9, true);
        for b in [1, 2, 3] {
            s.reference(b, false);
        }
        s.reference(9, false);
        s.finish();
        // The write to 9 then three others: evicted dirty for C <= 3.
        assert_eq!(s.write_expulsions(1), 1);
        assert_eq!(s.write_expulsions(3), 1);
        assert_eq!(s.write_expulsions(4), 0);
    }
}
