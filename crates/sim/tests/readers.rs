//! Trace readers: every format on small files written here, every
//! compression, the real samples in `../shared/traces/snia`, and the errors
//! bad input must produce (file, line or record, expected form).

use coopcache_sim::TraceError;
use coopcache_sim::trace::{self, Op, ReadOptions, Request, TraceFormat};
use std::io::Write;
use std::path::{Path, PathBuf};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn read_all(
    path: &Path,
    format: TraceFormat,
    opts: &ReadOptions,
) -> Result<Vec<Request>, TraceError> {
    trace::open(path, format, opts)?.requests.collect()
}

fn ids(path: &Path, format: TraceFormat) -> Vec<u64> {
    read_all(path, format, &ReadOptions::default())
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect()
}

fn error(path: &Path, format: TraceFormat, opts: &ReadOptions) -> String {
    read_all(path, format, opts).unwrap_err().to_string()
}

#[test]
fn lirs_skips_markers_and_blank_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "t.lirs", b"5\n*\n7\r\n\n  9  \n");
    assert_eq!(ids(&path, TraceFormat::Lirs), [5, 7, 9]);
}

#[test]
fn lis_expands_each_run_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "t.lis", b"10 3 0 0\n4 1\n");
    assert_eq!(ids(&path, TraceFormat::Lis), [10, 11, 12, 4]);
}

#[test]
fn be32_reads_big_endian_ids() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "t.be32", &[0, 0, 1, 0, 0xff, 0xff, 0xff, 0xff]);
    assert_eq!(ids(&path, TraceFormat::Be32), [256, u64::from(u32::MAX)]);
}

#[test]
fn oracle_reads_time_id_and_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = Vec::new();
    for (time, id, size) in [(1u32, 42u64, 4096u32), (2, u64::MAX, 1)] {
        bytes.extend_from_slice(&time.to_le_bytes());
        bytes.extend_from_slice(&id.to_le_bytes());
        bytes.extend_from_slice(&size.to_le_bytes());
        bytes.extend_from_slice(&(-1i64).to_le_bytes());
    }
    let path = write(dir.path(), "t.oracle", &bytes);
    let got = read_all(&path, TraceFormat::Oracle, &ReadOptions::default()).unwrap();
    assert_eq!((got[0].time, got[0].id, got[0].size), (1, 42, 4096));
    assert_eq!(got[1].id, u64::MAX);
}

#[test]
fn csv_maps_columns_and_numbers_clients() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "t.csv",
        b"ts,key,len,kind,host\n5,100,64,get,alpha\n6,101,8,SET,beta\n7,100,64,get,alpha\n",
    );
    let opts = ReadOptions {
        csv: Some(
            "time=1,id=2,size=3,op=4,client=5,header=yes"
                .parse()
                .unwrap(),
        ),
        ..ReadOptions::default()
    };
    let got = read_all(&path, TraceFormat::Csv, &opts).unwrap();
    let summary: Vec<_> = got
        .iter()
        .map(|r| (r.time, r.id, r.size, r.op, r.client))
        .collect();
    assert_eq!(
        summary,
        [
            (5, 100, 64, Op::Read, 0),
            (6, 101, 8, Op::Write, 1),
            (7, 100, 64, Op::Read, 0)
        ]
    );
}

#[test]
fn msr_splits_byte_ranges_into_blocks_per_device() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "t.csv",
        b"100,hm,0,Read,8191,2,5\n101,hm,1,Write,0,8192,5\n102,hm,0,Read,16384,0,5\n",
    );
    let got = read_all(&path, TraceFormat::Msr, &ReadOptions::default()).unwrap();
    let summary: Vec<_> = got.iter().map(|r| (r.id, r.client, r.op, r.time)).collect();
    // Bytes 8191..8193 touch blocks 0 and 1 of disk hm/0; disk hm/1 is
    // another client, whose block 0 has another id; a 0-byte I/O touches none.
    assert_eq!(
        summary,
        [
            (0, 0, Op::Read, 100),
            (1, 0, Op::Read, 100),
            (1 << 40, 1, Op::Write, 101)
        ]
    );
}

#[test]
fn tencent_reads_sectors_and_volumes() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "t.csv",
        b"1538323200,16,32,1,1058\n1538323199,0,1,0,7\n",
    );
    let got = read_all(&path, TraceFormat::Tencent, &ReadOptions::default()).unwrap();
    let summary: Vec<_> = got.iter().map(|r| (r.id, r.client, r.op)).collect();
    // Sectors 16..48 are bytes 8192..24576: blocks 1 and 2 of volume 1058.
    assert_eq!(
        summary,
        [(1, 0, Op::Write), (2, 0, Op::Write), (1 << 40, 1, Op::Read)]
    );
}

#[test]
fn every_compression_is_read_transparently() {
    let dir = tempfile::tempdir().unwrap();
    let text: Vec<u8> = (0..5000u32)
        .flat_map(|i| format!("{}\n", i % 97).into_bytes())
        .collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&text).unwrap();
    let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
    bz.write_all(&text).unwrap();
    let compressed = [
        ("t.gz", gz.finish().unwrap()),
        ("t.bz2", bz.finish().unwrap()),
        ("t.zst", zstd::encode_all(&text[..], 3).unwrap()),
        ("t.xz", {
            let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 6);
            xz.write_all(&text).unwrap();
            xz.finish().unwrap()
        }),
    ];
    let plain = ids(&write(dir.path(), "t.txt", &text), TraceFormat::Lirs);
    assert_eq!(plain.len(), 5000);
    for (name, bytes) in compressed {
        assert_eq!(
            ids(&write(dir.path(), name, &bytes), TraceFormat::Lirs),
            plain,
            "{name}"
        );
    }
}

