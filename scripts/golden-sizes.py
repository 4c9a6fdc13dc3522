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
import os
import signal
import sys

import libcachesim as lcs
from libcachesim import libcachesim_python as lcs_c

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
    ("lru", "LRU_init", ["bloom", "size(below=64KiB)", "size(below=1MiB)", "adaptsize"]),
    ("fifo", "FIFO_init", ["bloom", "adaptsize"]),
    ("clock", "Clock_init", ["bloom"]),
    ("sieve", "Sieve_init", ["bloom"]),
    ("arc", "ARC_init", ["bloom"]),
    ("s3fifo", "S3FIFOv0_init", ["bloom", "size(below=64KiB)", "adaptsize"]),
    ("2q", "TwoQ_init", ["bloom", "size(below=64KiB)"]),
    ("lirs", "LIRS_init", ["bloom"]),
    ("slru", "SLRU_init", ["bloom"]),
    ("s3fifo-v1", "S3FIFO_init", ["bloom"]),
    ("wtinylfu", "WTinyLFU_init", ["bloom"]),
    ("lfu", "LFU_init", ["bloom"]),
    ("gdsf", "GDSF_init", ["bloom"]),
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

# Trace order of the output.
TRACE_ORDER = list(TRACES)

# Policies told each request's next reference (request number, or INT64_MAX
# for never), computed over the requests replayed.
NEEDS_FUTURE = {"belady"}
NEVER = 2**63 - 1

# A hit keeps the size the object was cached with in coopcache, as in
# libCacheSim's C policies; libCacheSim's LHD (C++) takes the request's size
# instead, so where an object's size changes between references (232 times
# in tencent-photo, 1,738 in tencent-block, 30 in msr) it is told, on a hit,
# the size it was cached with. Told the raw sizes, its miss counts differ
# from these by at most 1.5% (msr at 5% of its working set).
KEEPS_CACHED_SIZE = {"lhd"}


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
    header = "trace,policy,cache_size_bytes,requests,misses,bytes_requested,bytes_missed"
    traces, policies, merge, kept = selection(sys.argv, header)
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
    emit(header, rows, merge, kept)


if __name__ == "__main__":
    main()
