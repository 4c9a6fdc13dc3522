#!/usr/bin/env bash
# Replay throughput of libCacheSim and coopcache side by side, in one run on
# this machine, on the w106 trace: see docs/benchmarks.md.
#
# libCacheSim comes from its PyPI wheel (libcachesim 0.3.5: the C library with
# Python bindings); `process_trace` runs its C request loop over an
# oracleGeneral file, reading included. coopcache is measured two ways: its
# replay benchmark (trace in memory, reading excluded) and `coopcache sim` on
# the same oracleGeneral file, wall clock, reading included.
#
#   scripts/compare-libcachesim.sh [REPS] [blocks|bytes]
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
traces=${COOPCACHE_TRACES:-../shared/traces}
work=target/libcachesim
mkdir -p "$work"
if [ ! -x "$work/venv/bin/python" ]; then
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install -q libcachesim==0.3.5 numpy
fi
cargo build -q --release -p coopcache
exec "$work/venv/bin/python" scripts/compare_libcachesim.py "$traces/w106.trace.xz" "$work" "$reps" "${2:-blocks}"
