"""Times libCacheSim and coopcache on the same trace; called by
compare-libcachesim.sh, which sets up libCacheSim's wheel.

Mode `blocks`: w106's ids, every object of size 1, caches in objects.
Mode `bytes`: w106's ids, each object given a size drawn once per id from a
lognormal (median 16 KiB, clipped to 64 B..4 MiB, seeded, so every run writes
the same file), caches in bytes at fractions of the working set's bytes:
both simulators hold each object at its size and evict until it fits.
"""

import lzma
import os
import statistics
import subprocess
import sys
import time

import libcachesim as lcs
import numpy as np

trace_xz, work, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
mode = sys.argv[4] if len(sys.argv) > 4 else "blocks"
if mode not in ("blocks", "bytes"):
    sys.exit(f"mode `{mode}`: expected blocks or bytes")

RECORD = np.dtype([("time", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])


def write_oracle(path, sized):
    """w106 as oracleGeneral, with sizes if `sized`; written once."""
    if os.path.exists(path):
        return
    ids = np.frombuffer(lzma.open(trace_xz).read(), dtype=">u4").astype(np.uint64)
    records = np.zeros(len(ids), dtype=RECORD)
    records["time"] = np.arange(len(ids), dtype=np.uint32)
    records["id"] = ids
    records["next"] = -1
    if sized:
        distinct, index = np.unique(ids, return_inverse=True)
        rng = np.random.default_rng(106)
        sizes = np.exp(rng.normal(np.log(16 << 10), 1.5, len(distinct)))
        records["size"] = np.clip(sizes, 64, 4 << 20).astype(np.uint32)[index]
    else:
        records["size"] = 1
    records.tofile(path + ".tmp")
    os.replace(path + ".tmp", path)


oracle = os.path.join(work, "w106.oracleGeneral" if mode == "blocks" else "w106-sized.oracleGeneral")
write_oracle(oracle, mode == "bytes")
records = np.fromfile(oracle, dtype=RECORD)
requests = len(records)

POLICIES = {"lru": lcs.LRU, "fifo": lcs.FIFO, "clock": lcs.Clock, "sieve": lcs.Sieve, "arc": lcs.ARC}
if mode == "blocks":
    SIZES = [2750, 27500, 137500]
    unit = "blocks"
else:
    _, first = np.unique(records["id"], return_index=True)
    working_set = int(records["size"][first].sum(dtype=np.uint64))
    SIZES = [working_set // 100, working_set // 10, working_set * 3 // 10]
    unit = "bytes"


def libcachesim(policy, size):
    times, ratio = [], None
    for _ in range(reps):
        reader = lcs.TraceReader(oracle, lcs.TraceType.ORACLE_GENERAL_TRACE)
        cache = POLICIES[policy](size)
        start = time.perf_counter()
        ratio, _ = cache.process_trace(reader)
        times.append(time.perf_counter() - start)
    return statistics.median(times), round(ratio * requests)


def coopcache(policy, size):
    times, misses = [], None
    cache_size = str(size) if mode == "blocks" else f"{size}B"
    for _ in range(reps):
        start = time.perf_counter()
        out = subprocess.run(
            ["target/release/coopcache", "sim", oracle, "--format", "oracle", "--policy", policy,
             "--cache-size", cache_size, "--json"],
            check=True, capture_output=True, text=True).stdout
        times.append(time.perf_counter() - start)
        misses = int(out.split('"misses":')[1].split(",")[0])
    return statistics.median(times), misses


print(f"w106 as oracleGeneral ({mode}): {requests} requests; median of {reps} runs; Mreq/s = requests / wall time\n")
print(f"| policy | cache ({unit}) | libCacheSim misses | coopcache misses | libCacheSim Mreq/s | coopcache sim Mreq/s |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for policy in POLICIES:
    for size in SIZES:
        lt, lm = libcachesim(policy, size)
        ct, cm = coopcache(policy, size)
        print(f"| {policy} | {size} | {lm} | {cm} | {requests / lt / 1e6:.1f} | {requests / ct / 1e6:.1f} |")
