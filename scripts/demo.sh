#!/usr/bin/env bash
# Sets everything up from a bare machine, then runs the demo: several estimators explaining a
# LightGBM model, each scored against exact Shapley values.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/python examples/demo.py "$@"
