#!/usr/bin/env bash
# Sets up a fresh machine for ferroshap: a virtual environment in .venv with the package built
# from source (Rust extension in release mode) and every test/benchmark dependency.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if ! command -v cargo >/dev/null 2>&1; then
    echo "bootstrap: cargo (the Rust toolchain) is required to build ferroshap's core" >&2
    exit 1
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'
