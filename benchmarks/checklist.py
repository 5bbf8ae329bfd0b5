"""What the accelerator checklist's two halves share: the flags, the tiny CPU mode and the loss
check (`accelerator_checklist.py`, ours on TensorFlow; `accelerator_peers.py`, HF on PyTorch).
Imports neither framework."""

import argparse

import numpy as np

from benchmarks import prelude


def checklist_parser(script: str, description: str, batch_size: int) -> argparse.ArgumentParser:
    """The flags both halves take; `script` names the default `--results-json`."""
    parser = prelude.parser(script, description)
    parser.add_argument("--batch-size", type=int, default=batch_size)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--num-masked", type=int, default=20)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--convergence-steps", type=int, default=30)
    parser.add_argument("--loss-tolerance", type=float, default=0.1)
    parser.add_argument(
        "--peak-tflops", type=float, default=None,
        help="the device's dense 16-bit peak; default: the measured GEMM roof",
    )  # fmt: skip
    parser.add_argument("--tiny", action="store_true", help="a tiny model on batch 4, for a CPU")
    return parser


def make_tiny(args) -> None:
    """The tiny CPU mode's sizes: batch 4 × 32, 4 masked, 2 timed and 6 checked steps."""
    args.batch_size, args.steps, args.convergence_steps = 4, 2, 6
    args.sequence_length, args.num_masked = 32, 4


def loss_check(name: str, curve, reference, tolerance: float) -> dict:
    """`curve` against the float32 `reference` from the same weights: finite and within
    `tolerance` at every step. Prints one line; returns the record for the JSON."""
    difference = float(np.max(np.abs(np.array(curve) - reference)))
    passed = bool(np.isfinite(curve).all()) and difference <= tolerance
    print(f"  {name}: loss {curve[0]:.3f} -> {curve[-1]:.3f} (float32 {reference[0]:.3f} -> "
          f"{reference[-1]:.3f}), largest difference {difference:.4f}: "
          f"{'ok' if passed else 'FAILED'}")  # fmt: skip
    return {"losses": list(curve), "float32_losses": list(reference),
            "max_difference": difference, "passed": passed}  # fmt: skip
