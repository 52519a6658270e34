"""Every ```python block of README.md and docs/*.md runs as written.

The blocks of one file run in order in one namespace (a later block may use the names an earlier
one defined), in a temporary working directory. A block is skipped only when the line right
before its fence is ``<!-- skip: <reason> -->``; the reason is reported.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP = re.compile(r"<!--\s*skip:\s*(?P<reason>.+?)\s*-->")


@dataclass(frozen=True)
class Block:
    """One fenced Python block: its first code line, its code and why it is skipped (if it is)."""

    line: int
    code: str
    skip: str | None


def python_blocks(text: str) -> list[Block]:
    """The ```python blocks of a Markdown ``text``, in order."""
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```python":
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        reason = SKIP.fullmatch(before.strip())
        code = "\n".join(lines[i + 1 : end]) + "\n"
        blocks.append(Block(i + 2, code, reason["reason"] if reason else None))
        i = end + 1
    return blocks


def test_blocks_are_found() -> None:
    """Blocks, their first line and the skip marker right before the fence are read."""
    text = "a\n<!-- skip: needs a GPU -->\n```python\nx = 1\n```\n\n```python\ny = x\n```\n"
    blocks = python_blocks(text)
    assert [(b.line, b.code, b.skip) for b in blocks] == [
        (4, "x = 1\n", "needs a GPU"),
        (8, "y = x\n", None),
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_page_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every page has an example, and its blocks run in order in one namespace."""
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    assert blocks, f"{page.name} has no ```python example"
    monkeypatch.setenv("MPLBACKEND", "Agg")  # plots draw off screen
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    skipped = []
    for block in blocks:
        if block.skip is not None:
            skipped.append(f"line {block.line}: {block.skip}")
            continue
        name = f"{page.relative_to(ROOT).as_posix()}:{block.line}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # a deprecated spelling in our own examples is an error
            warnings.filterwarnings("error", category=DeprecationWarning, module="docs_")
            exec(compile(block.code, name, "exec"), namespace)
    assert len(skipped) < len(blocks), f"every block of {page.name} is skipped"
