//! What a process holds in memory, searched through /proc: the tests that
//! a host keeps no plaintext of a private block (`private.rs`,
//! `unify.rs`).
#![allow(dead_code)] // each test crate uses some of these

use std::fs;
use std::path::Path;

/// Writes 8 MiB of lines to `path`, each with `marker` and its number (so
/// no two blocks are alike); returns them.
pub fn marked_file(path: &Path, marker: &[u8]) -> Vec<u8> {
    let mut data = Vec::with_capacity(8 << 20);
    let mut line = 0u64;
    while data.len() < 8 << 20 {
        data.extend_from_slice(marker);
        data.extend_from_slice(format!(" line {line:012}\n").as_bytes());
        line += 1;
    }
    data.truncate(8 << 20);
    fs::write(path, &data).unwrap();
    data
}

/// Occurrences of `needle` in the writable memory of process `pid`
/// (heap, anonymous mappings, stacks), read through /proc/PID/mem.
pub fn occurrences_in_memory(pid: u32, needle: &[u8]) -> usize {
    use std::io::{Read, Seek, SeekFrom};
    let maps = fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let mut mem = fs::File::open(format!("/proc/{pid}/mem")).unwrap();
    let mut found = 0;
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        let path = fields.nth(3).unwrap_or("");
        if !perms.starts_with("rw") || path.starts_with("[v") {
            continue; // code, read-only data, vvar/vsyscall
        }
        let (start, end) = range.split_once('-').unwrap();
        let start = u64::from_str_radix(start, 16).unwrap();
        let end = u64::from_str_radix(end, 16).unwrap();
        let mut region = vec![0u8; (end - start) as usize];
        if mem.seek(SeekFrom::Start(start)).is_err() || mem.read_exact(&mut region).is_err() {
            continue; // unmapped since maps was read
        }
        found += region
            .windows(needle.len())
            .filter(|w| *w == needle)
            .count();
    }
    found
}
