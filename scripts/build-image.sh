#!/usr/bin/env bash
# Builds the FROM-scratch image (deploy/Containerfile.scratch) around a
# coopcache binary with podman, and checks it runs: the image's binary
# prints its version, and a node started from it with the Helm chart's
# default configuration (rendered by scripts/check-helm.sh, or
# deploy/coopcache.toml) serves its status to the host.
#
#   scripts/build-image.sh [BINARY [TAG]]   # default: target/ci/coopcache coopcache:dev
#
# Needs podman (Debian's podman package; installed if missing, as root).
# On a machine whose cgroups are mixed v1 and v2 (this one), crun refuses
# to start containers ("cgroups in hybrid mode not supported"), so runc
# runs them; and a container cannot raise its open-file or process limits
# above the caller's ("setrlimit RLIMIT_NOFILE: Operation not permitted"),
# so they are set to the caller's own.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/ci/coopcache}
TAG=${2:-coopcache:dev}
[ -x "$BIN" ] || { echo "build-image: no coopcache binary at $BIN" >&2; exit 1; }

start=$SECONDS
if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc >/dev/null
    echo "build-image: podman and runc installed in $((SECONDS - start)) s"
fi

ctx=$(mktemp -d)
cleanup() { rm -rf "$ctx"; }
trap cleanup EXIT
root=$ctx/rootfs
install -D -m 0755 "$BIN" "$root/usr/local/bin/coopcache"
# The loader and libraries a dynamic binary names (none for a static one).
if ldd "$BIN" >/dev/null 2>&1; then
    for lib in $(ldd "$BIN" | grep -o '/[^ ]*'); do
        install -D -m 0755 "$(realpath "$lib")" "$root$lib"
    done
fi
[ -f /etc/ssl/certs/ca-certificates.crt ] &&
    install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
install -D -m 0644 deploy/coopcache.toml "$root/etc/coopcache/coopcache.toml"
mkdir -p "$root/tmp" && chmod 1777 "$root/tmp"

podman build --quiet -f deploy/Containerfile.scratch -t "$TAG" "$ctx" >/dev/null
echo "build-image: $TAG built in $((SECONDS - start)) s ($(podman image inspect "$TAG" --format '{{.Size}}') bytes)"

run=(podman --runtime runc run --rm --ulimit "nofile=$(ulimit -n):$(ulimit -n)"
    --ulimit nproc=4096:4096)
version=$("${run[@]}" "$TAG" --version)
[ "$version" = "$("$BIN" --version)" ] || { echo "build-image: the image says $version" >&2; exit 1; }

# A node from the image: the host's network (no bridge to set up), its
# keys, origin and token mounted read-only as the chart's Secret and
# hostPath would be, the example configuration's addresses set by flags.
mkdir -p "$ctx/origin"
echo "hello from the origin" >"$ctx/origin/hello.txt"
"$BIN" cluster init --dir "$ctx/keys" --nodes node >/dev/null
rm "$ctx/keys/ca.key"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$ctx/token"
chmod -R a+rX "$ctx/keys" "$ctx/origin" "$ctx/token"
port=$((20000 + RANDOM % 20000)) http=$((20000 + RANDOM % 20000))
name=coopcache-check-$$
"${run[@]}" -d --name "$name" --network host \
    -v "$ctx/keys:/var/lib/coopcache:ro" -v "$ctx/origin:/srv/data:ro" -v "$ctx/token:/run/token:ro" \
    "$TAG" node --config /etc/coopcache/coopcache.toml --memory 64MiB \
    --listen "127.0.0.1:$port" --http "127.0.0.1:$http" --http-token-file /run/token >/dev/null
cleanup() { podman rm -f "$name" >/dev/null 2>&1 || true; rm -rf "$ctx"; }
for _ in $(seq 100); do
    "$BIN" status --node "127.0.0.1:$http" --token-file "$ctx/token" >/dev/null 2>&1 && break
    sleep 0.2
done
got=$("$BIN" cat hello.txt --node "127.0.0.1:$http" --token-file "$ctx/token") || {
    podman logs "$name" >&2
    exit 1
}
[ "$got" = "hello from the origin" ] || { echo "build-image: read $got" >&2; exit 1; }
podman stop --time 30 "$name" >/dev/null
echo "build-image: a node from $TAG served a file; ok in $((SECONDS - start)) s"
