//! Telling a trace's format from its file name, where the name is
//! unambiguous: libCacheSim's and the trace sets' own extensions.

use super::TraceFormat;
use crate::error::OptionError;
use std::path::Path;

/// Suffixes of compressed files, stripped before the format's extension
/// (decompression itself goes by the file's magic number).
const COMPRESSED: [&str; 5] = ["zst", "zstd", "gz", "xz", "bz2"];

/// Extensions that name one format. `.sort` is how Twitter names its
/// (time-sorted) cluster traces; `.trace`, `.csv`, `.txt` and `.bin` are
/// left out: several formats use them.
const EXTENSIONS: [(&str, TraceFormat); 5] = [
    ("lcs", TraceFormat::Lcs),
    ("oraclegeneral", TraceFormat::Oracle),
    ("vscsi", TraceFormat::Vscsi),
    ("twr", TraceFormat::Twr),
    ("sort", TraceFormat::Twr),
];

impl TraceFormat {
    /// The format `path`'s name announces, after any compression suffix:
    /// `.lcs`, `.oracleGeneral` (also `.oracleGeneral.bin`), `.vscsi`,
    /// `.twr` or `.sort` (Twitter), `.lis`; `None` where the name does not
    /// decide.
    pub fn from_path(path: &Path) -> Option<TraceFormat> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let mut parts: Vec<&str> = name.split('.').skip(1).collect();
        while parts.last().is_some_and(|p| COMPRESSED.contains(p)) {
            parts.pop();
        }
        // libCacheSim's traces are often `NAME.oracleGeneral.bin`.
        if parts.len() >= 2 && parts.last() == Some(&"bin") {
            parts.pop();
        }
        let ext = *parts.last()?;
        if ext == "lis" {
            return Some(TraceFormat::Lis);
        }
        EXTENSIONS.iter().find(|(e, _)| *e == ext).map(|&(_, f)| f)
    }

    /// `given`, or the format `path`'s name announces; an error asking for
    /// `--format` where neither decides.
    pub fn resolve(given: Option<TraceFormat>, path: &Path) -> Result<TraceFormat, OptionError> {
        given
            .or_else(|| TraceFormat::from_path(path))
            .ok_or_else(|| OptionError {
                what: "trace",
                value: path.display().to_string(),
                expected: format!(
                    "--format (one of {}): its name does not say (only .lcs, .oracleGeneral, .vscsi, .twr, .sort and .lis do, compressed or not)",
                    TraceFormat::names()
                ),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_decide_after_compression_suffixes() {
        let f = |name: &str| TraceFormat::from_path(Path::new(name));
        assert_eq!(f("dir/w01.oracleGeneral.zst"), Some(TraceFormat::Oracle));
        assert_eq!(f("w01.oracleGeneral.bin.zst"), Some(TraceFormat::Oracle));
        assert_eq!(f("x.lcs"), Some(TraceFormat::Lcs));
        assert_eq!(f("x.LCS.gz"), Some(TraceFormat::Lcs));
        assert_eq!(f("cluster52.sort.zst"), Some(TraceFormat::Twr));
        assert_eq!(f("a.twr"), Some(TraceFormat::Twr));
        assert_eq!(f("t.vscsi"), Some(TraceFormat::Vscsi));
        assert_eq!(f("oltp.lis.zst"), Some(TraceFormat::Lis));
        assert_eq!(f("w106.trace.xz"), None);
        assert_eq!(f("x.csv"), None);
        assert_eq!(f("lcs"), None);
        assert_eq!(f("x.zst"), None);
    }

    #[test]
    fn an_undecided_name_asks_for_format() {
        let err = TraceFormat::resolve(None, Path::new("w106.trace.xz"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("w106.trace.xz") && err.contains("--format"),
            "{err}"
        );
        let given = TraceFormat::resolve(Some(TraceFormat::Be32), Path::new("x.lcs"));
        assert_eq!(given, Ok(TraceFormat::Be32));
    }
}
