"""coopcache's trace-driven cache simulator from Python.

Every function runs the simulator's own Rust code (the code behind the
``coopcache`` command) and returns its figures as pandas DataFrames, with
the columns ``coopcache ... --json`` prints:

- :func:`read_trace`: a trace's requests.
- :func:`simulate`: replacement policies at several cache sizes.
- :func:`mrc`: miss-ratio curves.
- :func:`trace_stats`: a trace's statistics and histograms.
- :func:`simulate_cluster`: cooperative caching algorithms on a cluster.

Traces are given by path; ``format`` and ``csv`` take the strings
``coopcache sim --format F --csv SPEC`` takes (``format`` may be left out
where the file name says it: ``.lcs``, ``.oracleGeneral``, ...). Files
compressed with gzip, xz, zstd or bzip2 are read as they are. Bad input
raises ``ValueError`` (``OSError`` for a file that cannot be read) with
the command's message. Long runs release the GIL.
"""

from __future__ import annotations

import json
import os
from typing import Iterable, Optional, Sequence, Union

import numpy as np
import pandas as pd

from . import _coopcache

__all__ = ["read_trace", "simulate", "mrc", "trace_stats", "simulate_cluster"]
__version__ = _coopcache.__version__

PathLike = Union[str, "os.PathLike[str]"]
Size = Union[int, str]

#: The op codes of :func:`read_trace`'s ``op`` column.
OPS = ["read", "write", "delete"]


def _names(value: Union[str, Iterable[str]]) -> list:
    """A name or a list of names; a comma-separated string as the CLI takes."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]


def read_trace(
    trace: PathLike,
    format: Optional[str] = None,
    csv: Optional[str] = None,
    limit: Optional[int] = None,
    block_size: Optional[int] = None,
) -> pd.DataFrame:
    """A trace's requests, in trace order.

    Columns: ``time`` (the trace's unit; the position for formats without
    time), ``id``, ``size`` (bytes, only where the format has sizes),
    ``op`` (``read``, ``write`` or ``delete``, categorical) and ``client``.
    ``limit`` reads at most that many requests; ``block_size`` splits the
    byte ranges of ``msr`` and ``tencent`` traces (default 8 KiB). The
    frame's ``attrs`` hold the format and whether requests have sizes.
    """
    cols = _coopcache.read_trace(
        os.fspath(trace), format=format, csv=csv, block_size=block_size, limit=limit
    )
    data = {
        "time": np.frombuffer(cols["time"], dtype="<u8"),
        "id": np.frombuffer(cols["id"], dtype="<u8"),
    }
    if cols["size"] is not None:
        data["size"] = np.frombuffer(cols["size"], dtype="<u4")
    codes = np.frombuffer(cols["op"], dtype="u1")
    data["op"] = pd.Categorical.from_codes(codes, categories=OPS)
    data["client"] = np.frombuffer(cols["client"], dtype="<u4")
    frame = pd.DataFrame(data)
    frame.attrs.update(format=cols["format"], sized=cols["sized"])
    return frame


def simulate(
    trace: PathLike,
    policies: Union[str, Sequence[str]] = ("lru",),
    sizes: Union[Size, Sequence[Size]] = (),
    format: Optional[str] = None,
    csv: Optional[str] = None,
    block_size: Optional[int] = None,
) -> pd.DataFrame:
    """Replays the trace through each policy at each cache size.

    ``policies`` are ``coopcache sim --policy`` names (``lru``, ``arc``,
    ``s3fifo``, ...). ``sizes`` are counts of objects (``2750``) or bytes
    with a unit (``"100MiB"``: a byte cache where the trace has object
    sizes, else divided by ``block_size``, default 8 KiB). One row per
    (policy, size), policy-major, with the columns of ``coopcache sim
    --json``: ``trace``, ``policy``, ``cache_size_objects``, ``block_size``,
    ``cache_size_bytes``, ``requests``, ``misses``, ``miss_ratio``,
    ``bytes_requested``, ``bytes_missed``, ``byte_miss_ratio``, ``writes``,
    ``deletes``, ``zero_size_skipped``, ``elapsed_s``, ``requests_per_s``.
    """
    if isinstance(sizes, (int, str)):
        sizes = [sizes]
    rows = _coopcache.simulate(
        os.fspath(trace),
        _names(policies),
        [str(s) for s in sizes],
        format=format,
        csv=csv,
        block_size=block_size,
    )
    return pd.DataFrame(json.loads(rows))


def mrc(
    trace: PathLike,
    policy: Union[str, Sequence[str]] = "lru",
    sizes: Union[Size, Sequence[Size], None] = None,
    format: Optional[str] = None,
    csv: Optional[str] = None,
    shards: Optional[float] = None,
) -> pd.DataFrame:
    """Miss-ratio curves, as ``coopcache sim mrc TRACE --format F`` draws them.

    LRU comes from one exact stack-distance pass (sampled with SHARDS at
    rate ``shards``, e.g. 0.01); every other policy is replayed at each
    size. ``sizes`` takes what ``--cache-size`` takes: counts of objects,
    bytes with a unit, percentages of the working set (``"10%"``) and
    ranges ``"1%..100%:50"`` or ``"1MiB..1GiB:20log"``, comma-separated or
    as a list (default ``"1%..100%:50"``). Columns: ``trace``, ``policy``,
    ``method`` (``stack``, ``shards`` or ``replay``),
    ``cache_size_objects`` or ``cache_size_bytes``,
    ``working_set_fraction``, ``requests``, ``misses``, ``miss_ratio``,
    ``byte_miss_ratio``.
    """
    if sizes is not None and not isinstance(sizes, (int, str)):
        sizes = ",".join(str(s) for s in sizes)
    rows = _coopcache.mrc(
        os.fspath(trace),
        _names(policy),
        sizes=None if sizes is None else str(sizes),
        format=format,
        csv=csv,
        shards=shards,
    )
    return pd.DataFrame(json.loads(rows))


def _buckets(buckets: list) -> pd.DataFrame:
    """A histogram's power-of-two buckets ``[lo, hi)`` as a frame."""
    return pd.DataFrame(buckets, columns=["lo", "hi", "count"])


