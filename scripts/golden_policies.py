"""What the golden scripts share: coopcache's policy specs -> libCacheSim's
constructors, and the run-and-merge plumbing around them.

`golden-blocks.py` and `golden-sizes.py` import this (they run as
`python scripts/golden-*.py`, so `scripts/` is on `sys.path`). Each script
picks which plain policies and which admission pairs it replays
(`policies()`); the knobbed specs and the admissioners are the same for
both, so a knob setting added here gets rows in blocks and in bytes.
"""

import os
import signal
import sys

from libcachesim import libcachesim_python as lcs_c

# coopcache's policy name -> libCacheSim's init function: coopcache's
# `s3fifo` is libCacheSim's original S3FIFOv0, `s3fifo-v1` its current
# S3FIFO. libCacheSim's ClockPro is left out: in the 0.3.5 wheel its
# can_insert refuses every object that would need an eviction, so a cache
# fills once and never changes (its miss counts are exactly that on every
# trace here), and driven past can_insert its eviction loops forever while
# no block is hot.
INITS = {
    "lru": "LRU_init",
    "fifo": "FIFO_init",
    "clock": "Clock_init",
    "sieve": "Sieve_init",
    "arc": "ARC_init",
    "s3fifo": "S3FIFOv0_init",
    "2q": "TwoQ_init",
    "lirs": "LIRS_init",
    "lfu": "LFU_init",
    "belady": "Belady_init",
    "slru": "SLRU_init",
    "s3fifo-v1": "S3FIFO_init",
    "lfuda": "LFUDA_init",
    "gdsf": "GDSF_init",
    "wtinylfu": "WTinyLFU_init",
    "qdlp": "QDLP_init",
    "mq": "MQ_init",
    # LeCaR and LHD draw from libCacheSim's per-thread generator, which
    # starts at its seed in each forked child (`isolated`): coopcache seeds
    # its own generator the same, so their rows are exact too.
    "lecar": "LeCaR_init",
    "lhd": "LHD_init",
}

# Non-default knobs: coopcache's spec (knobs separated by `;`, as the
# golden files' columns are comma-separated) -> libCacheSim's init and
# parameters. LHD has none: libCacheSim 0.3.5's `LHD_init` ignores any
# parameter string (its associativity and admission samples are fixed), so
# no knobbed LHD row can come from it.
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
    "qdlp(fifo=0.2;ghost=0.5)": ("QDLP_init", "fifo-size-ratio=0.2,ghost-size-ratio=0.5"),
    "qdlp(bits=3;move=2)": ("QDLP_init", "main-cache=Clock3,move-to-main-threshold=2"),
    # libCacheSim's LeCaR parses the string given instead of its defaults,
    # over the values it starts with (update-weight=1, lru-weight=0.5).
    "lecar(lru=0.8)": ("LeCaR_init", "lru-weight=0.8"),
    "lecar(update=0;lru=0.3)": ("LeCaR_init", "update-weight=0,lru-weight=0.3"),
    "mq(queues=4;lifetime=1000)": ("MQ_init", "n-queue=4,lifetime=1000"),
    "mq(lifetime=100000;ghost=1)": ("MQ_init", "lifetime=100000,Qout-size-ratio=1"),
}

# Admission: coopcache's spec `policy+admission` -> libCacheSim's policy
# with the admissioner of that name set on it (as its `-a` option does).
ADMISSIONERS = {
    "bloom": lambda: lcs_c.create_bloomfilter_admissioner(None),
    "size(below=64KiB)": lambda: lcs_c.create_size_admissioner("size=65536"),
    "size(below=1MiB)": lambda: lcs_c.create_size_admissioner("size=1048576"),
    "adaptsize": lambda: lcs_c.create_adaptsize_admissioner(None),
}

# Policies told each request's next reference (request number, or INT64_MAX
# for never).
NEEDS_FUTURE = {"belady"}
NEVER = 2**63 - 1


def plain(init):
    return lambda p: getattr(lcs_c, init)(p)


def knobbed(init, params):
    return lambda p: getattr(lcs_c, init)(p, params)


def admitted(init, admissioner):
    def make(p):
        cache = getattr(lcs_c, init)(p)
        cache.admissioner = ADMISSIONERS[admissioner]()
        return cache
    return make


def policies(names, admitted_pairs):
    """coopcache spec -> constructor of libCacheSim's cache from its
    CommonCacheParams, in the order a full run prints: `names` at their
    defaults, every KNOBBED spec, then `policy+admission` for each
    (policy, admissioners) of `admitted_pairs`."""
    out = {name: plain(INITS[name]) for name in names}
    for name, (init, params) in KNOBBED.items():
        out[name] = knobbed(init, params)
    for name, admissioners in admitted_pairs:
        for a in admissioners:
            out[f"{name}+{a}"] = admitted(INITS[name], a)
    return out


def next_uses(ids):
    """Each request's next request number for the same id, or NEVER."""
    nxt, seen = [NEVER] * len(ids), {}
    for i in range(len(ids) - 1, -1, -1):
        nxt[i] = seen.get(ids[i], NEVER)
        seen[ids[i]] = i
    return nxt


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


def selection(argv, header, policies):
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
    unknown = [p for p in only or [] if p not in policies]
    if unknown:
        sys.exit(f"unknown policies {unknown}: expected some of {list(policies)}")
    kept = []
    if merge:
        with open(merge) as f:
            lines = f.read().splitlines()
        assert lines[0] == header, f"{merge} does not start with {header}"
        kept = [l for l in lines[1:] if l and (only is None or l.split(",")[1] not in only)]
    traces = args[0] if args else "../shared/traces"
    return traces, only or list(policies), merge, kept


def emit(header, rows, merge, kept, policies, trace_order):
    """Prints `rows`, or writes them merged with `kept` (ordered by trace,
    as `trace_order` lists them, then policy, as `policies` does, then
    size) to `merge`."""
    if not merge:
        return
    order = {p: i for i, p in enumerate(policies)}
    traces = {}
    for line in kept + rows:
        traces.setdefault(line.split(",")[0], None)
    trace_order = {t: i for i, t in enumerate(trace_order + [t for t in traces if t not in trace_order])}
    def key(line):
        f = line.split(",")
        return (trace_order[f[0]], order.get(f[1], len(order)), int(f[2]))
    with open(merge + ".tmp", "w") as out:
        out.write(header + "\n")
        for line in sorted(kept + rows, key=key):
            out.write(line + "\n")
    os.replace(merge + ".tmp", merge)
