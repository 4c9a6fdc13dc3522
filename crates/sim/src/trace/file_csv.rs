//! File-request traces for attribute caches: delimited text with a header
//! naming its columns, and the Tencent photo sample's sizes as a real size
//! distribution.

use super::blocks::{excerpt, parse_u64};
use super::csv_map::{csv_error, csv_reader, parse_op};
use super::{Op, TraceError, decompress};
use coopcache_core::attr::{Access, FileRequest, FileType};
use std::collections::HashMap;
use std::path::Path;

const FILE_FORM: &str = "a header naming columns file, type, size and optionally offset, length, op, client; \
     type inode|directory|datafile|executable, size/offset/length unsigned bytes, op read|write";

/// Files a trace may name: the attribute cache's block keys hold 37 bits.
const MAX_FILES: usize = 1 << 37;

/// Where each named column is (0-based).
struct Columns {
    file: usize,
    kind: usize,
    size: usize,
    offset: Option<usize>,
    len: Option<usize>,
    op: Option<usize>,
    client: Option<usize>,
}

impl Columns {
    fn from_header(header: &csv::ByteRecord) -> Result<Columns, String> {
        let find = |name: &str| {
            header
                .iter()
                .position(|h| h.trim_ascii().eq_ignore_ascii_case(name.as_bytes()))
        };
        let need =
            |name: &str| find(name).ok_or_else(|| format!("the header has no `{name}` column"));
        Ok(Columns {
            file: need("file")?,
            kind: need("type")?,
            size: need("size")?,
            offset: find("offset"),
            len: find("length"),
            op: find("op"),
            client: find("client"),
        })
    }
}

