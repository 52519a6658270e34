#!/usr/bin/env bash
# Sets everything up from a bare machine, then runs every check and test, cheapest first:
# formatting and lints (cargo fmt, ruff), clippy, the Rust core's tests (cargo nextest when
# installed, else cargo test; the core has no doc tests), the stub check and the whole pytest suite, slow statistical tests
# included. Arguments go to pytest: `bash scripts/test.sh -m "not slow"` skips the slow ones.
#
# Rust builds: the release extension (bootstrap), clippy's check build and the test build (dev
# profile, dependencies optimized). Each prints its time, and a line every 30 s while it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
# Each step prints its name, a line every 30 s while it runs (a quiet clippy or release build
# takes minutes), and its time; a failing step stops the script with its exit status.
step() {
    local what=$1 t=$SECONDS rc=0
    echo "test.sh: $what" >&2
    shift
    (
        started=$(date +%s)
        nap=
        trap '[ -n "$nap" ] && kill "$nap" 2>/dev/null; exit 0' TERM
        while :; do
            sleep 30 &
            nap=$!
            wait "$nap"
            echo "test.sh:   $what: running for $(($(date +%s) - started)) s" >&2
        done
    ) &
    local beat=$!
    "$@" || rc=$?
    kill "$beat" 2>/dev/null || true
    wait "$beat" 2>/dev/null || true
    if [ "$rc" -ne 0 ]; then
        echo "test.sh:   $what failed (exit $rc) after $((SECONDS - t)) s" >&2
        exit "$rc"
    fi
    echo "test.sh:   done in $((SECONDS - t)) s" >&2
}

step "formatting (cargo fmt --check)" cargo fmt --all --check
step "setting up .venv (scripts/bootstrap.sh)" bash scripts/bootstrap.sh
step "ruff" .venv/bin/ruff check python tests benches examples
step "ruff format --check" .venv/bin/ruff format --check python tests benches examples
step "clippy -D warnings" cargo clippy --workspace --all-targets --quiet -- -D warnings
if cargo nextest --version >/dev/null 2>&1; then
    step "Rust tests (cargo nextest)" cargo nextest run -p ferroshap-core --no-fail-fast \
        --status-level fail --final-status-level slow
else
    step "Rust tests (cargo test)" cargo test -p ferroshap-core --quiet
fi
step "stub check (mypy.stubtest)" .venv/bin/python -m mypy.stubtest ferroshap._core
step "pytest" .venv/bin/python -m pytest "$@"
echo "test.sh: all checks passed in $((SECONDS - started)) s" >&2
