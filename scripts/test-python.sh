#!/usr/bin/env bash
# The Python package's tests: runs docs/guide/python.md's shell block (a
# venv, the abi3 wheel of crates/python built with maturin and installed in
# it) and pytest on crates/python/tests. The wheel build shares the
# workspace's target/ and the tests' `ci` profile, so after `cargo test
# --profile ci` only the extension crate compiles.
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

# docs/guide/python.md's shell block, run as written (a fresh venv, ./venv,
# each run so nothing stale is imported) but for one word: `--release`
# becomes `--profile ci`, the release profile's settings in the directory
# `cargo test --profile ci` filled, so only the extension crate compiles
# (the release profile would build everything again: about 10 minutes on 2
# cores). The guide's unpinned `pip install` gets pinned versions from a
# constraints file (PIP_CONSTRAINT), so CI does not change under us.
block=$(sed -n '/^```sh$/,/^```$/p' docs/guide/python.md | sed '1d;$d')
case "$(printf '%s\n' "$block" | grep -c 'maturin build --release')" in
    1) ;;
    *) echo "docs/guide/python.md: one shell block with \`maturin build --release\` expected" >&2; exit 1 ;;
esac
constraints=$(mktemp)
printf '%s\n' maturin==1.16.0 pandas==2.3.3 pytest==8.4.2 >"$constraints"
export PIP_CONSTRAINT=$constraints PIP_DISABLE_PIP_VERSION_CHECK=1
rm -rf venv target/wheels
start=$(date +%s)
block=${block//--release/--profile ci}
built=$(mktemp)
bash -euo pipefail -c "${block//python3 -m venv/$python -m venv}" 2>&1 | tee "$built"
echo "the guide's block ran in $(( $(date +%s) - start )) s: $(ls target/wheels)"
# maturin resolves features for this one package, cargo test for the
# workspace: crates/python/Cargo.toml turns on in core's and sim's
# dependencies what the other crates do, so the wheel compiles only pyo3
# and itself (63 s) instead of core, sim and every proc macro again (2.5
# min of CI). A new dependency can break that; say so instead of paying it.
# CI runs this right after `cargo test --workspace --profile ci`, so there
# a compile of core is that; elsewhere core may simply have changed since.
if grep -q 'Compiling coopcache-core ' "$built"; then
    echo "scripts/test-python.sh: the wheel compiled coopcache-core; if cargo test had" >&2
    echo "just built it, a dependency's features differ between the two builds:" >&2
    echo "compare \`cargo tree --workspace -e normal -f '{p} {f}'\` with the same for" >&2
    echo "-p coopcache-python and add what differs to crates/python/Cargo.toml." >&2
    [ "${CI:-}" != true ] || exit 1
fi
rm -f "$built"
venv/bin/python -m pip install -q pytest
rm -f "$constraints"

# From outside the source tree, so the installed wheel is what is tested,
# not crates/python/python.
cd crates/python/tests
exec ../../../venv/bin/python -m pytest -q "$@" .
