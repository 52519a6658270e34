#!/usr/bin/env bash
# Sets everything up from a bare machine, then runs every check and test: formatting and lints
# (cargo fmt, clippy, ruff, stub check), the Rust core's tests (cargo test) and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test -p ferroshap-core
.venv/bin/ruff check python tests benches examples
.venv/bin/ruff format --check python tests benches examples
.venv/bin/python -m mypy.stubtest ferroshap._core
.venv/bin/python -m pytest "$@"
