"""The package's house rules, checked on its source: few top-level rooms, few arrows between
them and no cycle, no source file over 500 lines, and a default ``Explainer`` call that runs code
in at most ten modules."""

from __future__ import annotations

import ast
import sys
import threading
from collections import Counter
from pathlib import Path

import numpy as np

import ferroshap as fs

PACKAGE = Path(fs.__file__).parent


def room(module: str) -> str:
    """The top-level room (module or folder) of a dotted ``ferroshap`` module name."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def rooms() -> set[str]:
    """The package's top-level modules and folders."""
    return {p.stem for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}


def imported(node: ast.AST) -> list[str]:
    """The ``ferroshap`` modules an import statement names (``from ferroshap import x`` names
    ``ferroshap.x``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module == "ferroshap":
        return [f"ferroshap.{alias.name}" for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module:
        return [node.module]
    return []


def arrows() -> dict[str, set[str]]:
    """Rooms each room imports from (the compiled ``_core`` left out: every room may use it)."""
    graph: dict[str, set[str]] = {}
    names = rooms() - {"_core"}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        source = room(".".join(parts))
        for node in ast.walk(ast.parse(path.read_text())):
            for module in imported(node):
                target = room(module) if module.split(".")[0] == "ferroshap" else None
                if target in names and target != source:
                    graph.setdefault(source, set()).add(target)
    return graph


def test_few_rooms_few_arrows_and_no_cycle():
    graph = arrows()
    assert len(rooms()) <= 14, sorted(rooms())
    assert sum(map(len, graph.values())) <= 60
    done: set[str] = set()

    def visit(node: str, path: tuple[str, ...]) -> None:
        assert node not in path, f"import cycle: {' -> '.join((*path, node))}"
        if node not in done:
            for target in graph.get(node, ()):
                visit(target, (*path, node))
            done.add(node)

    for node in graph:
        visit(node, ())


def test_no_source_file_over_500_lines():
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 500
    }
    assert long == {}


def test_a_default_call_runs_code_in_at_most_ten_modules():
    rng = np.random.default_rng(0)
    background, rows = rng.normal(size=(20, 30)), rng.normal(size=(2, 30))

    def model(x):
        return np.tanh(x[:, 0] * x[:, 1]) + x.sum(axis=1)

    fs.Explainer(model, background)(rows)  # imports and warm-up outside the count
    seen: Counter[str] = Counter()

    def profile(frame, event, arg):
        if event == "call" and str(PACKAGE) in frame.f_code.co_filename:
            seen[frame.f_code.co_filename] += 1

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        fs.Explainer(model, background)(rows)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    assert 0 < len(seen) <= 10, sorted(seen)
