//! libCacheSim's formats (lcs v1-v8, txt, vscsi v1 and v2) and Twitter's
//! cluster traces (twr) on small files written here, the errors bad input
//! must produce, and format detection by file name.

use coopcache_sim::TraceError;
use coopcache_sim::trace::{self, Op, ReadOptions, Request, TraceFormat};
use std::path::{Path, PathBuf};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn read_all(path: &Path, format: TraceFormat) -> Result<Vec<Request>, TraceError> {
    trace::open(path, format, &ReadOptions::default())?
        .requests
        .collect()
}

fn error(path: &Path, format: TraceFormat) -> String {
    read_all(path, format).unwrap_err().to_string()
}

/// An lcs header of `version` (libCacheSim's `lcs_trace_header_t`).
fn lcs_header(version: u64) -> Vec<u8> {
    let mut h = vec![0u8; 8192];
    h[..8].copy_from_slice(&0x1234_5678_9abc_def0u64.to_le_bytes());
    h[8..16].copy_from_slice(&version.to_le_bytes());
    h[8184..].copy_from_slice(&0x1234_5678_9abc_def0u64.to_le_bytes());
    h
}

/// One lcs record of `version` for `r`, with `op` as libCacheSim's code.
fn lcs_record(version: u64, r: &Request, op: u8) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&(r.time as u32).to_le_bytes());
    b.extend_from_slice(&r.id.to_le_bytes());
    if version >= 3 {
        b.extend_from_slice(&i64::from(r.size).to_le_bytes());
    } else {
        b.extend_from_slice(&r.size.to_le_bytes());
    }
    if version >= 2 {
        b.extend_from_slice(&(u32::from(op) | (r.client << 8)).to_le_bytes());
    }
    if version >= 3 {
        b.extend_from_slice(&3600u32.to_le_bytes());
    }
    b.extend_from_slice(&(-1i64).to_le_bytes());
    let features: i32 = [0, 0, 0, 0, 1, 2, 4, 8, 16][version as usize];
    for f in 0..features {
        b.extend_from_slice(&f.to_le_bytes());
    }
    b
}

#[test]
fn lcs_reads_every_version() {
    let dir = tempfile::tempdir().unwrap();
    let requests = [
        Request {
            id: 7,
            time: 10,
            size: 4096,
            client: 3,
            op: Op::Read,
        },
        Request {
            id: u64::MAX,
            time: 11,
            size: 1,
            client: 0xff_ffff,
            op: Op::Write,
        },
        Request {
            id: 7,
            time: 12,
            size: 4096,
            client: 0,
            op: Op::Delete,
        },
    ];
    let codes = [2u8, 6, 9]; // gets, replace, delete
    for version in 1..=8u64 {
        let mut bytes = lcs_header(version);
        for (r, &op) in requests.iter().zip(&codes) {
            bytes.extend(lcs_record(version, r, op));
        }
        let path = write(dir.path(), &format!("v{version}.lcs"), &bytes);
        let got = read_all(&path, TraceFormat::Lcs).unwrap();
        if version == 1 {
            // Version 1 has neither ops nor tenants.
            let plain: Vec<Request> = requests
                .iter()
                .map(|r| Request {
                    client: 0,
                    op: Op::Read,
                    ..*r
                })
                .collect();
            assert_eq!(got, plain, "v1");
        } else {
            assert_eq!(got, requests, "v{version}");
        }
    }
}

