"""What the accelerator checklist's halves share: the flags, the tiny CPU mode, the workload
(batch and FLOPs), the GEMM roof's size and the loss check (`accelerator_checklist.py`, ours on
any Keras backend; `accelerator_peers.py`, HF on PyTorch). Imports no framework."""

import argparse

import numpy as np

from benchmarks import prelude
from benchmarks.batches import pretraining_batch, pretraining_targets
from benchmarks.roofs import training_flops_per_sequence


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


# The tiny CPU mode's model: ALBERT's shape, small enough to train in seconds on a CPU.
TINY = dict(
    vocabulary_size=1000, embedding_dim=16, hidden_dim=32, intermediate_dim=64, num_layers=2,
    num_heads=2, max_sequence_length=128,
)  # fmt: skip


def square_roof_size(tiny: bool) -> tuple[int, float]:
    """The side of the square GEMM the PyTorch peer and ours on JAX and PyTorch time for their
    roof, and for how many seconds: 8192³ on an accelerator (large enough to be the device's
    best), 256³ for 0.3 s in the tiny mode."""
    return (256, 0.3) if tiny else (8192, 3.0)


def make_tiny(args) -> None:
    """The tiny CPU mode's sizes: batch 4 × 32, 4 masked, 2 timed and 6 checked steps."""
    args.batch_size, args.steps, args.convergence_steps = 4, 2, 6
    args.sequence_length, args.num_masked = 32, 4


def workload(args, config) -> tuple[tuple, float]:
    """The run's fixed batch as `(x, labels, weights)` for a pretrainer of `config` (an
    `AlbertConfig`), and the FLOPs of one of its sequences' training step."""
    batch = pretraining_batch(args.batch_size, args.sequence_length, args.num_masked,
                              config.vocabulary_size)  # fmt: skip
    flops = training_flops_per_sequence(config, args.sequence_length, args.num_masked)
    return pretraining_targets(batch), flops


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
