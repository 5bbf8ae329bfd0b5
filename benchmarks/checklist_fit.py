"""The accelerator checklist on Keras's JAX and PyTorch backends (`accelerator_checklist.py
--backend jax|torch`): ALBERT-base's pretraining step through Keras's own trainer, as
`compile_pretrainer` sets it up for `model.fit` (the MLM + SOP losses of
`keras_albert.pretraining.losses`, ALBERT's LAMB, which is `keras.ops` only), in float32 and
mixed_bfloat16.

Configurations: on JAX, `jit_compile=True` (`jax.jit` of the whole train step, XLA); on
PyTorch, eager and `jit_compile=True`, with which Keras's torch trainer hands its whole train
step (forward, loss, `backward`, the optimizer's update) to `torch.compile`. float32 means
float32: no TF32 in either backend's matrix multiplies (`jax_default_matmul_precision`
"highest", PyTorch's `allow_tf32` off), as in the peer. Each configuration builds the model from
seed 0's weights, trains `--convergence-steps` steps of `train_on_batch` (its per-step losses,
checked against float32's), then times `--steps` steps of `model.fit` over the batch repeated
(after a two-step `fit`). Imports no TensorFlow: the batch is NumPy and Keras feeds it.
"""

import time

import keras
import numpy as np

from benchmarks.checklist import loss_check, square_roof_size, workload
from benchmarks.roofs import gemm_roof
from keras_albert import AlbertBackbone, AlbertPretrainer
from keras_albert.pretraining.objective import compile_pretrainer
from keras_albert.training.lamb import Lamb

POLICIES = ("float32", "mixed_bfloat16")


def initial_pretrainer(config, policy: str) -> AlbertPretrainer:
    """A pretrainer of `config` in `policy`, dropout off, from the weights seed 0 gives."""
    keras.utils.set_random_seed(0)
    backbone = AlbertBackbone(**{**config.to_dict(), "dropout": 0.0}, dtype=policy)
    return AlbertPretrainer(backbone)


def float32_without_tf32(backend: str) -> None:
    """float32 matrix multiplies in float32 (JAX on a GPU rounds them to TF32 by default)."""
    if backend == "jax":
        import jax

        jax.config.update("jax_default_matmul_precision", "highest")
    else:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False


def device(backend: str) -> tuple[str, str | None, bool]:
    """The device Keras computes on: its name, the roof's device argument, and whether it is
    an accelerator."""
    if backend == "jax":
        import jax

        first = jax.devices()[0]
        return f"{first.platform}: {first.device_kind}", None, first.platform != "cpu"
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name(), "cuda", True
    return "cpu", "cpu", False


def configurations(backend: str, accelerator: bool) -> dict[str, tuple[str, bool]]:
    """name → (policy, jit_compile). PyTorch compiles on an accelerator only: on a CPU,
    inductor's C++ build of the tiny model's step takes minutes (it runs; its losses equal
    eager's)."""
    compiles = (True,) if backend == "jax" else (False, True) if accelerator else (False,)
    suffix = {True: "_xla" if backend == "jax" else "_compiled", False: ""}
    return {f"{policy}{suffix[jit]}": (policy, jit) for policy in POLICIES for jit in compiles}


def timed(model, targets, batch_size: int, steps: int) -> float:
    """Sequences/s of `steps` steps of `model.fit` over the batch repeated, after a two-step
    `fit` (its own first calls); `fit` waits for the last step's logs before it returns."""

    def repeated(times: int) -> tuple:
        return keras.tree.map_structure(lambda array: np.concatenate([array] * times), targets)

    for x, labels, weights in (repeated(2), repeated(steps)):  # the second one is timed
        start = time.perf_counter()
        model.fit(x, labels, sample_weight=weights, batch_size=batch_size, epochs=1,
                  shuffle=False, verbose=0)  # fmt: skip
    return batch_size * steps / (time.perf_counter() - start)


def run(args, config, save) -> int:
    """Every configuration of `configurations` on `config`, `save(results)` after
    each. Returns the exit status: 1 where a loss check failed, 2 without an accelerator (but
    for `--tiny`)."""
    backend = keras.backend.backend()
    float32_without_tf32(backend)
    name, roof_device, accelerator = device(backend)
    print(f"device: {name}")
    if not args.tiny and not accelerator:
        print("accelerator_checklist: no GPU found; use --tiny for a CPU check")
        return 2
    targets, flops = workload(args, config)
    size, seconds = square_roof_size(args.tiny)
    roofs = {dtype: gemm_roof(dtype, roof_device, size, size, size, seconds, backend=backend)
             for dtype in ("float32", "bfloat16")}  # fmt: skip
    print("GEMM roof, GFLOP/s: " + ", ".join(f"{k} {v:,.0f}" for k, v in roofs.items()))
    results = {"backend": backend, "keras": keras.__version__, "device": name,
               "config": config.to_dict(), "batch_size": args.batch_size,
               "sequence_length": args.sequence_length, "gflop_per_sequence": flops / 1e9,
               "gemm_roof_gflops": roofs, "peak_tflops": args.peak_tflops, "throughput": {},
               "convergence": {}}  # fmt: skip
    failed, reference = False, None
    for label, (policy, jit_compile) in configurations(backend, accelerator).items():
        model = initial_pretrainer(config, policy)
        compile_pretrainer(model, Lamb(args.learning_rate), jit_compile=jit_compile)
        # Backend tensors: `torch.compile` would recompile its conversions of NumPy arrays.
        x, labels, weights = keras.tree.map_structure(keras.ops.convert_to_tensor, targets)
        curve = [model.train_on_batch(x, labels, weights, return_dict=True)["loss"]
                 for _ in range(args.convergence_steps)]  # fmt: skip
        if reference is None:  # the first configuration: float32
            reference = results["float32_losses"] = curve
            print(f"  {label}: loss {curve[0]:.3f} -> {curve[-1]:.3f}")
        else:
            check = loss_check(label, curve, reference, args.loss_tolerance)
            results["convergence"][label] = check
            failed |= not check["passed"]
        rate = timed(model, targets, args.batch_size, args.steps)
        roof_dtype = "bfloat16" if policy == "mixed_bfloat16" else "float32"
        peak = args.peak_tflops * 1e3 if args.peak_tflops and policy != "float32" else None
        mfu = rate * flops / 1e9 / (peak or roofs[roof_dtype])
        results["throughput"][label] = {"sequences_per_second": rate, "mfu": mfu,
                                        "roof_dtype": roof_dtype, "jit_compile": jit_compile,
                                        "losses": curve}  # fmt: skip
        print(f"  {label}: {rate:,.1f} seq/s, MFU {mfu:.2f} of the {roof_dtype} roof")
        save(results)
        del model
    failed |= not np.isfinite(reference).all() or reference[-1] >= reference[0]
    return 1 if failed else 0
