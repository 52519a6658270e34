#!/usr/bin/env bash
# Sets up a fresh machine for ferroshap: a virtual environment in .venv with the package built
# from source (Rust extension in release mode) and every test/benchmark dependency.
#
# The interpreter is the first that runs and is Python >= 3.12 (the peers shapiq >= 1.8 and
# shap >= 0.54 need it) among: $PYTHON; pyenv's Pythons, newest first; python3. An existing .venv
# on another Python is recreated.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "bootstrap: $*" >&2; }

if ! command -v cargo >/dev/null 2>&1; then
    say "cargo (the Rust toolchain) is required to build ferroshap's core"
    exit 1
fi

recent() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }

candidates=()
[ -n "${PYTHON:-}" ] && candidates+=("$PYTHON")
if command -v pyenv >/dev/null 2>&1; then
    root=$(pyenv root)
    while IFS= read -r p; do candidates+=("$p"); done < <(
        ls -d "$root"/versions/3.1[2-9]*/bin/python 2>/dev/null | sort -V -r)
fi
candidates+=(python3)

python=""
for c in "${candidates[@]}"; do
    if recent "$c"; then python=$c; break; fi
done
if [ -z "$python" ]; then
    python=${PYTHON:-python3}
    say "no Python >= 3.12 found; using $("$python" --version 2>&1) (the shapiq/shap peer" \
        "comparisons will be skipped)"
fi
want=$("$python" -c 'import sys; print(sys.version.split()[0])')

if [ -x .venv/bin/python ]; then
    have=$(.venv/bin/python -c 'import sys; print(sys.version.split()[0])' 2>/dev/null || echo none)
    if [ "$have" != "$want" ]; then
        say "recreating .venv (it has Python $have, want $want)"
        rm -rf .venv
    fi
fi
if [ ! -x .venv/bin/python ]; then
    say "creating .venv with Python $want ($python)"
    "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
if [ ! -e .venv/.deps-installed ] || [ pyproject.toml -nt .venv/.deps-installed ]; then
    say "installing the test and benchmark dependencies (a few minutes the first time)"
fi
# PyTorch from PyPI is the CUDA build: with its nvidia-* libraries it takes ~5.3 GB installed and
# as much again in pip's cache. It joins the test set (the `torch` extra: the torch backend, the
# torch masker tests and the text demo) only where the disk has room; elsewhere those tests skip
# with their reason. FERROSHAP_TORCH=1 / 0 forces the choice.
free_gib=$(df -Pk . | awk 'NR == 2 { print int($4 / 1048576) }')
say "$free_gib GiB free on this disk"
extras=test
pip_flags=(--quiet)
# below 16 GiB pip keeps no copy of what it downloads
[ "$free_gib" -ge 16 ] || pip_flags+=(--no-cache-dir)
case "${FERROSHAP_TORCH:-auto}" in
    1) extras=test,torch ;;
    0) ;;
    *)
        if [ "$free_gib" -ge 14 ]; then
            extras=test,torch
        else
            say "not installing PyTorch (~5.3 GB; $free_gib GiB free, 14 wanted): the torch" \
                "backend's tests, the torch masker tests and the text demo will skip"
        fi
        ;;
esac
say "building the Rust extension in release mode (~6 minutes the first time, seconds after)"
.venv/bin/python -m pip install "${pip_flags[@]}" -e ".[$extras]"
touch .venv/.deps-installed
say "ready: use .venv/bin/python, or 'source .venv/bin/activate'"
