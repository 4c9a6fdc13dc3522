#!/usr/bin/env bash
# The Python package's tests: builds the abi3 wheel of crates/python with
# maturin, installs it into a fresh venv under target/ and runs pytest on
# crates/python/tests. The wheel build shares the workspace's target/ and the
# tests' `ci` profile, so after `cargo test --profile ci` only the extension
# crate compiles.
#
# Installs python3-venv and python3-pip with apt where the interpreter
# lacks them (Debian, as root). PYTHON picks the interpreter (default
# python3); extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
    echo "installing python3-venv python3-pip"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv python3-pip
fi

# The tools, pinned; a fresh venv each run so nothing stale is imported.
venv=target/python-venv
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
    maturin==1.16.0 pandas==2.3.3 pytest==8.4.2

start=$(date +%s)
rm -rf target/wheels
"$venv/bin/maturin" build --profile ci --quiet -m crates/python/Cargo.toml \
    --interpreter "$venv/bin/python" --out target/wheels
echo "wheel built in $(( $(date +%s) - start )) s: $(ls target/wheels)"
"$venv/bin/python" -m pip install -q --disable-pip-version-check target/wheels/coopcache-*.whl

# From outside the source tree, so the installed wheel is what is tested,
# not crates/python/python.
cd crates/python/tests
exec "../../../$venv/bin/python" -m pytest -q "$@" .
