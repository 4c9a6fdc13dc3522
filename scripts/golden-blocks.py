#!/usr/bin/env python3
"""Golden block-mode miss counts from libCacheSim for the policies added after
the shared goldens, for crates/sim/tests/golden.rs.

`../shared/traces/golden-libcachesim.csv` (libCacheSim at commit aa0fc40)
covers the first eight policies. This script replays the same six traces at
the same cache sizes (counting objects: every request has size 1) through
libCacheSim's PyPI wheel for the policies named in POLICIES, and writes the
same columns, `trace,policy,cache_size_objects,requests,misses`. CI does not
need it: the output is committed. To regenerate:

    python3 -m venv /tmp/lcs-venv && /tmp/lcs-venv/bin/pip install libcachesim==0.3.5
    /tmp/lcs-venv/bin/python scripts/golden-blocks.py ../shared/traces \
        > crates/sim/tests/golden-blocks-libcachesim.csv

The traces are parsed here as coopcache reads them (see the traces' README):
LIRS text (one block per line, `*` skipped), w106 (big-endian u32, xz) and
OLTP (`start count ...`: blocks start..start+count-1, zstd, decompressed
with the `zstd` command).
"""

import csv
import gzip
import lzma
import struct
import subprocess
import sys

import libcachesim as lcs

from golden_policies import NEEDS_FUTURE, emit, isolated, next_uses, policies, selection

# The policies added after the shared goldens (which cover lru, fifo, clock,
# sieve, arc, s3fifo, 2q and lirs), every knobbed spec, and these admission
# rows: (coopcache policy, admissioners).
POLICIES = policies(
    ["lfu", "belady", "slru", "s3fifo-v1", "lfuda", "gdsf", "wtinylfu", "qdlp", "mq", "lecar", "lhd"],
    [("lru", ["bloom"]), ("arc", ["bloom"]), ("s3fifo", ["bloom"])],
)

FILES = {
    "sprite": "sprite.trace.gz",
    "cs": "cs.trace.gz",
    "ps": "ps.trace.gz",
    "multi2": "multi2.trace.gz",
    "w106": "w106.trace.xz",
    "OLTP": "oltp.lis.zst",
}

TRACE_ORDER = list(FILES)


def read(path):
    """Block ids in request order."""
    if path.endswith(".gz"):
        with gzip.open(path, "rt") as f:
            return [int(line) for line in f if line.strip() and line.strip() != "*"]
    if path.endswith(".xz"):
        data = lzma.open(path).read()
        return list(struct.unpack(f">{len(data) // 4}I", data))
    text = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True, text=True).stdout
    blocks = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 2:
            start, count = int(fields[0]), int(fields[1])
            blocks.extend(range(start, start + count))
    return blocks


def run(policy, cache_size, blocks):
    params = lcs.CommonCacheParams(cache_size=cache_size, default_ttl=86400 * 300, hashpower=24,
                                   consider_obj_metadata=False)
    cache = POLICIES[policy](params)
    req = lcs.Request()
    req.obj_size = 1
    misses = 0
    future = next_uses(blocks) if policy in NEEDS_FUTURE else None
    for i, block in enumerate(blocks):
        req.obj_id = block
        if future is not None:
            req.next_access_vtime = future[i]
        if not cache.get(req):
            misses += 1
    return len(blocks), misses


def main():
    header = "trace,policy,cache_size_objects,requests,misses"
    traces, policies, merge, kept = selection(sys.argv, header, POLICIES)
    sizes = {}
    with open(f"{traces}/golden-libcachesim.csv") as f:
        for row in csv.DictReader(f):
            sizes.setdefault(row["trace"], set()).add(int(row["cache_size_objects"]))
    if not merge:
        print(header)
    rows = []
    for name, file in FILES.items():
        blocks = read(f"{traces}/{file}")
        for policy in policies:
            for size in sorted(sizes[name]):
                got = isolated(run, policy, size, blocks)
                if got is None:
                    print(f"{name} {policy} {size}: libCacheSim crashed or timed out, no row", file=sys.stderr)
                    continue
                n, misses = got
                row = f"{name},{policy},{size},{n},{misses}"
                rows.append(row)
                if not merge:
                    print(row, flush=True)
    emit(header, rows, merge, kept, POLICIES, TRACE_ORDER)


if __name__ == "__main__":
    main()
