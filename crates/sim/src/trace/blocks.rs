//! Turning byte ranges and block runs into one request per block.

use super::Request;

/// Bits of a block id that hold the block number; the client takes the bits
/// above, so blocks of different disks or volumes never share an id.
pub(super) const BLOCK_BITS: u32 = 40;

/// Largest client number that fits above [`BLOCK_BITS`].
pub(super) const MAX_CLIENT: u32 = (1 << (64 - BLOCK_BITS)) - 1;

/// The id of `block` on `client`'s device: `client << 40 | block`, or `None`
/// if the block number does not fit in 40 bits (8 PiB of 8 KiB blocks).
pub(super) fn block_id(client: u32, block: u64) -> Option<u64> {
    (block >> BLOCK_BITS == 0 && client <= MAX_CLIENT)
        .then(|| (u64::from(client) << BLOCK_BITS) | block)
}

/// The blocks that bytes `[offset, offset + len)` touch, as `first..end`.
/// A zero-length request touches none; `None` if the range or its end
/// block does not fit a `u64` (the last byte of the address space at a
/// 1-byte block).
pub(super) fn block_span(offset: u64, len: u64, block_size: u64) -> Option<(u64, u64)> {
    if len == 0 {
        return Some((0, 0));
    }
    let last_byte = offset.checked_add(len - 1)?;
    Some((
        offset / block_size,
        (last_byte / block_size).checked_add(1)?,
    ))
}

/// A run of consecutive blocks still to be emitted, one request each.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Run {
    /// Everything but the id, copied into each request.
    pub template: Request,
    /// Added to each block number to form its id.
    pub base: u64,
    pub next: u64,
    pub end: u64,
}

impl Iterator for Run {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        (self.next < self.end).then(|| {
            let id = self.base | self.next;
            self.next += 1;
            Request {
                id,
                ..self.template
            }
        })
    }
}

/// Parses an unsigned decimal integer: ASCII digits only, no sign or
/// spaces, no overflow.
pub(super) fn parse_u64(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 20 {
        return None;
    }
    text.iter().try_fold(0u64, |acc, &b| {
        let digit = b.checked_sub(b'0').filter(|d| *d < 10)?;
        acc.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// A short, printable excerpt of a bad line for an error message.
pub(super) fn excerpt(text: &[u8]) -> String {
    const MAX: usize = 60;
    let shown = String::from_utf8_lossy(&text[..text.len().min(MAX)]).into_owned();
    if text.len() > MAX {
        format!("`{shown}...`")
    } else {
        format!("`{shown}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_cover_every_touched_block() {
        assert_eq!(block_span(0, 8192, 8192), Some((0, 1)));
        assert_eq!(block_span(8191, 2, 8192), Some((0, 2)));
        assert_eq!(block_span(16384, 1, 8192), Some((2, 3)));
        assert_eq!(block_span(5, 0, 8192), Some((0, 0)));
        assert_eq!(block_span(u64::MAX, 2, 8192), None);
    }

    /// Found by the fuzz target `trace_msr`: at `--block-size 1` a range
    /// ending at the last byte overflowed the end block.
    #[test]
    fn a_range_to_the_last_byte_at_one_byte_blocks_is_refused() {
        assert_eq!(block_span(u64::MAX - 1, 2, 1), None);
        assert_eq!(block_span(u64::MAX, 1, 1), None);
        assert_eq!(
            block_span(u64::MAX, 1, 2),
            Some((u64::MAX / 2, u64::MAX / 2 + 1))
        );
    }

    #[test]
    fn ids_keep_clients_apart_and_refuse_overflow() {
        assert_eq!(block_id(0, 7), Some(7));
        assert_eq!(block_id(1, 7), Some((1 << 40) | 7));
        assert_eq!(block_id(0, 1 << 40), None);
        assert_eq!(block_id(MAX_CLIENT + 1, 0), None);
    }

    #[test]
    fn parses_only_plain_unsigned_integers() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        for bad in [&b""[..], b"-1", b"1.5", b" 1", b"x"] {
            assert_eq!(parse_u64(bad), None, "{bad:?}");
        }
    }
}
