#!/usr/bin/env bash
# The C2Cfs paper's synthetic read-write experiment (its Table 2) in the
# simulator: one client writes a 10 MiB file and closes it, then three
# others open and read it whole, one after the other. Prints
# where the reads were served and the origin's work under NFS's
# close-to-open and under C2Cfs (shared and exclusive mode).
#
#   scripts/c2cfs-table2.sh [BINARY] [--json]
set -euo pipefail
bin=${1:-target/release/coopcache}
shift || true
trace=$(mktemp --suffix=.csv)
trap 'rm -f "$trace"' EXIT
# client,file,op,size: one open-write-close, three open-read-close.
printf '0,1,w,10485760\n1,1,r,10485760\n2,1,r,10485760\n3,1,r,10485760\n' > "$trace"
"$bin" sim "$trace" --format csv --csv client=1,id=2,op=3,size=4 \
    --consistency nfs,c2cfs,c2cfs-exclusive "$@"
