#!/usr/bin/env python3
"""libCacheSim's LHD on a synthetic trace long enough (7.5M requests) to
reach its age-coarsening rescale (the 6th refit, after 6 x 2^20 updates),
which no golden trace reaches, for crates/core/tests/lhd_long.rs. Prints
`cache_size requests misses` per size; each run on a fresh thread, where
libCacheSim's generator starts at its seed. 5,000 blocks make LHD stretch
its ages (finer), 400,000 compress them (coarser):

    /tmp/lcs-venv/bin/python scripts/golden-lhd-long.py 5000 400000

The trace: a 64-bit LCG (Knuth's MMIX constants) from 12345; four requests
in five go to 3,000 hot blocks, the fifth to a million cold ones.
"""
import sys, os, threading
import libcachesim as lcs
from libcachesim import libcachesim_python as lcs_c
M = 2**64
def trace(n):
    s = 12345
    out = []
    for _ in range(n):
        s = (s * 6364136223846793005 + 1442695040888963407) % M
        r = s >> 33
        out.append(r % 3000 if (s >> 20) % 5 else 3000 + r % 1000000)
    return out
ids = trace(7_500_000)
def run(size):
    p = lcs.CommonCacheParams(cache_size=size, default_ttl=86400*300, hashpower=24, consider_obj_metadata=False)
    c = lcs_c.LHD_init(p); r = lcs.Request(); r.obj_size = 1; m = 0
    for b in ids:
        r.obj_id = b
        if not c.get(r): m += 1
    print(size, len(ids), m, flush=True)
for size in [int(a) for a in sys.argv[1:]]:
    t = threading.Thread(target=run, args=(size,)); t.start(); t.join()
