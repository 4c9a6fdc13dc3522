#!/usr/bin/env python3
"""A large synthetic trace for timing curves: REQUESTS requests over OBJECTS
objects, Zipf popularity (alpha ALPHA, ranks shuffled onto ids), each object a
lognormal size (median 16 KiB, clipped to 64 B..4 MiB), written as
libCacheSim's oracleGeneral (next accesses left -1). Seeded: every run writes
the same file. Needs numpy.

    scripts/zipf-trace.py OUT [REQUESTS] [OBJECTS] [ALPHA]

e.g. scripts/zipf-trace.py target/zipf-100m.oracleGeneral 100000000 10000000 0.9
"""
import os
import sys

import numpy as np

RECORD = np.dtype([("time", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
CHUNK = 10_000_000


def main():
    out = sys.argv[1]
    requests = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000_000
    objects = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000_000
    alpha = float(sys.argv[4]) if len(sys.argv) > 4 else 0.9
    rng = np.random.default_rng(17)
    cdf = np.cumsum(1.0 / np.arange(1, objects + 1, dtype=np.float64) ** alpha)
    cdf /= cdf[-1]
    ids = rng.permutation(objects).astype(np.uint64) + 1
    sizes = np.clip(np.exp(rng.normal(np.log(16 << 10), 1.5, objects)), 64, 4 << 20).astype(np.uint32)
    with open(out + ".tmp", "wb") as f:
        for start in range(0, requests, CHUNK):
            n = min(CHUNK, requests - start)
            ranks = np.minimum(np.searchsorted(cdf, rng.random(n)), objects - 1)
            records = np.zeros(n, dtype=RECORD)
            records["time"] = np.arange(start, start + n, dtype=np.uint64).astype(np.uint32)
            records["id"] = ids[ranks]
            records["size"] = sizes[ranks]
            records["next"] = -1
            records.tofile(f)
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
