#!/usr/bin/env python3
"""Checks `coopcache trace convert` against libCacheSim: converts traces to
oracleGeneral and lcs (v1 and v2), has libCacheSim read each converted file
(its own readers, through its Python wheel) and replay it through LRU,
FIFO and Belady in byte caches, and compares the miss counts with
`coopcache sim` on the same converted file. libCacheSim's Belady takes
each request's next access from the file, coopcache's computes its own:
equal counts check the next accesses written. Also checks that libCacheSim reads as many
requests as coopcache wrote.

Not part of CI (it needs libCacheSim's wheel from PyPI):

    python3 -m venv /tmp/lcs-venv && /tmp/lcs-venv/bin/pip install libcachesim==0.3.5
    cargo build --release -p coopcache
    /tmp/lcs-venv/bin/python scripts/check-convert-libcachesim.py target/release/coopcache ../shared/traces

It also writes small vscsi files of both versions (with READ, WRITE and
other SCSI commands), reads them with libCacheSim's vscsi reader and
compares id, size, time and op with what coopcache reads (converted to lcs
v2, which keeps ops).

Prints one line per trace, format, policy and size, and exits 1 on any
difference.
"""

import json
import os
import random
import struct
import subprocess
import sys
import tempfile

import libcachesim as lcs

# name -> (file under the traces folder, coopcache's input options, cache
# sizes in bytes). Traces without sizes are converted with size 1, so
# bytes are objects there.
TRACES = {
    "cs": ("cs.trace.gz", ["--format", "lirs"], [100, 500]),
    "sprite": ("sprite.trace.gz", ["--format", "lirs"], [500, 2000]),
    "tencent-photo": (
        "snia/tencent-photo-sample.csv.bz2",
        ["--format", "csv", "--csv-columns", "sep=space,id=2,size=5,ids=hash"],
        [1 << 20, 16 << 20],
    ),
}
TARGETS = [
    ("oracle", [], "oracleGeneral", lcs.TraceType.ORACLE_GENERAL_TRACE),
    ("lcs", ["--lcs-version", "1"], "lcs", lcs.TraceType.LCS_TRACE),
    ("lcs", ["--lcs-version", "2"], "v2.lcs", lcs.TraceType.LCS_TRACE),
]
# Belady reads each record's next access from the file: it checks those.
POLICIES = {"lru": lcs.LRU, "fifo": lcs.FIFO, "belady": lcs.Belady}


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def coopcache_misses(binary, path, policy, sizes):
    """Object misses per size from `coopcache sim` on a converted file
    (its name says the format)."""
    out = run(
        [binary, "sim", path, "--policy", policy, "--cache-size", ",".join(f"{s}B" for s in sizes), "--json"]
    )
    return [json.loads(line) for line in out.splitlines()]


def libcachesim_misses(path, trace_type, policy, size):
    """Requests libCacheSim replays (its readers skip size 0, as
    coopcache's byte caches do) and its misses."""
    n = sum(1 for _ in lcs.TraceReader(path, trace_type))
    reader = lcs.TraceReader(path, trace_type)
    cache = POLICIES[policy](size, reader=reader)
    miss_ratio, _ = cache.process_trace(reader)
    return n, round(miss_ratio * n)


# lcs op codes (libCacheSim's req_op_e) of coopcache's read, write.
LCS_OPS = {1: "read", 3: "write", 9: "delete"}
LIBCACHESIM_OPS = {"OP_READ": "read", "OP_WRITE": "write", "OP_INVALID": "read"}


def check_vscsi(binary, tmp):
    """libCacheSim's and coopcache's readings of the same vscsi files."""
    rng = random.Random(7)
    cmds = [0x28, 0x2A, 0x88, 0x8A, 0xA8, 0xAA, 0x08, 0x12]
    rows = [(rng.choice(cmds), rng.randrange(1 << 40), rng.randrange(1, 1 << 20), rng.randrange(1 << 42)) for _ in range(500)]
    failed = False
    for version in (1, 2):
        path = os.path.join(tmp, f"v{version}.vscsi")
        with open(path, "wb") as f:
            for cmd, lbn, size, ts in rows:
                if version == 1:
                    f.write(struct.pack("<IIIHHQQ", 9, size, 1, cmd, 1 << 8, lbn, ts))
                else:
                    f.write(struct.pack("<HHIIIQQQ", cmd, 2 << 8, 9, size, 1, lbn, ts, 99))
        theirs = [
            (r.obj_id, r.obj_size, r.clock_time, LIBCACHESIM_OPS[r.op.name])
            for r in lcs.TraceReader(path, lcs.TraceType.VSCSI_TRACE)
        ]
        out = os.path.join(tmp, f"v{version}.lcs")
        run([binary, "trace", "convert", path, out, "--to", "lcs", "--lcs-version", "2"])
        data = open(out, "rb").read()[8192:]
        ours = []
        for i in range(0, len(data), 28):
            time, obj, size, word, _ = struct.unpack_from("<IQIIq", data, i)
            ours.append((obj, size, time, LCS_OPS[word & 0xFF]))
        ok = ours == theirs
        failed |= not ok
        print(f"vscsi v{version}: {len(theirs)} requests read by libCacheSim, {len(ours)} by coopcache  {'ok' if ok else 'DIFFERENT'}")
    return failed


def main():
    binary, traces = sys.argv[1], sys.argv[2]
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        failed |= check_vscsi(binary, tmp)
        for name, (file, opts, sizes) in TRACES.items():
            for to, extra, ext, trace_type in TARGETS:
                out = os.path.join(tmp, f"{name}.{ext}")
                run([binary, "trace", "convert", os.path.join(traces, file), out, "--to", to, *opts, *extra])
                for policy in POLICIES:
                    rows = coopcache_misses(binary, out, policy, sizes)
                    for size, row in zip(sizes, rows):
                        n, misses = libcachesim_misses(out, trace_type, policy, size)
                        ok = n == row["requests"] and misses == row["misses"]
                        failed |= not ok
                        print(
                            f"{name:14} {ext:13} {policy:5} {size:>9}B  requests {n:>7} / {row['requests']:>7}"
                            f"  misses libCacheSim {misses:>7} coopcache {row['misses']:>7}  {'ok' if ok else 'DIFFERENT'}"
                        )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
