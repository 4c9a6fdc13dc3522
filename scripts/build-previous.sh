#!/usr/bin/env bash
# Builds the previous release's `coopcache` (0.1.0, protocol version 14)
# into target/previous/coopcache, for the rolling-upgrade test
# (crates/cli/tests/upgrade.rs), from its tag (v0.1.0) or, in a clone
# without tags, its commit. It builds in this checkout's target directory
# with the `ci` profile, so only the release's own crates compile again
# (at opt-level 1; the dependencies, shared, are reused), then puts this
# checkout's binary back at target/ci/coopcache. Does nothing if
# target/previous/coopcache is that release already.
#
#   scripts/build-previous.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RELEASE=0.1.0
TAG=v$RELEASE
COMMIT=51fc95e89d54f44f1d705aea0402c4e66151ec83
out=target/previous
bin=$out/coopcache

if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -qx "coopcache $RELEASE"; then
    echo "build-previous: $bin is coopcache $RELEASE already"
    exit 0
fi
ref=$TAG
git rev-parse -q --verify "$ref^{commit}" >/dev/null || ref=$COMMIT
if ! git rev-parse -q --verify "$ref^{commit}" >/dev/null; then
    echo "build-previous: neither tag $TAG nor commit $COMMIT is in this clone" \
        "(a shallow clone? \`git fetch --unshallow\` or \`git fetch origin tag $TAG\`)" >&2
    exit 1
fi

src=$out/src
rm -rf "$src"
mkdir -p "$src"
git archive "$ref" | tar -x -C "$src"
# Its own crates at opt-level 1, not 3: the upgrade test needs the old
# protocol, not its speed, and they compile in 60% of the time (CI's
# cold run on 2 cores, 2026-12-07: 3.9 minutes at 1, 6.3 at 3).
# Overrides for named packages leave every dependency's build as the
# tests' own, so none compiles again.
for pkg in coopcache coopcache-core coopcache-sim coopcache-node coopcache-mount \
    coopcache-console coopcache-bench; do
    printf '\n[profile.ci.package.%s]\nopt-level = 1\n' "$pkg"
done >>"$src/Cargo.toml"
echo "build-previous: building coopcache $RELEASE ($ref) in target/ci"
CARGO_TARGET_DIR="$PWD/target" cargo build --profile ci --locked \
    --manifest-path "$src/Cargo.toml" -p coopcache --bin coopcache
cp target/ci/coopcache "$bin.tmp"
mv "$bin.tmp" "$bin"
rm -rf "$src"
# That build left the previous release at target/ci/coopcache: this
# checkout's takes its place again. The tests' build, not `cargo build -p
# coopcache`: its features are the whole workspace's, so nothing compiles
# again if `cargo test --no-run` ran before (a link, under a second), and
# `cargo test` needs all of it anyway if not.
cargo test --workspace --profile ci --no-run --quiet
"$bin" --version
target/ci/coopcache --version
