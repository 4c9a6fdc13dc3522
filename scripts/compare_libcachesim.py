"""Times libCacheSim and coopcache on the same trace; called by
compare-libcachesim.sh, which sets up libCacheSim's wheel."""

import lzma
import os
import statistics
import struct
import subprocess
import sys
import time

import libcachesim as lcs

trace_xz, work, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
oracle = os.path.join(work, "w106.oracleGeneral")
if not os.path.exists(oracle):
    ids = lzma.open(trace_xz).read()
    with open(oracle + ".tmp", "wb") as out:
        for n, (block,) in enumerate(struct.iter_unpack(">I", ids)):
            out.write(struct.pack("<IQIq", n, block, 1, -1))
    os.replace(oracle + ".tmp", oracle)
requests = os.path.getsize(oracle) // 24

POLICIES = {"lru": lcs.LRU, "fifo": lcs.FIFO, "clock": lcs.Clock, "sieve": lcs.Sieve, "arc": lcs.ARC}
SIZES = [2750, 27500, 137500]


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
    for _ in range(reps):
        start = time.perf_counter()
        out = subprocess.run(
            ["target/release/coopcache", "sim", oracle, "--format", "oracle", "--policy", policy,
             "--cache-size", str(size), "--json"],
            check=True, capture_output=True, text=True).stdout
        times.append(time.perf_counter() - start)
        misses = int(out.split('"misses":')[1].split(",")[0])
    return statistics.median(times), misses


print(f"w106 as oracleGeneral: {requests} requests; median of {reps} runs; Mreq/s = requests / wall time\n")
print("| policy | cache (blocks) | libCacheSim misses | coopcache misses | libCacheSim Mreq/s | coopcache sim Mreq/s |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for policy in POLICIES:
    for size in SIZES:
        lt, lm = libcachesim(policy, size)
        ct, cm = coopcache(policy, size)
        print(f"| {policy} | {size} | {lm} | {cm} | {requests / lt / 1e6:.1f} | {requests / ct / 1e6:.1f} |")
