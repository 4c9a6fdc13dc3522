#!/usr/bin/env bash
# The real servers the origin tests (crates/node/tests/origin.rs) start on
# loopback, each on a free port with a temporary data directory:
#   - MinIO, an S3-compatible server, for s3:// origins (built with `go install`;
#     about 3.5 minutes on 2 cores with an empty Go module cache);
#   - nginx from Debian, for http:// origins (ETags, ranges, If-Match);
#   - memcached and redis-server from Debian, the baselines of
#     `coopcache bench latency` (started by the bench on free ports).
#
#   scripts/test-servers.sh install   install what is missing (idempotent)
#   scripts/test-servers.sh which     print where the tests will find them
#
# The tests look for minio in $COOPCACHE_MINIO, PATH, then $GOPATH/bin
# (default ~/go/bin), and for nginx in $COOPCACHE_NGINX, PATH, then /usr/sbin.
set -euo pipefail

# A MinIO commit known to build with the Go toolchain here; override to move.
MINIO_VERSION=${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}

find_minio() {
    local gopath
    gopath=${GOPATH:-$HOME/go}
    for candidate in "${COOPCACHE_MINIO:-}" "$(command -v minio || true)" "$gopath/bin/minio"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

find_nginx() {
    for candidate in "${COOPCACHE_NGINX:-}" "$(command -v nginx || true)" /usr/sbin/nginx; do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

install_nginx() {
    if nginx=$(find_nginx); then
        echo "nginx: already installed at $nginx"
        return
    fi
    command -v apt-get >/dev/null || { echo "nginx: install it with your package manager" >&2; exit 1; }
    echo "nginx: installing the Debian package"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx >/dev/null
    find_nginx
}

find_baselines() {
    local missing=""
    for exe in memcached redis-server; do
        command -v "$exe" >/dev/null || [ -x "/usr/bin/$exe" ] || missing="$missing $exe"
    done
    echo "${missing# }"
}

install_baselines() {
    local missing
    missing=$(find_baselines)
    if [ -z "$missing" ]; then
        echo "memcached, redis-server: already installed"
        return
    fi
    command -v apt-get >/dev/null || { echo "$missing: install them with your package manager" >&2; exit 1; }
    echo "memcached, redis-server: installing the Debian packages"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends memcached redis-server >/dev/null
}

install_minio() {
    if minio=$(find_minio); then
        echo "minio: already installed at $minio"
        return
    fi
    command -v go >/dev/null || { echo "minio: needs Go (https://go.dev/dl/) for go install" >&2; exit 1; }
    echo "minio: go install github.com/minio/minio@$MINIO_VERSION (a few minutes)"
    local start=$SECONDS
    go install "github.com/minio/minio@$MINIO_VERSION"
    echo "minio: built in $((SECONDS - start)) s"
    find_minio
}

case "${1:-}" in
    install)
        install_nginx
        install_baselines
        install_minio
        ;;
    which)
        echo "minio: $(find_minio || echo 'missing')"
        echo "nginx: $(find_nginx || echo 'missing')"
        missing=$(find_baselines)
        echo "memcached, redis-server: ${missing:+missing }${missing:-installed}"
        ;;
    *)
        echo "usage: $0 install|which" >&2
        exit 2
        ;;
esac