#[test]
fn lcs_errors_name_the_header_or_record() {
    let dir = tempfile::tempdir().unwrap();
    let short = write(dir.path(), "short.lcs", &lcs_header(1)[..100]);
    let err = error(&short, TraceFormat::Lcs);
    assert!(
        err.contains("short.lcs") && err.contains("100 of 8192"),
        "{err}"
    );

    let mut bad_magic = lcs_header(1);
    bad_magic[0] = 0;
    let path = write(dir.path(), "magic.lcs", &bad_magic);
    assert!(error(&path, TraceFormat::Lcs).contains("start magic"));

    let path = write(dir.path(), "v9.lcs", &lcs_header(9));
    let err = error(&path, TraceFormat::Lcs);
    assert!(err.contains("version 9"), "{err}");

    let r = Request {
        id: 1,
        size: 1,
        ..Request::default()
    };
    let mut truncated = lcs_header(2);
    truncated.extend(lcs_record(2, &r, 1));
    truncated.extend(&lcs_record(2, &r, 1)[..10]);
    let path = write(dir.path(), "cut.lcs", &truncated);
    let err = error(&path, TraceFormat::Lcs);
    assert!(
        err.contains("record 2") && err.contains("10 of 28 bytes"),
        "{err}"
    );

    let mut bad_op = lcs_header(2);
    bad_op.extend(lcs_record(2, &r, 200));
    let path = write(dir.path(), "op.lcs", &bad_op);
    let err = error(&path, TraceFormat::Lcs);
    assert!(err.contains("record 1") && err.contains("op 200"), "{err}");

    // Version 3 sizes are signed 64-bit: a negative one is refused.
    let mut bad_size = lcs_header(3);
    let mut record = lcs_record(3, &r, 1);
    record[12..20].copy_from_slice(&(-5i64).to_le_bytes());
    bad_size.extend(record);
    let path = write(dir.path(), "size.lcs", &bad_size);
    assert!(error(&path, TraceFormat::Lcs).contains("object size -5"));
}

#[test]
fn txt_reads_decimal_and_hex_ids() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "t.txt", b"5\n\n0x1f\n  9 \r\n");
    let ids: Vec<u64> = read_all(&path, TraceFormat::Txt)
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ids, [5, 31, 9]);
    let bad = write(dir.path(), "bad.txt", b"1\n*\n");
    let err = error(&bad, TraceFormat::Txt);
    assert!(err.contains("bad.txt:2") && err.contains("`*`"), "{err}");
}

/// A vscsi record of `version` (libCacheSim's `trace_v1_record_t` and
/// `trace_v2_record_t`, naturally aligned).
fn vscsi_record(version: u8, lbn: u64, len: u32, ts: u64) -> Vec<u8> {
    let ver = u16::from(version) << 8;
    let mut b = Vec::new();
    if version == 1 {
        b.extend_from_slice(&9u32.to_le_bytes()); // sn
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes()); // nSG
        b.extend_from_slice(&0x28u16.to_le_bytes()); // cmd: READ(10)
        b.extend_from_slice(&ver.to_le_bytes());
    } else {
        b.extend_from_slice(&0x2au16.to_le_bytes()); // cmd: WRITE(10)
        b.extend_from_slice(&ver.to_le_bytes());
        b.extend_from_slice(&9u32.to_le_bytes());
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
    }
    b.extend_from_slice(&lbn.to_le_bytes());
    b.extend_from_slice(&ts.to_le_bytes());
    if version == 2 {
        b.extend_from_slice(&250u64.to_le_bytes()); // response time
    }
    b
}

#[test]
fn vscsi_reads_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    for version in [1u8, 2] {
        let mut bytes = Vec::new();
        for (lbn, len, ts) in [
            (100u64, 4096u32, 1_500_000u64),
            (7, 512, 2_000_001),
            (100, 4096, 9_999_999),
        ] {
            bytes.extend(vscsi_record(version, lbn, len, ts));
        }
        let path = write(dir.path(), &format!("v{version}.vscsi"), &bytes);
        let got: Vec<(u64, u32, u64, Op)> = read_all(&path, TraceFormat::Vscsi)
            .unwrap()
            .iter()
            .map(|r| (r.id, r.size, r.time, r.op))
            .collect();
        // Microseconds to seconds; READ(10) in the v1 records, WRITE(10) in
        // the v2 ones (as libCacheSim's wheel 0.3.5 reads them).
        let op = if version == 1 { Op::Read } else { Op::Write };
        assert_eq!(
            got,
            [(100, 4096, 1, op), (7, 512, 2, op), (100, 4096, 9, op)],
            "v{version}"
        );
    }
    // One record is enough to tell the version.
    let one = write(dir.path(), "one.vscsi", &vscsi_record(1, 5, 1, 0));
    assert_eq!(read_all(&one, TraceFormat::Vscsi).unwrap().len(), 1);
    // An empty file is no trace (it names no version either).
    let empty = write(dir.path(), "empty.vscsi", b"");
    let err = read_all(&empty, TraceFormat::Vscsi).unwrap_err();
    assert!(matches!(err, TraceError::Empty { .. }), "{err}");
}

