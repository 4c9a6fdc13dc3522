//! Opening a trace file with transparent decompression.

use crate::error::TraceError;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How many bytes of the file (compressed) have been read so far; shared
/// with a progress display while another thread decodes.
#[derive(Clone, Debug, Default)]
pub struct BytesRead(Arc<AtomicU64>);

impl BytesRead {
    /// Bytes read so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A file reader that counts the bytes it hands out.
struct Counted {
    file: File,
    count: BytesRead,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        self.count.0.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// The compression a file's first bytes announce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Plain bytes.
    None,
    /// gzip (`1f 8b`).
    Gzip,
    /// xz (`fd 37 7a 58 5a 00`).
    Xz,
    /// Zstandard (`28 b5 2f fd`).
    Zstd,
    /// bzip2 (`BZh`).
    Bzip2,
}

impl Compression {
    /// The compression a file's extension names (`.gz`, `.xz`, `.zst`,
    /// `.bz2`), if any: such a file must start with its magic number.
    pub fn named(path: &Path) -> Option<Compression> {
        match path.extension()?.to_str()? {
            "gz" => Some(Compression::Gzip),
            "xz" => Some(Compression::Xz),
            "zst" => Some(Compression::Zstd),
            "bz2" => Some(Compression::Bzip2),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Compression::None => "uncompressed",
            Compression::Gzip => "gzip",
            Compression::Xz => "xz",
            Compression::Zstd => "zstd",
            Compression::Bzip2 => "bzip2",
        }
    }

    fn expected(self) -> &'static str {
        match self {
            Compression::None => "plain bytes",
            Compression::Gzip => "a gzip stream (1f 8b)",
            Compression::Xz => "an xz stream (fd 37 7a 58 5a 00)",
            Compression::Zstd => "a zstd stream (28 b5 2f fd)",
            Compression::Bzip2 => "a bzip2 stream (42 5a 68, `BZh`)",
        }
    }

    /// Recognises a compressed stream by its magic number.
    pub fn sniff(head: &[u8]) -> Compression {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Compression::Xz
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else if head.starts_with(b"BZh") {
            Compression::Bzip2
        } else {
            Compression::None
        }
    }
}

/// An opened trace: its decompressed bytes, and a counter of the file bytes
/// read so far out of `file_len`.
pub(super) struct Opened {
    /// Decompressed contents.
    pub reader: Box<dyn BufRead + Send>,
    /// Compressed bytes consumed so far.
    pub progress: BytesRead,
    /// Size of the file on disk.
    pub file_len: u64,
}

/// Opens `path`, decompressing gzip, xz, zstd or bzip2 by magic number
/// (several concatenated streams are read as one).
pub(super) fn open(path: &Path) -> Result<Opened, TraceError> {
    let io_err = |source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io_err)?;
    let file_len = file.metadata().map_err(io_err)?.len();
    let progress = BytesRead::default();
    let counted = Counted {
        file,
        count: progress.clone(),
    };
    let mut raw = BufReader::with_capacity(1 << 16, counted);
    let head = raw.fill_buf().map_err(io_err)?;
    let kind = Compression::sniff(head);
    if let Some(named) = Compression::named(path)
        && named != kind
    {
        return Err(TraceError::Header {
            path: path.to_path_buf(),
            problem: format!(
                "its name says {} but its first bytes are {}",
                named.name(),
                hex_head(head)
            ),
            expected: named.expected(),
        });
    }
    let reader: Box<dyn BufRead + Send> = match kind {
        Compression::None => Box::new(raw),
        Compression::Gzip => big_buf(flate2::bufread::MultiGzDecoder::new(raw)),
        Compression::Xz => big_buf(liblzma::bufread::XzDecoder::new_multi_decoder(raw)),
        Compression::Zstd => {
            big_buf(zstd::stream::read::Decoder::with_buffer(raw).map_err(io_err)?)
        }
        Compression::Bzip2 => big_buf(bzip2::bufread::MultiBzDecoder::new(raw)),
    };
    Ok(Opened {
        reader,
        progress,
        file_len,
    })
}

/// The first bytes of a file, in hex, for an error (`none` if empty).
fn hex_head(head: &[u8]) -> String {
    if head.is_empty() {
        return "none (the file is empty)".into();
    }
    let shown: Vec<String> = head.iter().take(6).map(|b| format!("{b:02x}")).collect();
    shown.join(" ")
}

fn big_buf<R: Read + Send + 'static>(r: R) -> Box<dyn BufRead + Send> {
    Box::new(BufReader::with_capacity(1 << 16, r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_each_magic_number() {
        assert_eq!(Compression::sniff(&[0x1f, 0x8b, 8]), Compression::Gzip);
        assert_eq!(Compression::sniff(b"\xfd7zXZ\x00\x00"), Compression::Xz);
        assert_eq!(
            Compression::sniff(&[0x28, 0xb5, 0x2f, 0xfd]),
            Compression::Zstd
        );
        assert_eq!(Compression::sniff(b"BZh91AY"), Compression::Bzip2);
        assert_eq!(Compression::sniff(b"12\n34\n"), Compression::None);
        assert_eq!(Compression::sniff(b""), Compression::None);
    }
}
