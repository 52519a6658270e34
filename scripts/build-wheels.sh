#!/usr/bin/env bash
# Builds what a release publishes into dist/: one abi3 manylinux wheel (every CPython >= 3.10 on
# Linux x86_64 with the policy's glibc or newer) and an sdist.
#
#   bash scripts/build-wheels.sh                            # manylinux2014 (glibc >= 2.17)
#   MANYLINUX=manylinux_2_34 bash scripts/build-wheels.sh   # what CI builds (see below)
#
# The wheel is first built natively, reusing the release build in target/release that
# scripts/bootstrap.sh made, so fat LTO does not run again. maturin then checks the library's
# glibc symbol versions against the policy. When the system glibc is too new for the policy, the
# wheel is rebuilt with `maturin --zig` (zig from the ziglang package), which links against the
# policy's glibc: a full release build in target/x86_64-unknown-linux-gnu, a few minutes.
# maturin and ziglang are installed into target/wheel-tools (not into .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "build-wheels: $*" >&2; }

policy=${MANYLINUX:-manylinux2014}
out=${DIST:-dist}
python=.venv/bin/python
[ -x "$python" ] || python=$(command -v python3)
tools=target/wheel-tools
if [ ! -x "$tools/bin/maturin" ] || [ ! -d "$tools/lib" ]; then
    say "installing maturin and ziglang into $tools"
    "$python" -m venv "$tools"
    "$tools/bin/pip" install --quiet 'maturin>=1.8,<2' ziglang
fi
maturin() { PATH="$PWD/$tools/bin:$PATH" "$tools/bin/maturin" "$@"; }

rm -rf "$out"
mkdir -p "$out"
log=target/wheel-build.log
say "building the abi3 $policy wheel, reusing target/release"
if ! maturin build --release --interpreter "$python" --compatibility "$policy" --out "$out" \
    >"$log" 2>&1; then
    if grep -q "too-recent versioned symbols" "$log"; then
        # awk reads all of ldd's output: `| head -1` closed the pipe early, and ldd's SIGPIPE
        # failed the script (exit 141 under pipefail) in about half of the runs
        glibc=$(ldd --version | awk 'NR == 1 { print $NF }')
        say "the system glibc ($glibc) is too new for $policy: rebuilding with zig (a full" \
            "release build, ~3-5 minutes)"
        maturin build --release --interpreter "$python" --compatibility "$policy" --zig \
            --out "$out"
    else
        cat "$log" >&2
        exit 1
    fi
fi
say "building the sdist"
maturin sdist --out "$out" >/dev/null
ls -1 "$out"
