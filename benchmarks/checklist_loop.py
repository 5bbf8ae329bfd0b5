"""The accelerator checklist on TensorFlow (`accelerator_checklist.py --backend tensorflow`):
the pretraining driver's step (`training.loop.TrainingLoop`, ALBERT's LAMB, float16 through
`training.loss_scale`) under the strategy `build_strategy("auto")` picks, in mixed_float16 and
mixed_bfloat16, with and without XLA. Throughput: `--steps` timed steps after two warm-up
calls (without XLA, on the loop the loss check trained). The roof: `tf.matmul` at ALBERT-base's
shapes (`roofs.gemm_roof`'s default)."""

import time

import keras
import tensorflow as tf

from benchmarks.checklist import loss_check, workload
from benchmarks.checklist_fit import initial_pretrainer
from benchmarks.roofs import gemm_roof
from keras_albert.pretraining.objective import pretraining_replica_fn
from keras_albert.training.lamb import Lamb
from keras_albert.training.loop import TrainingLoop
from keras_albert.training.loss_scale import optimizer_for_precision
from keras_albert.training.strategy import build_strategy

MIXED = ("mixed_float16", "mixed_bfloat16")


def make_loop(strategy, config, policy, jit_compile, targets, learning_rate):
    """The driver's loop on the batch `targets` repeated, from the weights seed 0 gives."""
    with strategy.scope():
        model = initial_pretrainer(config, policy)
        optimizer = optimizer_for_precision(Lamb(learning_rate), policy)
        optimizer.build(model.trainable_variables)
    loop = TrainingLoop(strategy, model, optimizer, pretraining_replica_fn(),
                        jit_compile=jit_compile)  # fmt: skip
    iterator = loop.iterator(lambda _: tf.data.Dataset.from_tensors(targets).repeat())
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


def run(args, config, save) -> int:
    """Every configuration on `config`, `save(results)` after each. Returns the exit status:
    1 where a loss check failed, 2 without an accelerator (but for `--tiny`)."""
    strategy = build_strategy("auto")
    devices = strategy.extended.worker_devices
    device = devices[0]
    print(f"devices: {', '.join(devices)}")
    if not args.tiny and "CPU" in device.upper() and "TPU" not in type(strategy).__name__:
        print("accelerator_checklist: no GPU or TPU found; use --tiny for a CPU check")
        return 2
    targets, flops = workload(args, config)
    roofs = {}
    if "TPU" not in type(strategy).__name__:
        roofs = {dtype: gemm_roof(dtype, device, seconds=0.3 if args.tiny else 3.0)
                 for dtype in ("float16", "bfloat16")}  # fmt: skip
    results = {"backend": "tensorflow", "keras": keras.__version__, "devices": devices,
               "config": config.to_dict(), "batch_size": args.batch_size,
               "sequence_length": args.sequence_length, "gflop_per_sequence": flops / 1e9,
               "gemm_roof_gflops": roofs, "peak_tflops": args.peak_tflops, "throughput": {},
               "convergence": {}}  # fmt: skip
    loop, iterator = make_loop(strategy, config, "float32", False, targets, args.learning_rate)
    reference = results["float32_losses"] = losses(loop, iterator, args.convergence_steps)
    failed = False
    for policy in MIXED:
        for jit_compile in (False, True):
            name = f"{policy}{'_xla' if jit_compile else ''}"
            loop, iterator = make_loop(strategy, config, policy, jit_compile, targets,
                                       args.learning_rate)  # fmt: skip
            if not jit_compile:  # the loss check first, from the initial weights
                curve = losses(loop, iterator, args.convergence_steps)
                check = loss_check(policy, curve, reference, args.loss_tolerance)
                results["convergence"][policy] = check
                failed |= not check["passed"]
            rate = timed(loop, iterator, args.batch_size, args.steps)
            peak = args.peak_tflops * 1e3 if args.peak_tflops else roofs.get(policy[6:])
            mfu = rate * flops / 1e9 / peak if peak else None
            results["throughput"][name] = {"sequences_per_second": rate, "mfu": mfu,
                                           "roof_dtype": policy[6:]}  # fmt: skip
            shown = f", MFU {mfu:.2f}" if mfu is not None else ""
            print(f"  {name}: {rate:.1f} seq/s{shown}")
            save(results)
    return 1 if failed else 0
