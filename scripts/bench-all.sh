#!/usr/bin/env bash
# Re-runs the headline benchmarks of docs/benchmarks.md and prints each
# figure beside the one documented there (with the commit it was measured
# on), so a drift shows in minutes. Figures are medians of each command's
# own passes; machines differ, so compare the ratios first (a GB/s figure
# moves with the machine, a share of the TCP stream much less).
#
#   scripts/bench-all.sh [COOPCACHE]   (default target/release/coopcache)
#
# The mount figure needs root and FUSE; COOPCACHE_ALLOW_SKIP=1 skips what
# this machine cannot run. About six minutes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
who=bench-all default_bin=$root/target/release/coopcache profile=release
# shellcheck source=scripts/bench-prologue.sh
source "$root/scripts/bench-prologue.sh"

# The documented figures: docs/benchmarks.md, "Headline figures" (keep the
# two in step). name|documented|commit|command|python over the JSON lines
figures=(
    "replay LRU w106 27,500 blocks, Mreq/s|81.5|4b3f9a5|bench replay-speed --json|print(rows[0]['lru_mreq_s'])"
    "replay LRU / reference loop|2.9|4b3f9a5|bench replay-speed --json|print(rows[0]['ratio'])"
    "peer stream, library, GB/s|1.06|4b3f9a5|bench stream --json|print([x['gb_s'] for x in rows[0]['rows'] if x['path']=='peer hit, library'][0])"
    "peer stream, library / TCP|0.40|4b3f9a5|bench stream --json|print([x['of_tcp'] for x in rows[0]['rows'] if x['path']=='peer hit, library'][0])"
    "peer stream, gateway / TCP|0.31|4b3f9a5|bench stream --json|print([x['of_tcp'] for x in rows[0]['rows'] if x['path']=='peer hit, HTTP gateway'][0])"
    "peer stream, library / TLS link|0.79|2026-12-04|bench stream --json|print([x['of_tls'] for x in rows[0]['rows'] if x['path']=='peer hit, library'][0])"
    "peer stream, gateway / TLS link|0.62|2026-12-04|bench stream --json|print([x['of_tls'] for x in rows[0]['rows'] if x['path']=='peer hit, HTTP gateway'][0])"
    "remote hit p50 / node-thread round trip|1.68|4b3f9a5|bench latency --json|d=rows[0]; print([r['p50_us'] for r in d['rows'] if r['system']=='coopcache' and r['concurrency']==1][0] / d['ceiling']['rtt_node_threads_p50_us'])"
    "remote hit p50 / TLS round trip (8 KiB)|1.48|2026-12-04|bench latency --json|d=rows[0]; print([r['p50_us'] for r in d['rows'] if r['system']=='coopcache' and r['concurrency']==1][0] / d['ceiling']['tls_rtt_8k_node_threads_p50_us'])"
    "reads/s at 48 readers / memcached's|1.22|4b3f9a5|bench latency --json|d=rows[0]; g=lambda s: [r['per_s'] for r in d['rows'] if r['system']==s and r['concurrency']==48][0]; print(g('coopcache') / g('memcached'))"
    "mount from peers / FUSE passthrough|0.35|4b3f9a5|bench mount --phases throughput --file-size 64MiB --json|from statistics import median as md; step=lambda k: md([x['mb_per_s'] for x in rows if k in x.get('step', '')]); print(step('from peers') / step('FUSE passthrough'))"
    "S3 endpoint: origin bytes / direct boto3|0.145|2026-12-06|bench s3 --json|print([float(r['step'].split(': ')[-1]) for r in rows if r['step'].startswith('origin bytes coopcache')][0])"
    "S3 endpoint: later epochs / direct boto3|1.666|2026-12-06|bench s3 --json|print([float(r['step'].split(': ')[-1]) for r in rows if r['step'].startswith('later epoch s coopcache')][0])"
    "demo: N-Chance origin reads / Base's|0.62|4b3f9a5|demo --json|o={r['algorithm']: r['origin_reads'] for r in rows if 'algorithm' in r}; print(o['nchance'] / o['base'])"
)

can_mount() { [[ $(id -u) == 0 && -e /dev/fuse ]] && command -v fusermount3 >/dev/null; }

declare -A cache
printf '%-42s %11s %9s %9s\n' figure documented commit now
for f in "${figures[@]}"; do
    IFS='|' read -r name documented commit cmd py <<<"$f"
    if [[ $cmd == *"bench mount"* ]] && ! can_mount; then
        [[ -n ${COOPCACHE_ALLOW_SKIP:-} ]] || { echo "bench-all: $name needs root and FUSE (or COOPCACHE_ALLOW_SKIP=1)" >&2; exit 2; }
        printf '%-42s %11s %9s %9s\n' "$name" "$documented" "$commit" skipped
        continue
    fi
    # Each command runs once; its figures share the run.
    if [[ -z ${cache[$cmd]:-} ]]; then
        # shellcheck disable=SC2086
        "$bin" $cmd >"$work/out.$((${#cache[@]}))" 2>"$work/err" || { cat "$work/err" >&2; echo "bench-all: '$cmd' failed" >&2; exit 2; }
        cache[$cmd]=$work/out.$((${#cache[@]}))
    fi
    now=$(python3 -c "import json,sys
rows=[json.loads(l) for l in sys.stdin if l.strip()]
$py" <"${cache[$cmd]}")
    printf '%-42s %11s %9s %9.3f\n' "$name" "$documented" "$commit" "$now"
done
