#!/usr/bin/env bash
# Proves the core crate is sans-IO (docs/ARCHITECTURE.md, section 1): no async runtime or
# networking crate in its dependency tree, and no file, socket, clock, thread
# or process use in its source.
set -euo pipefail
cd "$(dirname "$0")/.."

tree=$(cargo tree --offline -p coopcache-core -e normal --prefix none --format '{p}')
if echo "$tree" | grep -E '^(tokio|mio|async-std|smol|futures|socket2|hyper|reqwest)( |$)'; then
  echo "check-sans-io: coopcache-core depends on an I/O or async crate (above)" >&2
  exit 1
fi

if grep -rnE 'std::(fs|net|process|thread|env)|Instant::now|SystemTime|thread_rng|rand::random' crates/core/src; then
  echo "check-sans-io: coopcache-core source does I/O, reads a clock or uses ambient randomness (above)" >&2
  exit 1
fi
echo "check-sans-io: coopcache-core is sans-IO ($(echo "$tree" | wc -l) crates in its tree)"
