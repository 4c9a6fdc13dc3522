#!/usr/bin/env python3
"""Golden byte-mode miss counts from libCacheSim, for crates/sim/tests/golden_sizes.rs.

Replays real traces with object sizes through libCacheSim's policies in byte
caches (each object takes its size, evict until the new one fits, objects
the policy cannot insert are misses) and writes, per trace, policy and cache
size: requests, object misses, bytes requested and bytes missed. Requests of
size 0 are left out, as libCacheSim's trace readers do.

libCacheSim comes from its PyPI wheel (the C library with Python bindings);
CI does not need it, the output is committed. To regenerate:

    python3 -m venv /tmp/lcs-venv && /tmp/lcs-venv/bin/pip install libcachesim==0.3.5
    /tmp/lcs-venv/bin/python scripts/golden-sizes.py ../shared/traces \
        > crates/sim/tests/golden-sizes-libcachesim.csv

The traces are parsed here, as coopcache's `--format csv` reads them with the
column map given in TRACES, ids included (the integer, or the FNV-1a hash of
the text where the map says `ids=hash`: W-TinyLFU's sketch hashes the ids,
so they must be coopcache's), and fed request by request to the cache's
`get`, libCacheSim's request loop (`cache_get_base`).
"""

import bz2
import gzip
import sys

import libcachesim as lcs

from golden_policies import NEEDS_FUTURE, emit, isolated, next_uses, policies, selection

# name -> (file under the traces folder, separator, header?, id column,
# size column; columns 1-based, as coopcache's --csv map), cache sizes as
# fractions of the bytes of the distinct objects, and fixed sizes in bytes.
# Ids are integers but in HASHED_IDS (coopcache's `ids=hash`).
HASHED_IDS = {"tencent-photo"}
TRACES = {
    "tencent-photo": ("snia/tencent-photo-sample.csv.bz2", " ", False, 2, 5, [0.01, 0.05, 0.2], [100 << 20]),
    "tencent-block": ("snia/tencent-block-sample.csv.bz2", ",", False, 2, 3, [0.005, 0.02, 0.1, 0.3], []),
    "msr": ("snia/msr-cambridge1-sample.csv", ",", False, 5, 6, [0.01, 0.05, 0.2, 0.5], []),
    "systor17": ("snia/systor17-traces-sample.csv.gz", ",", True, 5, 6, [0.01, 0.05, 0.2], []),
}

# Every policy at its defaults, every knobbed spec, and these admission
# rows: (coopcache policy, admissioners).
POLICIES = policies(
    ["lru", "fifo", "clock", "sieve", "arc", "s3fifo", "2q", "lirs", "lfu", "belady", "slru", "s3fifo-v1",
     "lfuda", "gdsf", "wtinylfu", "qdlp", "mq", "lecar", "lhd"],
    [
        ("lru", ["bloom", "size(below=64KiB)", "size(below=1MiB)", "adaptsize"]),
        ("fifo", ["bloom", "adaptsize"]),
        ("clock", ["bloom"]),
        ("sieve", ["bloom"]),
        ("arc", ["bloom"]),
        ("s3fifo", ["bloom", "size(below=64KiB)", "adaptsize"]),
        ("2q", ["bloom", "size(below=64KiB)"]),
        ("lirs", ["bloom"]),
        ("slru", ["bloom"]),
        ("s3fifo-v1", ["bloom"]),
        ("wtinylfu", ["bloom"]),
        ("lfu", ["bloom"]),
        ("gdsf", ["bloom"]),
    ],
)

# Trace order of the output.
TRACE_ORDER = list(TRACES)

# A hit keeps the size the object was cached with in coopcache, as in
# libCacheSim's C policies; libCacheSim's LHD (C++) takes the request's size
# instead, so where an object's size changes between references (232 times
# in tencent-photo, 1,738 in tencent-block, 30 in msr) it is told, on a hit,
# the size it was cached with. Told the raw sizes, its miss counts differ
# from these by at most 1.5% (msr at 5% of its working set).
KEEPS_CACHED_SIZE = {"lhd"}


def open_text(path):
    if path.endswith(".bz2"):
        return bz2.open(path, "rt")
    if path.endswith(".gz"):
        return gzip.open(path, "rt")
    return open(path)


def fnv1a(text):
    """coopcache's `ids=hash`: FNV-1a, 64 bits, of the id's bytes."""
    h = 0xCBF29CE484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001B3) & (2**64 - 1)
    return h


def read(path, sep, header, id_col, size_col, hashed):
    """(id, size) per request with a size above 0, ids as coopcache reads them."""
    requests = []
    with open_text(path) as f:
        if header:
            next(f)
        for line in f:
            fields = line.split() if sep == " " else line.rstrip("\n").split(sep)
            if not line.strip():
                continue
            size = int(fields[size_col - 1])
            if size == 0:
                continue
            key = fields[id_col - 1].strip()
            requests.append((fnv1a(key) if hashed else int(key), size))
    return requests


def run(policy, cache_size, requests):
    params = lcs.CommonCacheParams(cache_size=cache_size, default_ttl=86400 * 300, hashpower=24,
                                   consider_obj_metadata=False)
    cache = POLICIES[policy](params)
    req = lcs.Request()
    misses = bytes_all = bytes_missed = 0
    future = next_uses([obj for obj, _ in requests]) if policy in NEEDS_FUTURE else None
    cached_size = {} if policy in KEEPS_CACHED_SIZE else None
    for i, (obj, size) in enumerate(requests):
        req.obj_id, req.obj_size = obj, size
        if future is not None:
            req.next_access_vtime = future[i]
        if cached_size is not None and obj in cached_size and cache.find(req, False) is not None:
            req.obj_size = cached_size[obj]
        bytes_all += size
        if not cache.get(req):
            misses += 1
            bytes_missed += size
            if cached_size is not None:
                cached_size[obj] = size
    return len(requests), misses, bytes_all, bytes_missed


def main():
    header = "trace,policy,cache_size_bytes,requests,misses,bytes_requested,bytes_missed"
    traces, policies, merge, kept = selection(sys.argv, header, POLICIES)
    if not merge:
        print(header)
    rows = []
    for name, (file, sep, header_line, id_col, size_col, fractions, fixed) in TRACES.items():
        requests = read(f"{traces}/{file}", sep, header_line, id_col, size_col, name in HASHED_IDS)
        first_size = {}
        for obj, size in requests:
            first_size.setdefault(obj, size)
        working_set = sum(first_size.values())
        sizes = sorted({int(working_set * f) for f in fractions} | set(fixed))
        for policy in policies:
            for size in sizes:
                got = isolated(run, policy, size, requests)
                if got is None:
                    print(f"{name} {policy} {size}: libCacheSim crashed or timed out, no row", file=sys.stderr)
                    continue
                n, misses, b, bm = got
                row = f"{name},{policy},{size},{n},{misses},{b},{bm}"
                rows.append(row)
                if not merge:
                    print(row, flush=True)
    emit(header, rows, merge, kept, POLICIES, TRACE_ORDER)


if __name__ == "__main__":
    main()
