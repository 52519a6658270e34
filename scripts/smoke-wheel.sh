#!/usr/bin/env bash
# Installs a built wheel into a clean virtual environment of each given Python, with nothing but
# its own dependencies and scikit-learn, and runs the README's quick start (examples/quickstart.py)
# from outside the checkout, so the installed package is what runs.
#
#   bash scripts/smoke-wheel.sh dist/ferroshap-*.whl [python ...]
#
# Without Pythons: the newest CPython pyenv has (else python3) and the newest 3.11 or 3.10.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "smoke-wheel: $*" >&2; }

wheel=$(realpath "$1")
shift
pythons=("$@")
if [ ${#pythons[@]} -eq 0 ]; then
    root=$(pyenv root 2>/dev/null || echo /nonexistent)
    newest=$(ls -d "$root"/versions/3.*/bin/python 2>/dev/null | sort -V | tail -1)
    older=$(ls -d "$root"/versions/3.1[01].*/bin/python 2>/dev/null | sort -V | tail -1)
    pythons=("${newest:-python3}")
    [ -n "$older" ] && pythons+=("$older")
fi
quickstart=$PWD/examples/quickstart.py
for python in "${pythons[@]}"; do
    version=$("$python" -c 'import sys; print(sys.version.split()[0])')
    env=$(mktemp -d)
    say "Python $version: installing $(basename "$wheel") and scikit-learn into a clean venv"
    "$python" -m venv "$env"
    "$env/bin/pip" install --quiet "$wheel" scikit-learn
    (cd "$env" && "$env/bin/python" -c 'import ferroshap; print("ferroshap", ferroshap.__version__, "from", ferroshap.__file__)' &&
        "$env/bin/python" "$quickstart")
    rm -rf "$env"
done
say "ok: ${#pythons[@]} Pythons"
