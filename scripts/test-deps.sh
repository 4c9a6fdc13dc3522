#!/usr/bin/env bash
# Everything the tests need beyond Rust, installed where missing
# (idempotent; Debian, as root). The README's test command runs it first,
# and so does CI. Without it, a test whose tool or server is missing fails
# and says so; `COOPCACHE_ALLOW_SKIP=1` turns those failures into skips
# (printed as SKIPPED) for a quick run on a machine without them.
#
#   - MinIO (S3) and nginx (HTTP) for the origin tests, memcached and Redis
#     for `bench latency`: scripts/test-servers.sh (a cold MinIO build takes
#     about 3.5 minutes on 2 cores);
#   - iproute2: network namespaces for the partition test (needs root);
#   - fuse3, rsync, fio, git, sqlite3, python3: the mount tests and the programs they run on
#     the mount;
#   - rclone, s3fs: the FUSE mounts `bench mount --phases dataset` compares
#     coopcache with (crates/cli/tests/bench_dataset.rs);
#   - bindfs: the plain FUSE passthrough `bench mount --phases files` reads
#     the mounts' times against (crates/cli/tests/bench_files.rs);
#   - prometheus: promtool checks /metrics;
#   - systemd: systemd-analyze verifies deploy/coopcache.service (a fresh
#     Debian has none; installing it starts nothing);
#   - chromium: the dashboard test drives it headless;
#   - fsx (crates.io, about 45 s to build): the File System eXerciser the
#     mount tests run (crates/cli/tests/mount_fsx.rs);
#
# Not helm and kubeconform: no test needs them, only scripts/check-helm.sh
# (CI's "helm chart" step), whose `--install` builds them (a cold helm
# build is the longest install; CI runs it beside the tests).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/test-servers.sh install

# command:package pairs; a package is installed only if its command is missing.
wanted="ip:iproute2 fusermount3:fuse3 rsync:rsync fio:fio git:git sqlite3:sqlite3 python3:python3 rclone:rclone s3fs:s3fs bindfs:bindfs promtool:prometheus systemd-analyze:systemd chromium:chromium"
missing=""
for p in $wanted; do
    command -v "${p%%:*}" >/dev/null || missing="$missing ${p##*:}"
done
if [ -n "$missing" ]; then
    echo "installing:$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
fi

command -v fsx >/dev/null || cargo install fsx --version 0.3.2 --locked --quiet

# The S3 clients the S3 endpoint's tests drive (crates/cli/tests/s3_clients.rs):
# boto3 and the AWS CLI from PyPI, pinned, in a venv of their own under
# target/ (the same botocore for both, so pip resolves them together).
s3_clients=target/s3-clients
if ! "$s3_clients/bin/python" -c 'import boto3' 2>/dev/null || ! [ -x "$s3_clients/bin/aws" ]; then
    python3 -c 'import venv, ensurepip' 2>/dev/null || {
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv python3-pip
    }
    rm -rf "$s3_clients"
    python3 -m venv "$s3_clients"
    "$s3_clients/bin/python" -m pip install -q --disable-pip-version-check boto3==1.43.11 awscli==1.45.11
fi
