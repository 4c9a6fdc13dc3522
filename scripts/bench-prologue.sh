# Sourced by scripts/perf-guard.sh and scripts/bench-all.sh: the binary to
# measure ($1, else $default_bin; an absolute path after this), the shared
# traces, and a scratch directory to run in (removed on exit). Expects
# `root`, `default_bin` and `who` set.
bin=${1:-$default_bin}
[[ -x $bin ]] || { echo "$who: no binary at $bin (cargo build --profile ${profile:-release} -p coopcache)" >&2; exit 2; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
export COOPCACHE_TRACES=${COOPCACHE_TRACES:-$root/../shared/traces}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
