//! What one open of a file wrote: the byte ranges, or "the whole file".
//!
//! A draft of an existing file records the ranges its writers wrote, so
//! that its commit can lay them over the file *as it is then* (what other
//! writers committed meanwhile) instead of replacing their work: the new
//! version is the previous one plus this open's writes, as C2Cfs's
//! section 2 defines it (and NFS behaves). Both the local directory's
//! drafts and the object store's use this.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Written ranges recorded at most; past this the draft becomes a
/// whole-file replacement (its base copy plus all its writes), like a
/// draft that truncated.
const MAX_EXTENTS: usize = 1024;

/// Copy buffer of [`Written::lay_over`].
const COPY_CHUNK: usize = 1 << 20;

/// The ranges an open wrote, sorted and merged.
#[derive(Debug)]
pub(crate) struct Written {
    /// The draft is the whole new file (created, truncated at open, or
    /// too many ranges to record).
    whole: bool,
    /// Ranges written (unless `whole`), sorted and merged.
    extents: Vec<(u64, u64)>,
    /// Ranges appended (`O_APPEND`), in the draft's offsets, sorted and
    /// merged: laid at the end of the file as it is at the commit, so two
    /// writers' appends both survive, as on one disk.
    appends: Vec<(u64, u64)>,
    /// The open set the length: the draft's length is the file's.
    sized: bool,
}

impl Written {
    /// Nothing written yet; `whole`: the draft replaces the file whole.
    pub(crate) fn new(whole: bool) -> Written {
        Written {
            whole,
            extents: Vec::new(),
            appends: Vec::new(),
            sized: false,
        }
    }

    /// Whether the draft replaces the file whole.
    pub(crate) fn whole(&self) -> bool {
        self.whole
    }

    /// `len` bytes were written at `offset`.
    fn wrote(&mut self, offset: u64, len: usize) {
        if self.whole || len == 0 {
            return;
        }
        add_extent(&mut self.extents, offset, offset + len as u64);
        if self.extents.len() > MAX_EXTENTS {
            self.whole = true;
            self.extents = Vec::new();
        }
    }

    /// `len` bytes were written at `offset`, or with `append` appended
    /// there (the draft's end, `O_APPEND`).
    pub(crate) fn record(&mut self, offset: u64, len: usize, append: bool) {
        match append {
            true => self.appended(offset, len),
            false => self.wrote(offset, len),
        }
    }

    /// `len` bytes were appended at `offset` (the draft's end).
    fn appended(&mut self, offset: u64, len: usize) {
        if self.sized {
            // After a truncation the draft's length is the file's: an
            // append is a write at its offset.
            return self.wrote(offset, len);
        }
        if self.whole || len == 0 {
            return;
        }
        add_extent(&mut self.appends, offset, offset + len as u64);
        if self.extents.len() + self.appends.len() > MAX_EXTENTS {
            self.whole = true;
            self.extents = Vec::new();
            self.appends = Vec::new();
        }
    }

    /// The length was set to `len`.
    pub(crate) fn truncated(&mut self, len: u64) {
        // Appends so far become writes at their offsets (see `appended`).
        for (start, end) in std::mem::take(&mut self.appends) {
            add_extent(&mut self.extents, start, end);
        }
        self.sized = true;
        for e in &mut self.extents {
            e.1 = e.1.min(len);
        }
        self.extents.retain(|e| e.0 < e.1);
    }

    /// Copies the written ranges of `draft` over `out` (which holds the
    /// file as it is now), then the appended ones after its end, and the
    /// draft's length if the open set it.
    pub(crate) fn lay_over(&self, draft: &File, out: &File) -> io::Result<()> {
        let mut buf = vec![0u8; COPY_CHUNK];
        for &(start, end) in &self.extents {
            copy_range(draft, start..end, out, start, &mut buf)?;
        }
        let mut tail = out.metadata()?.len();
        for &(start, end) in &self.appends {
            copy_range(draft, start..end, out, tail, &mut buf)?;
            tail += end - start;
        }
        if self.sized {
            out.set_len(draft.metadata()?.len())?;
        }
        Ok(())
    }
}

/// Copies `range` of `from` to `to` at `at`, through `buf`.
fn copy_range(
    from: &File,
    range: std::ops::Range<u64>,
    to: &File,
    at: u64,
    buf: &mut [u8],
) -> io::Result<()> {
    let mut done = 0;
    let len = range.end - range.start;
    while done < len {
        let n = ((len - done) as usize).min(buf.len());
        from.read_exact_at(&mut buf[..n], range.start + done)?;
        to.write_all_at(&buf[..n], at + done)?;
        done += n as u64;
    }
    Ok(())
}

/// Adds `start..end` to sorted, merged `extents`.
fn add_extent(extents: &mut Vec<(u64, u64)>, start: u64, end: u64) {
    let at = extents.partition_point(|&(_, e)| e < start);
    let mut merged = (start, end);
    let mut gone = at;
    while gone < extents.len() && extents[gone].0 <= merged.1 {
        merged = (merged.0.min(extents[gone].0), merged.1.max(extents[gone].1));
        gone += 1;
    }
    extents.splice(at..gone, std::iter::once(merged));
}

#[cfg(test)]
mod tests {
    use super::add_extent;

    #[test]
    fn extents_stay_sorted_and_merged() {
        let mut e = Vec::new();
        add_extent(&mut e, 10, 20);
        add_extent(&mut e, 30, 40);
        add_extent(&mut e, 0, 5);
        assert_eq!(e, [(0, 5), (10, 20), (30, 40)]);
        add_extent(&mut e, 18, 31);
        assert_eq!(e, [(0, 5), (10, 40)]);
        add_extent(&mut e, 5, 10);
        assert_eq!(e, [(0, 40)]);
        add_extent(&mut e, 50, 60);
        add_extent(&mut e, 45, 50);
        assert_eq!(e, [(0, 40), (45, 60)]);
    }
}
