"""The ``ferroshap`` command: version, help, name listings, bad arguments, missing libraries."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ferroshap as fs
from ferroshap.bench import available_estimators, available_games
from ferroshap.bench.cli import main


def test_version(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"ferroshap {fs.__version__}"


def test_bare_command_prints_help_with_the_subcommands(capsys) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: ferroshap") and "bench" in out


def test_console_script_entry_point_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ferroshap.bench.cli", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0 and "bench" in result.stdout


def test_bench_help_lists_every_game_method_and_peer_with_defaults(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    out = " ".join(capsys.readouterr().out.split())  # undo the line wrapping
    for name in [*available_games(), *available_estimators()]:
        assert name in out
    assert "default: 128,256,512,1024,2048" in out and "--quick: 96,192,384" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--games", "soum,nope"], "unknown game(s) 'nope'; valid: soum"),
        (["--methods", "leverage,nope"], "unknown method or peer 'nope'; valid: auto, kernel"),
        (["--budgets", "128,abc"], "integers >= 2, got 'abc'"),
        (["--budgets", "1"], "integers >= 2, got '1'"),
        (["--budgets", "2.5"], "got '2.5'"),
        (["--seeds", "0"], "positive integer, got '0'"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(argv, message, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_missing_polars_names_the_extra(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "polars", None)  # makes `import polars` fail
    assert main(["bench", "--games", "soum", "--methods", "leverage"]) == 1
    err = capsys.readouterr().err
    assert "needs polars" in err and "ferroshap[bench]" in err


def test_missing_matplotlib_is_reported_before_running(monkeypatch, capsys, tmp_path) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    argv = ["bench", "--games", "soum", "--methods", "leverage", "--plot", str(tmp_path / "p.png")]
    assert main(argv) == 1
    assert "--plot needs matplotlib" in capsys.readouterr().err


def test_missing_peer_and_tree_truth_are_skipped_with_the_reason(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "shap", None)
    argv = ["bench", "--games", "linear,lightgbm", "--methods", "leverage,shap-kernel"]
    code = main([*argv, "--budgets", "64", "--seeds", "1", "--quick"])
    assert code == 0
    out = capsys.readouterr().out
    assert "skipped shap-kernel: needs shap>=0.54 (not installed" in out
    assert "skipped game lightgbm: needs shap (pip install shap)" in out
    assert "leverage" in out


def test_quick_defaults_run(capsys) -> None:
    assert main(["bench", "--quick", "--seeds", "1", "--budgets", "96"]) == 0
    out = capsys.readouterr().out
    assert all(method in out for method in ["leverage", "kernel", "permutation", "unbiased"])
