"""Explain an image classifier by its patches, against exact Shapley values.

A small neural network (scikit-learn's MLPClassifier) is trained here on the 8 x 8 digits of
``sklearn.datasets.load_digits``. ``fs.maskers.Image(patch_size=2)`` makes each digit a game on
its 16 patches of 2 x 2 pixels; a masked patch takes the background value 0 (an empty pixel).
The players are few enough to enumerate all 2^16 coalitions, so the script compares ``auto`` and
``leverage`` at budgets 256, 1024 and 4096 with the exact values, on several digits and seeds,
and prints the most important patches of one digit.

    python examples/image_demo.py           # 8 digits, 5 seeds
    python examples/image_demo.py --quick   # 3 digits, 2 seeds
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

import ferroshap as fs
from ferroshap.bench.metrics import relative_squared_error

BUDGETS = (256, 1024, 4096)
METHODS = ("auto", "leverage")


def class_probability(model: MLPClassifier, label: int) -> Callable[[np.ndarray], np.ndarray]:
    """The model's probability of ``label`` for a batch of images ``[batch, 8, 8]``."""

    def probability(images: np.ndarray) -> np.ndarray:
        return model.predict_proba(images.reshape(len(images), -1))[:, label]

    return probability


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer digits and seeds")
    args = parser.parse_args()
    n_images, seeds = (3, range(2)) if args.quick else (8, range(5))

    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.images, digits.target, test_size=0.25, random_state=0
    )
    model = MLPClassifier(hidden_layer_sizes=(64,), max_iter=400, random_state=0)
    model.fit(x_train.reshape(len(x_train), -1), y_train)
    accuracy = model.score(x_test.reshape(len(x_test), -1), y_test)
    print(f"MLP on 8x8 digits: test accuracy {accuracy:.3f}")

    masker = fs.maskers.Image(patch_size=2, fill=0.0)
    errors = {(m, b): [] for m in METHODS for b in BUDGETS}
    start = time.perf_counter()
    for image, label in zip(x_test[:n_images], y_test[:n_images], strict=True):
        f = class_probability(model, int(label))
        exact = fs.Explainer(f, masker=masker, method="exact")(image).values[0]
        for method in METHODS:
            for budget in BUDGETS:
                for seed in seeds:
                    ex = fs.Explainer(f, masker=masker, method=method, budget=budget, seed=seed)
                    errors[method, budget].append(
                        relative_squared_error(ex(image).values[0], exact)
                    )
    print(
        f"{n_images} digits x {len(seeds)} seeds, 16 patches, exact by enumeration of 2^16 "
        f"coalitions ({time.perf_counter() - start:.1f} s in all)"
    )
    print("relative error ‖φ̂ - φ‖² / ‖φ‖², median over digits and seeds:")
    print("| method | " + " | ".join(f"budget {b}" for b in BUDGETS) + " |")
    print("|---|" + "---|" * len(BUDGETS))
    for method in METHODS:
        cells = " | ".join(f"{np.median(errors[method, b]):.2e}" for b in BUDGETS)
        print(f"| {method} | {cells} |")

    image, label = x_test[0], int(y_test[0])
    explanation = fs.Explainer(class_probability(model, label), masker=masker, budget=1024)(image)
    phi = explanation.values[0]
    top = np.argsort(-np.abs(phi))[:4]
    print(
        f"digit {label}: p = {model.predict_proba(image.reshape(1, -1))[0, label]:.3f}, "
        f"empty image {explanation.base_values[0]:.3f}; top patches "
        + ", ".join(f"{explanation.feature_names[i]} {phi[i]:+.3f}" for i in top)
    )


if __name__ == "__main__":
    main()