/// Reads a file-request trace: delimited text (comma, or tab if the header
/// has tabs) whose header names its columns, in any order:
///
/// | column | meaning | default |
/// | --- | --- | --- |
/// | `file` | the file, any label (numbered by first appearance) | required |
/// | `type` | `inode`, `directory`, `datafile` or `executable` (or `i`, `d`, `f`, `x`) | required |
/// | `size` | the file's size in bytes | required |
/// | `offset` | first byte requested | 0 |
/// | `length` | bytes requested | the file's size |
/// | `op` | `read` or `write` (`r`, `w`, `get`, `put`, `0`, `1`) | read |
/// | `client` | who made it, any label (numbered by first appearance) | one client |
///
/// Other columns are ignored. The whole trace is read into memory (56
/// bytes a request), since the stack-distance pass reads it once per
/// sub-cache stream.
pub fn read_file_requests(path: &Path) -> Result<Vec<FileRequest>, TraceError> {
    let mut opened = decompress::open(path)?;
    let sep = {
        use std::io::BufRead;
        let head = opened.reader.fill_buf().map_err(|source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let first_line = head.split(|&b| b == b'\n').next().unwrap_or_default();
        if first_line.contains(&b'\t') {
            b'\t'
        } else {
            b','
        }
    };
    let mut records = csv_reader(opened.reader, sep, true);
    let line_error = |line: u64, problem: String| TraceError::Line {
        path: path.to_path_buf(),
        line,
        problem,
        expected: FILE_FORM,
    };
    let header = records
        .byte_headers()
        .map_err(|e| csv_error(path, e))?
        .clone();
    let columns = Columns::from_header(&header).map_err(|p| line_error(1, p))?;
    let mut files: HashMap<Vec<u8>, u64> = HashMap::new();
    let mut clients: HashMap<Vec<u8>, u32> = HashMap::new();
    let mut out = Vec::new();
    let mut record = csv::ByteRecord::new();
    while records
        .read_byte_record(&mut record)
        .map_err(|e| csv_error(path, e))?
    {
        let line = record.position().map_or(0, |p| p.line());
        let request =
            parse(&record, &columns, &mut files, &mut clients).map_err(|p| line_error(line, p))?;
        out.push(request);
    }
    Ok(out)
}

fn parse(
    record: &csv::ByteRecord,
    c: &Columns,
    files: &mut HashMap<Vec<u8>, u64>,
    clients: &mut HashMap<Vec<u8>, u32>,
) -> Result<FileRequest, String> {
    let field = |i: usize, name: &str| {
        record
            .get(i)
            .map(<[u8]>::trim_ascii)
            .ok_or_else(|| format!("the line has no `{name}` field (column {})", i + 1))
    };
    let number = |i: usize, name: &str| {
        let text = field(i, name)?;
        parse_u64(text)
            .ok_or_else(|| format!("{name} {} is not an unsigned integer", excerpt(text)))
    };
    let type_text = field(c.kind, "type")?;
    let kind = FileType::parse(&String::from_utf8_lossy(type_text))
        .ok_or_else(|| format!("type {} is not a file type", excerpt(type_text)))?;
    let file_size = number(c.size, "size")?;
    let offset = c
        .offset
        .map(|i| number(i, "offset"))
        .transpose()?
        .unwrap_or(0);
    let len = c
        .len
        .map(|i| number(i, "length"))
        .transpose()?
        .unwrap_or(file_size);
    let access = match c.op {
        None => Access::Read,
        Some(i) => {
            let text = field(i, "op")?;
            match parse_op(text) {
                Some(Op::Read) => Access::Read,
                Some(Op::Write) => Access::Write,
                Some(Op::Delete) | None => {
                    return Err(format!("op {} is neither read nor write", excerpt(text)));
                }
            }
        }
    };
    let label = field(c.file, "file")?;
    let next = files.len();
    if next >= MAX_FILES && !files.contains_key(label) {
        return Err(format!("more than {MAX_FILES} distinct files"));
    }
    let file = *files.entry(label.to_vec()).or_insert(next as u64);
    let client = match c.client {
        None => 0,
        Some(i) => {
            let label = field(i, "client")?;
            let next =
                u32::try_from(clients.len()).map_err(|_| "more than 2^32 clients".to_string())?;
            *clients.entry(label.to_vec()).or_insert(next)
        }
    };
    Ok(FileRequest {
        client,
        file,
        kind,
        file_size,
        offset,
        len,
        access,
    })
}

const PHOTO_FORM: &str =
    "space-separated `time photo_id type size_class size ...` with size an unsigned integer";

/// The sizes of the Tencent photo cache sample (`tencent-photo-sample.csv`,
/// space separated, the size in bytes fifth): a real object size
/// distribution for generators. Zero sizes are skipped.
pub fn photo_sizes(path: &Path) -> Result<Vec<u64>, TraceError> {
    use std::io::BufRead;
    let opened = decompress::open(path)?;
    let mut sizes = Vec::new();
    for (n, line) in opened.reader.lines().enumerate() {
        let line = line.map_err(|source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let size = line.split_ascii_whitespace().nth(4);
        let size = size
            .and_then(|s| parse_u64(s.as_bytes()))
            .ok_or_else(|| TraceError::Line {
                path: path.to_path_buf(),
                line: n as u64 + 1,
                problem: format!("no size in field 5 of {}", excerpt(line.as_bytes())),
                expected: PHOTO_FORM,
            })?;
        if size > 0 {
            sizes.push(size);
        }
    }
    if sizes.is_empty() {
        return Err(TraceError::Line {
            path: path.to_path_buf(),
            line: 0,
            problem: "no photo has a size above zero".into(),
            expected: PHOTO_FORM,
        });
    }
    Ok(sizes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    #[test]
    fn reads_named_columns_in_any_order_with_defaults() {
        let f = file(
            "op,size,file,type,client,offset\nw,8192,/etc/passwd,datafile,alice,4096\nr,128,i42,inode,bob,0\n,1000,/bin/ls,x,alice,0\n",
        );
        let reqs = read_file_requests(f.path());
        // An empty op is malformed, not a read.
        let err = reqs.unwrap_err().to_string();
        assert!(err.contains(":4:") && err.contains("op ``"), "{err}");

        let f = file(
            "size,file,type,client,offset\n8192,/etc/passwd,datafile,alice,4096\n128,i42,inode,bob,0\n8192,/etc/passwd,data,bob,0\n",
        );
        let reqs = read_file_requests(f.path()).unwrap();
        assert_eq!(reqs.len(), 3);
        assert_eq!(
            (reqs[0].file, reqs[0].client, reqs[0].offset, reqs[0].len),
            (0, 0, 4096, 8192)
        );
        assert_eq!(
            (reqs[1].kind, reqs[1].file, reqs[1].client),
            (FileType::Inode, 1, 1)
        );
        assert_eq!((reqs[2].file, reqs[2].access), (0, Access::Read));
    }

    #[test]
    fn errors_name_the_line_and_the_bad_field() {
        let f = file("file,type,size\na,datafile,12\nb,socket,3\n");
        let err = read_file_requests(f.path()).unwrap_err().to_string();
        assert!(
            err.contains(":3:") && err.contains("type `socket`"),
            "{err}"
        );
        let f = file("file,kind,size\na,datafile,12\n");
        let err = read_file_requests(f.path()).unwrap_err().to_string();
        assert!(err.contains("no `type` column"), "{err}");
        let f = file("file\ttype\tsize\na\tinode\t-1\n");
        let err = read_file_requests(f.path()).unwrap_err().to_string();
        assert!(err.contains("size `-1`"), "{err}");
    }

    #[test]
    fn photo_sizes_are_the_fifth_field() {
        let f = file(
            "201602 abc 5 m 12903 1 PHONE 1\n201602 def 0 a 0 0 PC 25\n\n201602 x 1 b 7 1 PC 0\n",
        );
        assert_eq!(photo_sizes(f.path()).unwrap(), vec![12903, 7]);
        let f = file("201602 abc 5 m\n");
        let err = photo_sizes(f.path()).unwrap_err().to_string();
        assert!(err.contains(":1:") && err.contains("field 5"), "{err}");
    }
}
