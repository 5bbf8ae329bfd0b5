"""The checks to run whenever a GPU or TPU is at hand: ALBERT-base pretraining throughput and
MFU in mixed_float16 and mixed_bfloat16, with and without XLA, and a short run's losses in
each mixed precision against float32.

    python -m benchmarks.accelerator_checklist [--batch-size 64] [--peak-tflops 989]
    python -m benchmarks.accelerator_checklist --tiny   # on a CPU, a tiny model: it runs

Each configuration is the pretraining driver's step (`training.loop.TrainingLoop`, `Lamb`,
float16 through `training.loss_scale`) under the strategy `build_strategy("auto")` picks, on
one fixed random batch (seq 128, 20 masked). Throughput: `--steps` timed steps after two
warm-up calls (without XLA, on the loop the loss check trained). MFU: model FLOPs per second
(forward + backward, `roofs.py`) over the peak: the `--peak-tflops` given (the datasheet's
dense figure for the dtype), else the measured GEMM roof of the device in that dtype.
Convergence: `--convergence-steps` steps from the same initial weights on the same batch in
float32 and in each mixed precision; the largest difference of the per-step losses must stay
within `--loss-tolerance`. Writes everything to
`--results-json` and exits 1 when a loss check fails.
"""

import sys
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import keras
import numpy as np
import tensorflow as tf

from benchmarks.batches import pretraining_batch
from benchmarks.checklist import checklist_parser, loss_check, make_tiny
from benchmarks.roofs import gemm_roof, training_flops_per_sequence
from keras_albert import AlbertBackbone, AlbertConfig, AlbertPretrainer
from keras_albert.config import get_preset
from keras_albert.pretraining.objective import pretraining_replica_fn
from keras_albert.training.lamb import Lamb
from keras_albert.training.loop import TrainingLoop
from keras_albert.training.loss_scale import optimizer_for_precision
from keras_albert.training.strategy import build_strategy

MIXED = ("mixed_float16", "mixed_bfloat16")
TINY = AlbertConfig(
    vocabulary_size=1000, embedding_dim=16, hidden_dim=32, intermediate_dim=64, num_layers=2,
    num_heads=2, max_sequence_length=128,
)  # fmt: skip


def make_loop(strategy, config, policy, jit_compile, batch, learning_rate):
    """The driver's loop on `batch` repeated, from the weights seed 0 gives."""
    x, mask_ids, sop_labels = batch
    labels = {"mlm_logits": mask_ids, "sop_logits": sop_labels}
    weights = {name: np.ones(value.shape, "float32") for name, value in labels.items()}
    keras.utils.set_random_seed(0)
    with strategy.scope():
        backbone = AlbertBackbone(**{**config.to_dict(), "dropout": 0.0}, dtype=policy)
        model = AlbertPretrainer(backbone)
        optimizer = optimizer_for_precision(Lamb(learning_rate), policy)
        optimizer.build(model.trainable_variables)
    loop = TrainingLoop(strategy, model, optimizer, pretraining_replica_fn(),
                        jit_compile=jit_compile)  # fmt: skip
    iterator = loop.iterator(lambda _: tf.data.Dataset.from_tensors((x, labels, weights)).repeat())
    return loop, iterator


def timed(loop, iterator, batch_size, steps) -> float:
    """Sequences/s over `steps` steps, after two calls (tracing, compilation)."""
    loop.train(iterator, 1)
    loop.train(iterator, 1)
    start = time.perf_counter()
    loop.train(iterator, steps)
    return batch_size * steps / (time.perf_counter() - start)


def losses(loop, iterator, steps) -> list[float]:
    return [loop.train(iterator, 1)["loss"] for _ in range(steps)]


def main(argv=None) -> int:
    parser = checklist_parser(__file__, __doc__.splitlines()[0], batch_size=64)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    args = parser.parse_args(argv)
    prelude.header()
    config = get_preset("albert_base_v2")
    if args.tiny:
        config = TINY
        make_tiny(args)
    strategy = build_strategy("auto")
    devices = strategy.extended.worker_devices
    device = devices[0]
    print(f"devices: {', '.join(devices)}")
    if not args.tiny and "CPU" in device.upper() and "TPU" not in type(strategy).__name__:
        print("accelerator_checklist: no GPU or TPU found; use --tiny for a CPU check")
        return 2
    batch = pretraining_batch(args.batch_size, args.sequence_length, args.num_masked,
                              config.vocabulary_size)  # fmt: skip
    flops = training_flops_per_sequence(config, args.sequence_length, args.num_masked)
    roofs = {}
    if "TPU" not in type(strategy).__name__:
        roofs = {dtype: gemm_roof(dtype, device, seconds=0.3 if args.tiny else 3.0)
                 for dtype in ("float16", "bfloat16")}  # fmt: skip
    results = {"devices": devices, "config": config.to_dict(), "batch_size": args.batch_size,
               "sequence_length": args.sequence_length, "gflop_per_sequence": flops / 1e9,
               "gemm_roof_gflops": roofs, "peak_tflops": args.peak_tflops, "throughput": {},
               "convergence": {}}  # fmt: skip
    loop, iterator = make_loop(strategy, config, "float32", False, batch, args.learning_rate)
    reference = losses(loop, iterator, args.convergence_steps)
    failed = False
    for policy in MIXED:
        for jit_compile in (False, True):
            name = f"{policy}{'_xla' if jit_compile else ''}"
            loop, iterator = make_loop(strategy, config, policy, jit_compile, batch,
                                       args.learning_rate)  # fmt: skip
            if not jit_compile:  # the loss check first, from the initial weights
                curve = losses(loop, iterator, args.convergence_steps)
                check = loss_check(policy, curve, reference, args.loss_tolerance)
                results["convergence"][policy] = check
                failed |= not check["passed"]
            rate = timed(loop, iterator, args.batch_size, args.steps)
            peak = args.peak_tflops * 1e3 if args.peak_tflops else roofs.get(policy[6:])
            mfu = rate * flops / 1e9 / peak if peak else None
            results["throughput"][name] = {"sequences_per_second": rate, "mfu": mfu}
            shown = f", MFU {mfu:.2f}" if mfu is not None else ""
            print(f"  {name}: {rate:.1f} seq/s{shown}")
    prelude.write_results(args.results_json, results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
