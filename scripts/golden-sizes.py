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
column map given in TRACES (ids are numbered by first appearance: the
policies do not look at id values), and fed request by request to the
cache's `get`, libCacheSim's request loop (`cache_get_base`).
"""

import bz2
import gzip
import sys

import libcachesim as lcs
from libcachesim import libcachesim_python as lcs_c

# name -> (file under the traces folder, separator, header?, id column,
# size column; columns 1-based, as coopcache's --csv map), cache sizes as
# fractions of the bytes of the distinct objects, and fixed sizes in bytes.
TRACES = {
    "tencent-photo": ("snia/tencent-photo-sample.csv.bz2", " ", False, 2, 5, [0.01, 0.05, 0.2], [100 << 20]),
    "tencent-block": ("snia/tencent-block-sample.csv.bz2", ",", False, 2, 3, [0.005, 0.02, 0.1, 0.3], []),
    "msr": ("snia/msr-cambridge1-sample.csv", ",", False, 5, 6, [0.01, 0.05, 0.2, 0.5], []),
    "systor17": ("snia/systor17-traces-sample.csv.gz", ",", True, 5, 6, [0.01, 0.05, 0.2], []),
}

# coopcache's policy name -> libCacheSim's: coopcache's `s3fifo` is
# libCacheSim's original S3FIFOv0, not its current S3FIFO.
POLICIES = {
    "lru": lambda p: lcs_c.LRU_init(p),
    "fifo": lambda p: lcs_c.FIFO_init(p),
    "clock": lambda p: lcs_c.Clock_init(p),
    "sieve": lambda p: lcs_c.Sieve_init(p),
    "arc": lambda p: lcs_c.ARC_init(p),
    "s3fifo": lambda p: lcs_c.S3FIFOv0_init(p),
    "2q": lambda p: lcs_c.TwoQ_init(p),
    "lirs": lambda p: lcs_c.LIRS_init(p),
    "lfu": lambda p: lcs_c.LFU_init(p),
    "belady": lambda p: lcs_c.Belady_init(p),
    "slru": lambda p: lcs_c.SLRU_init(p),
    "s3fifo-v1": lambda p: lcs_c.S3FIFO_init(p),
}

# Policies told each request's next reference (request number, or INT64_MAX
# for never), computed over the requests replayed.
NEEDS_FUTURE = {"belady"}
NEVER = 2**63 - 1


def next_uses(ids):
    """Each request's next request number for the same id, or NEVER."""
    nxt, seen = [NEVER] * len(ids), {}
    for i in range(len(ids) - 1, -1, -1):
        nxt[i] = seen.get(ids[i], NEVER)
        seen[ids[i]] = i
    return nxt


def open_text(path):
    if path.endswith(".bz2"):
        return bz2.open(path, "rt")
    if path.endswith(".gz"):
        return gzip.open(path, "rt")
    return open(path)


def read(path, sep, header, id_col, size_col):
    """(id, size) per request with a size above 0, ids numbered by first appearance."""
    ids, requests = {}, []
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
            requests.append((ids.setdefault(key, len(ids)), size))
    return requests


def run(policy, cache_size, requests):
    params = lcs.CommonCacheParams(cache_size=cache_size, default_ttl=86400 * 300, hashpower=24,
                                   consider_obj_metadata=False)
    cache = POLICIES[policy](params)
    req = lcs.Request()
    misses = bytes_all = bytes_missed = 0
    future = next_uses([obj for obj, _ in requests]) if policy in NEEDS_FUTURE else None
    for i, (obj, size) in enumerate(requests):
        req.obj_id, req.obj_size = obj, size
        if future is not None:
            req.next_access_vtime = future[i]
        bytes_all += size
        if not cache.get(req):
            misses += 1
            bytes_missed += size
    return len(requests), misses, bytes_all, bytes_missed


def main():
    traces = sys.argv[1] if len(sys.argv) > 1 else "../shared/traces"
    print("trace,policy,cache_size_bytes,requests,misses,bytes_requested,bytes_missed")
    for name, (file, sep, header, id_col, size_col, fractions, fixed) in TRACES.items():
        requests = read(f"{traces}/{file}", sep, header, id_col, size_col)
        first_size = {}
        for obj, size in requests:
            first_size.setdefault(obj, size)
        working_set = sum(first_size.values())
        sizes = sorted({int(working_set * f) for f in fractions} | set(fixed))
        for policy in POLICIES:
            for size in sizes:
                n, misses, b, bm = run(policy, size, requests)
                print(f"{name},{policy},{size},{n},{misses},{b},{bm}")


if __name__ == "__main__":
    main()