def trace_stats(
    trace: PathLike,
    format: Optional[str] = None,
    csv: Optional[str] = None,
    block_size: Optional[int] = None,
) -> dict:
    """A trace's statistics from one pass, as ``coopcache trace stats --json``.

    A dict with the command's keys (``ops`` with ``requests``, ``reads``,
    ``writes``, ``deletes``; ``objects``, ``bytes_requested``,
    ``working_set_bytes``, ``one_hit_wonders``, ``cold``, ``zipf`` with
    ``alpha`` and ``r_squared``, ``sizes`` with percentiles, ``top``,
    ``rate``, ...), where the histograms are DataFrames: ``reuse_distance``
    and ``reuse_time`` (columns ``lo``, ``hi``, ``count``: buckets
    ``[lo, hi)``), ``sizes["histogram"]`` likewise, and ``top`` (``id``,
    ``requests``, ``fraction``).
    """
    stats = json.loads(
        _coopcache.trace_stats(
            os.fspath(trace), format=format, csv=csv, block_size=block_size
        )
    )
    stats["reuse_distance"] = _buckets(stats["reuse_distance"])
    stats["reuse_time"] = _buckets(stats["reuse_time"])
    if stats.get("sizes"):
        stats["sizes"]["histogram"] = _buckets(stats["sizes"]["histogram"])
    stats["top"] = pd.DataFrame(stats["top"], columns=["id", "requests", "fraction"])
    return stats


def simulate_cluster(
    algorithms: Union[str, Sequence[str]],
    workload: Optional[str] = None,
    trace: Optional[PathLike] = None,
    *,
    workload_params: Optional[str] = None,
    format: Optional[str] = None,
    csv: Optional[str] = None,
    block_size: Optional[int] = None,
    policy: str = "lru",
    clients: Optional[int] = None,
    client_cache: Optional[Size] = None,
    manager_cache: Optional[Size] = None,
    chances: Optional[int] = None,
    foreign_first: bool = False,
    central_fraction: Optional[float] = None,
    direct_remote: Optional[Size] = None,
    profile: Optional[str] = None,
    network_us: Optional[float] = None,
    warmup: Optional[int] = None,
    seed: Optional[int] = None,
) -> pd.DataFrame:
    """The cooperative caching study, as ``coopcache sim --algorithms ...``.

    Give a generated ``workload`` (``sprite-like``, ``leff``, ``zipf``,
    ``web``, ``fs``, with ``workload_params`` such as
    ``"requests=200000"``) or a multi-client ``trace``. ``algorithms`` are
    ``base``, ``direct``, ``greedy``, ``central``, ``nchance``, ``hash``,
    ``wlru``, ``best``; Base is always simulated, since every comparison is
    against it. The other keywords are the command's flags of the same
    names (``client_cache="16MiB"``, ``profile="dc-2026-nvme"``, ...). One
    row per algorithm asked for, with the columns of ``--json``
    (``avg_read_us``, ``local_hit``, ``remote_hit``, ``origin_rate``,
    ``speedup_vs_base``, ``server_load``, ...); ``clients`` holds each
    client's reads and speedup against Base.
    """
    size = lambda s: None if s is None else str(s)  # noqa: E731
    rows = _coopcache.simulate_cluster(
        _names(algorithms),
        workload=workload,
        path=None if trace is None else os.fspath(trace),
        workload_params=workload_params,
        format=format,
        csv=csv,
        block_size=block_size,
        policy=policy,
        clients=clients,
        client_cache=size(client_cache),
        manager_cache=size(manager_cache),
        chances=chances,
        foreign_first=foreign_first,
        central_fraction=central_fraction,
        direct_remote=size(direct_remote),
        profile=profile,
        network_us=network_us,
        warmup=warmup,
        seed=seed,
    )
    return pd.DataFrame(json.loads(rows))
