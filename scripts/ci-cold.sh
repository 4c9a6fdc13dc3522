#!/usr/bin/env bash
# CI as a fresh machine runs it: `.ci/run` in a fresh clone of HEAD (or of
# the commit given), with an empty cargo home (only the toolchain's
# binaries copied) and an empty target directory, `CI=true`, and
# `../shared` beside the clone. Prints every step's minutes and the total.
# What the machine itself has installed (Debian packages, MinIO in
# ~/go/bin, the Go module cache) is not removed: pass --no-servers... no;
# remove those by hand for a truly fresh run (see the note it prints).
#
#   scripts/ci-cold.sh [COMMIT]      log in target/ci-cold/LOG
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
commit=${1:-HEAD}
work=$(mktemp -d /tmp/coopcache-ci-cold-XXXXXX)
trap 'rm -rf "$work"' EXIT
git -C "$root" rev-parse --verify "$commit^{commit}" >/dev/null
git clone -q "$root" "$work/main"
git -C "$work/main" checkout -q "$(git -C "$root" rev-parse "$commit")"
ln -s "$(cd "$root/../shared" && pwd)" "$work/shared"

# An empty cargo home with the toolchain's proxies only: every crate is
# downloaded and every tool (cargo-fuzz, ...) installed again.
home=$work/cargo-home
mkdir -p "$home/bin"
cp -a "${CARGO_HOME:-$HOME/.cargo}/bin/." "$home/bin/"

mkdir -p "$root/target/ci-cold"
log=$root/target/ci-cold/$(date -u +%Y%m%dT%H%M%S)-$(git -C "$work/main" rev-parse --short HEAD).log
echo "ci-cold: $(git -C "$work/main" log --oneline -1) in $work; log $log"
# `|| true`: on a truly fresh machine none is there, the loop's last test
# fails and `set -e` would end the script here without a word.
before=$(for c in nginx chromium fusermount3 memcached redis-server rclone s3fs promtool; do command -v "$c" >/dev/null && printf '%s ' "$c"; done || true)
start=$(date +%s)
rc=0
(cd "$work/main" && env CI=true CARGO_HOME="$home" PATH="$home/bin:$PATH" \
    GOPATH="$work/go" GOCACHE="$work/go-cache" bash .ci/run) 2>&1 |
    while IFS= read -r line; do printf '%s %s\n' "$(date +%s)" "$line"; done >"$log" || rc=$?
end=$(date +%s)

echo "installed before the run (a fresh machine installs them in the background): ${before:-none}"

# Each step from its `== name` line to the next.
awk -v end="$end" '
    / == / { if (name != "") printf "%6.1f min  %s\n", ($1 - t) / 60, name
             t = $1; name = $0; sub(/^[0-9]+ == /, "", name); sub(/ \([0-9:]+\)$/, "", name) }
    END { if (name != "") printf "%6.1f min  %s\n", (end - t) / 60, name }' "$log"
grep -E '^[0-9]+ test result:' "$log" | awk '{p += $5; f += $7; i += $9} END {printf "tests: %d passed, %d failed, %d ignored (Rust)\n", p, f, i}'
grep -E '^[0-9]+ [0-9]+ passed' "$log" | tail -1 | cut -d' ' -f2- | sed 's/^/python: /' || true
tail -n 3 "$log" | cut -d' ' -f2-
awk -v s="$start" -v e="$end" -v rc="$rc" 'BEGIN { printf "total %.1f min, .ci/run exit %d\n", (e - s) / 60, rc }'
exit "$rc"
