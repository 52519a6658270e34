"""Benchmark harness: estimators x budgets x seeds x games against exact Shapley values.

Every game is a tabular problem ``(model, background, X)`` with known exact Shapley values of the
interventional game; games defined on coalitions (sums of unanimity models) are posed as a model
of 0/1 inputs with an all-zero background and an all-one row, so every estimator — ferroshap's,
shap's and shapiq's — runs on the same game through the same interface and the same budget
accounting (distinct coalitions, ∅ and N included). ``ferroshap bench`` is the command line.
"""

from ferroshap.bench.estimators import available_estimators
from ferroshap.bench.games import BenchGame, available_games
from ferroshap.bench.harness import run_benchmark, summarize

__all__ = ["BenchGame", "available_estimators", "available_games", "run_benchmark", "summarize"]
