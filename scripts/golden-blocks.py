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
import os
import signal
import struct
import subprocess
import sys

import libcachesim as lcs
from libcachesim import libcachesim_python as lcs_c

# coopcache's policy name -> libCacheSim's constructor. libCacheSim's
# ClockPro is left out: in the 0.3.5 wheel its can_insert refuses every
# object that would need an eviction, so a cache fills once and never
# changes (its miss counts are exactly that on every trace here), and driven
# past can_insert its eviction loops forever while no block is hot.
POLICIES = {
    "lfu": lambda p: lcs_c.LFU_init(p),
    "belady": lambda p: lcs_c.Belady_init(p),
    "slru": lambda p: lcs_c.SLRU_init(p),
    "s3fifo-v1": lambda p: lcs_c.S3FIFO_init(p),
    "lfuda": lambda p: lcs_c.LFUDA_init(p),
    "gdsf": lambda p: lcs_c.GDSF_init(p),
    "wtinylfu": lambda p: lcs_c.WTinyLFU_init(p),
    "qdlp": lambda p: lcs_c.QDLP_init(p),
    "mq": lambda p: lcs_c.MQ_init(p),
    # LeCaR and LHD draw from libCacheSim's per-thread generator, which
    # starts at its seed in each forked child (`isolated`): coopcache seeds
    # its own generator the same, so their rows are exact too.
    "lecar": lambda p: lcs_c.LeCaR_init(p),
    "lhd": lambda p: lcs_c.LHD_init(p),
}

# Non-default knobs: coopcache's spec (knobs separated by `;`, as the
# golden files' columns are comma-separated) -> libCacheSim's parameters.
KNOBBED = {
    "s3fifo(small=0.2;ghost=0.5)": ("S3FIFOv0_init", "small-size-ratio=0.2,ghost-size-ratio=0.5"),
    "s3fifo(small=0.05;move=1)": ("S3FIFOv0_init", "small-size-ratio=0.05,move-to-main-threshold=1"),
    "s3fifo-v1(small=0.2;ghost=0.5)": ("S3FIFO_init", "small-size-ratio=0.2,ghost-size-ratio=0.5"),
    "s3fifo-v1(move=3)": ("S3FIFO_init", "move-to-main-threshold=3"),
    "2q(ain=0.1;aout=1)": ("TwoQ_init", "Ain-size-ratio=0.1,Aout-size-ratio=1"),
    "2q(ain=0.4;aout=0.25)": ("TwoQ_init", "Ain-size-ratio=0.4,Aout-size-ratio=0.25"),
    "slru(segments=2)": ("SLRU_init", "n-seg=2"),
    "slru(segments=8)": ("SLRU_init", "n-seg=8"),
    "clock(bits=2)": ("Clock_init", "n-bit-counter=2"),
    "clock(bits=3;init=1)": ("Clock_init", "n-bit-counter=3,init-freq=1"),
    "wtinylfu(window=0.1)": ("WTinyLFU_init", "window-size=0.1"),
    "wtinylfu(window=0.2)": ("WTinyLFU_init", "window-size=0.2"),
}
for _name, (_init, _params) in KNOBBED.items():
    POLICIES[_name] = (lambda init, params: lambda p: getattr(lcs_c, init)(p, params))(_init, _params)

# (coopcache policy, libCacheSim constructor, admissioners) of the
# admission rows.
ADMITTED = [
    ("lru", "LRU_init", ["bloom"]),
    ("arc", "ARC_init", ["bloom"]),
    ("s3fifo", "S3FIFOv0_init", ["bloom"]),
]

# Admission: coopcache's spec `policy+admission` -> libCacheSim's policy
# with the admissioner of that name set on it (as its `-a` option does).
ADMISSIONERS = {
    "bloom": lambda: lcs_c.create_bloomfilter_admissioner(None),
    "size(below=64KiB)": lambda: lcs_c.create_size_admissioner("size=65536"),
    "size(below=1MiB)": lambda: lcs_c.create_size_admissioner("size=1048576"),
    "adaptsize": lambda: lcs_c.create_adaptsize_admissioner(None),
}


def admitted(init, admissioner):
    def make(p):
        cache = getattr(lcs_c, init)(p)
        cache.admissioner = ADMISSIONERS[admissioner]()
        return cache
    return make


for _name, _init, _admissioners in ADMITTED:
    for _a in _admissioners:
        POLICIES[f"{_name}+{_a}"] = admitted(_init, _a)

# Policies told each request's next reference (request number, or INT64_MAX
# for never).
NEEDS_FUTURE = {"belady"}
NEVER = 2**63 - 1


def next_uses(ids):
    """Each request's next request number for the same id, or NEVER."""
    nxt, seen = [NEVER] * len(ids), {}
    for i in range(len(ids) - 1, -1, -1):
        nxt[i] = seen.get(ids[i], NEVER)
        seen[ids[i]] = i
    return nxt

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


def isolated(fn, *args):
    """fn(*args) in a forked child, so that a libCacheSim crash (LFUDA
    dereferences an empty bucket in some byte caches) or a run that does
    not end (LFUDA scans every key up to its largest, which can be
    astronomical) loses one row, not the run: the child gets
    $GOLDEN_TIMEOUT seconds (default 300). Returns the tuple of ints fn
    returns, or None if the child died."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        signal.alarm(int(os.environ.get("GOLDEN_TIMEOUT", "300")))
        try:
            os.write(write_end, ",".join(map(str, fn(*args))).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as f:
        out = f.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not out:
        return None
    return tuple(int(x) for x in out.split(","))


def selection(argv, header):
    """The traces folder, the policies to run and the file to merge into:
    `TRACES [--only P1,P2 --merge FILE]` replaces only those policies' rows
    of FILE (kept in the order a full run prints) and leaves the others."""
    args = [a for a in argv[1:]]
    only, merge = None, None
    if "--only" in args:
        i = args.index("--only")
        only = args[i + 1].split(",")
        del args[i:i + 2]
    if "--merge" in args:
        i = args.index("--merge")
        merge = args[i + 1]
        del args[i:i + 2]
    unknown = [p for p in only or [] if p not in POLICIES]
    if unknown:
        sys.exit(f"unknown policies {unknown}: expected some of {list(POLICIES)}")
    kept = []
    if merge:
        with open(merge) as f:
            lines = f.read().splitlines()
        assert lines[0] == header, f"{merge} does not start with {header}"
        kept = [l for l in lines[1:] if l and (only is None or l.split(",")[1] not in only)]
    traces = args[0] if args else "../shared/traces"
    return traces, only or list(POLICIES), merge, kept


def emit(header, rows, merge, kept):
    """Prints `rows`, or writes them merged with `kept` (ordered by trace,
    then policy, as POLICIES lists them, then size) to `merge`."""
    if not merge:
        return
    order = {p: i for i, p in enumerate(POLICIES)}
    traces = {}
    for line in kept + rows:
        traces.setdefault(line.split(",")[0], None)
    trace_order = {t: i for i, t in enumerate(TRACE_ORDER + [t for t in traces if t not in TRACE_ORDER])}
    def key(line):
        f = line.split(",")
        return (trace_order[f[0]], order.get(f[1], len(order)), int(f[2]))
    with open(merge + ".tmp", "w") as out:
        out.write(header + "\n")
        for line in sorted(kept + rows, key=key):
            out.write(line + "\n")
    os.replace(merge + ".tmp", merge)


def main():
    header = "trace,policy,cache_size_objects,requests,misses"
    traces, policies, merge, kept = selection(sys.argv, header)
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
    emit(header, rows, merge, kept)


if __name__ == "__main__":
    main()
