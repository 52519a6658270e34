"""GPU end-to-end check: a PyTorch MLP explained on CUDA (and on the CPU for comparison).

Prints the Explainer's throughput in model rows per second against the model's own forward
throughput at the same batch size; the target is >= 90 % on CUDA and >= 80 % on the CPU
(masking and copies cost at most 10 % / 20 %). Run on a machine with a GPU:

    python benches/gpu/gpu_check.py            # cuda if available, and cpu
    python benches/gpu/gpu_check.py --devices cpu --quick
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import ferroshap as fs


def mlp(device: str) -> torch.nn.Module:
    """Input 256, two hidden layers of 1024, float32."""
    torch.manual_seed(0)
    return (
        torch.nn.Sequential(
            torch.nn.Linear(256, 1024),
            torch.nn.ReLU(),
            torch.nn.Linear(1024, 1024),
            torch.nn.ReLU(),
            torch.nn.Linear(1024, 1),
        )
        .float()
        .to(device)
        .eval()
    )


def synchronize(device: str) -> None:
    """Wait for queued CUDA work so that timings are honest."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def forward_rows_per_second(model: torch.nn.Module, batch: int, device: str, repeat: int) -> float:
    """The model alone on random inputs of ``batch`` rows."""
    inputs = torch.randn(batch, 256, device=device)
    with torch.inference_mode():
        model(inputs)
        synchronize(device)
        start = time.perf_counter()
        for _ in range(repeat):
            model(inputs)
        synchronize(device)
    return batch * repeat / (time.perf_counter() - start)


def check(device: str, quick: bool) -> None:
    """Explain rows on ``device`` and compare with the model's own throughput."""
    model = mlp(device)
    rng = np.random.default_rng(0)
    n_background, n_rows, budget = (8, 8, 256) if quick else (16, 64, 2048)
    background = torch.as_tensor(rng.normal(size=(n_background, 256)), dtype=torch.float32)
    X = torch.as_tensor(rng.normal(size=(n_rows, 256)), dtype=torch.float32)
    batch_sizes = []

    def recorded(z: torch.Tensor) -> torch.Tensor:
        batch_sizes.append(len(z))
        return model(z)

    explainer = fs.Explainer(
        recorded, background.to(device), budget=budget, seed=0, method="leverage"
    )
    explainer(X.to(device))  # warm-up (kernels, allocator)
    batch_sizes.clear()
    synchronize(device)
    start = time.perf_counter()
    explanation = explainer(X.to(device))
    synchronize(device)
    seconds = time.perf_counter() - start
    model_rows = sum(batch_sizes)
    batch = max(batch_sizes)
    ours = model_rows / seconds
    alone = forward_rows_per_second(model, batch, device, repeat=max(3, len(batch_sizes)))
    print(
        f"{device:>6}: {model_rows} model rows in {seconds:.3f} s, batch {batch}: "
        f"explainer {ours:,.0f} rows/s, model alone {alone:,.0f} rows/s, "
        f"ratio {ours / alone:.1%}; values finite: {np.isfinite(explanation.values).all()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", default=None, help="comma list (default: cuda if any, cpu)")
    parser.add_argument("--quick", action="store_true", help="small sizes")
    args = parser.parse_args()
    devices = (
        args.devices.split(",")
        if args.devices
        else (["cuda", "cpu"] if torch.cuda.is_available() else ["cpu"])
    )
    for device in devices:
        check(device, args.quick)


if __name__ == "__main__":
    main()