#[test]
fn vscsi_errors_name_the_version_or_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "junk.vscsi", &[0x55; 100]);
    let err = error(&path, TraceFormat::Vscsi);
    assert!(
        err.contains("junk.vscsi") && err.contains("version"),
        "{err}"
    );
    let mut cut = vscsi_record(2, 1, 1, 0);
    cut.extend(vscsi_record(2, 2, 1, 0));
    cut.extend(&vscsi_record(2, 3, 1, 0)[..7]);
    let path = write(dir.path(), "cut.vscsi", &cut);
    let err = error(&path, TraceFormat::Vscsi);
    assert!(
        err.contains("record 3") && err.contains("7 of 40 bytes"),
        "{err}"
    );
}

#[test]
fn twr_sizes_objects_by_key_and_value_and_maps_operations() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "c.twr",
        b"0,keyA,10,100,c1,get,0\n\
          0,keyB,8,0,c2,get,0\n\
          1,keyB,8,50,c2,set,3600\n\
          2,keyA,10,120,c1,cas,0\n\
          3,keyA,10,0,c3,delete,0\n\
          4,keyB,8,50,c2,gets,0\n",
    );
    let got = read_all(&path, TraceFormat::Twr).unwrap();
    let summary: Vec<(u64, u32, u32, Op)> = got
        .iter()
        .map(|r| (r.time, r.size, r.client, r.op))
        .collect();
    // The get of keyB with value size 0 is skipped, as libCacheSim does.
    assert_eq!(
        summary,
        [
            (0, 110, 0, Op::Read),
            (1, 58, 1, Op::Write),
            (2, 130, 0, Op::Write),
            (3, 10, 2, Op::Delete),
            (4, 58, 1, Op::Read),
        ]
    );
    assert_eq!(got[0].id, got[2].id);
    assert_eq!(got[1].id, got[4].id);
    assert_ne!(got[0].id, got[1].id);
}

#[test]
fn twr_errors_name_the_line_and_the_form() {
    let dir = tempfile::tempdir().unwrap();
    for (body, needle) in [
        (
            &b"0,k,1,1,c,get,0\n0,k,1,1,c,flush,0\n"[..],
            "operation `flush`",
        ),
        (b"0,k,1,1,c,get\n", "6 fields"),
        (b"x,k,1,1,c,get,0\n", "timestamp `x`"),
        (b"0,k,1,4294967295,c,set,0\n", "4 GiB"),
    ] {
        let path = write(dir.path(), "bad.twr", body);
        let err = error(&path, TraceFormat::Twr);
        assert!(err.contains("bad.twr:") && err.contains(needle), "{err}");
        assert!(err.contains("expected `timestamp,key"), "{err}");
    }
}

#[test]
fn new_formats_parse_by_name_and_say_whether_they_have_sizes() {
    let opts = ReadOptions::default();
    for (name, sized) in [
        ("lcs", true),
        ("txt", false),
        ("vscsi", true),
        ("twr", true),
    ] {
        let f: TraceFormat = name.parse().unwrap();
        assert_eq!(f.name(), name);
        assert_eq!(f.has_sizes(&opts), sized, "{name}");
    }
    let err = "nope".parse::<TraceFormat>().unwrap_err().to_string();
    assert!(err.contains("lcs, txt, vscsi, twr"), "{err}");
}
