//! Twitter's cache cluster traces (Yang et al., OSDI'20;
//! twitter/cache-trace): comma-separated lines
//! `timestamp,anonymized key,key size,value size,client id,operation,TTL`.
//!
//! As in libCacheSim's Twitter reader (`twrBin.h`): an object is its key
//! (hashed to 64 bits) and weighs its key size plus its value size; `get`
//! and `gets` with a value size of 0 (misses in the traced cluster, whose
//! object size is unknown) are skipped, as libCacheSim skips them.
//! `get`/`gets` are reads; `set`, `add`, `replace`, `cas`, `append`,
//! `prepend`, `incr`, `decr` writes; `delete` deletes. Clients are
//! numbered in order of first appearance. The TTL is not used.

use super::blocks::{MAX_CLIENT, excerpt, parse_u64};
use super::csv_map::stable_hash;
use super::lines::Lines;
use super::{Op, Request, TraceError};
use std::collections::HashMap;
use std::io::BufRead;
use std::path::PathBuf;

const FORM: &str = "`timestamp,key,key size,value size,client id,operation,ttl` with unsigned integers for timestamp, sizes and ttl, and operation one of get, gets, set, add, replace, cas, append, prepend, incr, decr, delete";

/// A Twitter operation as a read, write or delete.
fn op_of(text: &[u8]) -> Option<Op> {
    match text.to_ascii_lowercase().as_slice() {
        b"get" | b"gets" => Some(Op::Read),
        b"set" | b"add" | b"replace" | b"cas" | b"append" | b"prepend" | b"incr" | b"decr" => {
            Some(Op::Write)
        }
        b"delete" => Some(Op::Delete),
        _ => None,
    }
}

/// Parses one line; `None` for a get whose value size is 0.
fn parse(l: &Lines, clients: &mut HashMap<Vec<u8>, u32>) -> Result<Option<Request>, TraceError> {
    let text = l.current();
    let fields: Vec<&[u8]> = text.split(|&b| b == b',').map(<[u8]>::trim_ascii).collect();
    let bad = |what: String| l.error(format!("{what} in {}", excerpt(text)), FORM);
    let [time, key, key_size, value_size, client, op, ttl] = fields[..] else {
        return Err(bad(format!("{} fields, not 7", fields.len())));
    };
    let number = |field: &[u8], name: &str| {
        parse_u64(field).ok_or_else(|| {
            bad(format!(
                "{name} {} is not an unsigned integer",
                excerpt(field)
            ))
        })
    };
    let time = number(time, "timestamp")?;
    let (key_size, value_size) = (
        number(key_size, "key size")?,
        number(value_size, "value size")?,
    );
    number(ttl, "ttl")?;
    let op = op_of(op).ok_or_else(|| bad(format!("operation {}", excerpt(op))))?;
    if op == Op::Read && value_size == 0 {
        return Ok(None);
    }
    let size = key_size
        .checked_add(value_size)
        .and_then(|s| u32::try_from(s).ok())
        .ok_or_else(|| bad("an object of 4 GiB or more".into()))?;
    let next = clients.len() as u32;
    if next > MAX_CLIENT && !clients.contains_key(client) {
        return Err(bad(format!("more than {MAX_CLIENT} distinct clients")));
    }
    let client = *clients.entry(client.to_vec()).or_insert(next);
    Ok(Some(Request {
        id: stable_hash(key),
        time,
        size,
        client,
        op,
    }))
}

/// Reads a Twitter cluster trace.
pub(super) fn twr(
    input: Box<dyn BufRead + Send>,
    path: PathBuf,
) -> impl Iterator<Item = Result<Request, TraceError>> {
    let mut lines = Lines::new(input, path);
    let mut clients = HashMap::new();
    std::iter::from_fn(move || lines.next_with(|l| parse(l, &mut clients)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_memcached_operation_has_a_kind() {
        use super::{Op, op_of};
        assert_eq!(op_of(b"GETS"), Some(Op::Read));
        assert_eq!(op_of(b"cas"), Some(Op::Write));
        assert_eq!(op_of(b"delete"), Some(Op::Delete));
        assert_eq!(op_of(b"flush"), None);
    }
}