#[test]
fn bad_lines_name_the_file_the_line_and_the_form() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8], TraceFormat, &[&str]); 6] = [
        (
            "a.lirs",
            b"1\n2\nthree\n4\n",
            TraceFormat::Lirs,
            &["a.lirs:3", "`three`", "unsigned integer block id"],
        ),
        (
            "b.lis",
            b"1 2\n5 0\n",
            TraceFormat::Lis,
            &["b.lis:2", "count of 0"],
        ),
        (
            "c.msr",
            b"1,hm,0,Trim,0,512,1\n",
            TraceFormat::Msr,
            &["c.msr:1", "`Trim`", "Read|Write"],
        ),
        (
            "d.tc",
            b"1,0,8,0,1\n1,0,8,2,1\n",
            TraceFormat::Tencent,
            &["d.tc:2", "is_write 2"],
        ),
        (
            "e.msr",
            b"1,hm,0,Read,0\n",
            TraceFormat::Msr,
            &["e.msr:1", "no size"],
        ),
        (
            "f.lirs",
            b"99999999999999999999999\n",
            TraceFormat::Lirs,
            &["f.lirs:1"],
        ),
    ];
    for (name, text, format, needles) in cases {
        let msg = error(
            &write(dir.path(), name, text),
            format,
            &ReadOptions::default(),
        );
        for needle in needles {
            assert!(
                msg.contains(needle),
                "{name}: `{needle}` missing from: {msg}"
            );
        }
    }
}

#[test]
fn csv_errors_name_the_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "t.csv", b"1,10\n2\n");
    let opts = ReadOptions {
        csv: Some("time=1,id=2".parse().unwrap()),
        ..ReadOptions::default()
    };
    let msg = error(&path, TraceFormat::Csv, &opts);
    assert!(
        msg.contains("t.csv:2") && msg.contains("no column 2"),
        "{msg}"
    );
}

#[test]
fn truncated_binary_records_are_reported_not_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let msg = error(
        &write(dir.path(), "t.be32", &[0, 0, 0, 1, 0, 0]),
        TraceFormat::Be32,
        &ReadOptions::default(),
    );
    assert!(
        msg.contains("record 2 is truncated (2 of 4 bytes)"),
        "{msg}"
    );
    let msg = error(
        &write(dir.path(), "t.oracle", &[0; 30]),
        TraceFormat::Oracle,
        &ReadOptions::default(),
    );
    assert!(
        msg.contains("record 2 is truncated (6 of 24 bytes)"),
        "{msg}"
    );
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let msg = error(
        Path::new("/nonexistent/trace.gz"),
        TraceFormat::Lirs,
        &ReadOptions::default(),
    );
    assert!(msg.contains("/nonexistent/trace.gz"), "{msg}");
}

#[test]
fn a_corrupt_compressed_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "t.gz",
        &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3],
    );
    let msg = error(&path, TraceFormat::Lirs, &ReadOptions::default());
    assert!(msg.contains("t.gz"), "{msg}");
}

/// The real SNIA samples beside the project, read through each reader.
#[test]
fn real_samples_read_completely() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/snia");
    if !dir.exists() {
        assert!(
            std::env::var_os("COOPCACHE_ALLOW_SKIP").is_some(),
            "no samples at {}: the shared traces must be beside the checkout (../shared), or set COOPCACHE_ALLOW_SKIP=1 to skip",
            dir.display()
        );
        eprintln!("skipping: no samples at {}", dir.display());
        return;
    }
    let msr = read_all(
        &dir.join("msr-cambridge1-sample.csv"),
        TraceFormat::Msr,
        &ReadOptions::default(),
    )
    .unwrap();
    assert!(
        msr.len() >= 1000,
        "{} block requests from 1,000 MSR lines",
        msr.len()
    );
    let tencent = read_all(
        &dir.join("tencent-block-sample.csv.bz2"),
        TraceFormat::Tencent,
        &ReadOptions::default(),
    )
    .unwrap();
    let volumes = tencent.iter().map(|r| r.client).max().unwrap() + 1;
    assert_eq!(volumes, 2038, "the Tencent sample's volumes");
    let systor = ReadOptions {
        csv: Some("time=1,op=3,id=5,size=6,header=yes".parse().unwrap()),
        ..ReadOptions::default()
    };
    let lines = read_all(
        &dir.join("systor17-traces-sample.csv.gz"),
        TraceFormat::Csv,
        &systor,
    )
    .unwrap();
    assert_eq!(lines.len(), 999, "1,000 lines less the header");
    let photo = ReadOptions {
        csv: Some("time=1,id=2,size=5,sep=space,ids=hash".parse().unwrap()),
        ..ReadOptions::default()
    };
    let photos = read_all(
        &dir.join("tencent-photo-sample.csv.bz2"),
        TraceFormat::Csv,
        &photo,
    )
    .unwrap();
    assert_eq!(photos.len(), 10_000);
}
