"""Benchmark protocols: ferroshap against shap's KernelExplainer and shapiq, in one process
(:mod:`ferroshap.bench.protocols`; results under ``benches/results`` unless ``--out``).

Usage::

    python benches/protocols.py {accuracy,overhead,high-dim,lightgbm,all} [--seeds K] [--quick]
    python benches/protocols.py accuracy --methods auto --budgets 256,512,2048
    python benches/protocols.py report     # markdown tables of the saved results
"""

from __future__ import annotations

from pathlib import Path

from ferroshap.bench.protocols import main

if __name__ == "__main__":
    main(default_out=Path(__file__).resolve().parent / "results")
