"""The peer half of the accelerator checklist: Hugging Face's `AlbertForPreTraining` (PyTorch)
on the same ALBERT-base pretraining step, for machines where TensorFlow is not at hand.

    python -m benchmarks.accelerator_peers [--batch-size 256] [--config-json preset.json]
    python -m benchmarks.accelerator_peers --tiny   # on a CPU, a tiny model: it runs

`benchmarks/accelerator_checklist.py` measures ours; this script measures the reference it is
judged against, on the same batch (`batches.py`), FLOP count (`roofs.py`) and loss check, and
imports neither TensorFlow nor Keras, so it runs on an accelerator image that only has PyTorch
and transformers. Configurations: float32, `torch.autocast` bfloat16, and `torch.autocast`
float16 with `torch.amp.GradScaler` (dynamic loss scaling), each eager and, on a GPU, under
`torch.compile`. One step: forward, MLM + SOP loss, backward, `AdamW.step` (fused on a GPU;
PyTorch has no LAMB, and the optimizer is a sliver of the step). Throughput: `--steps` timed
steps after `--warmup-steps`. MFU: model FLOPs per second over the measured GEMM roof of the
device in that dtype (`roofs.gemm_roof`: `torch.matmul`, 8192³ on a GPU), or over
`--peak-tflops` when given.
Convergence: `--convergence-steps` eager steps from the same initial weights on the same batch in
float32 and in each mixed precision; the largest difference of the per-step losses must stay
within `--loss-tolerance`. The model dimensions are ALBERT-base's preset, read from
`keras_albert.config` or, where the library cannot import, from `--config-json` (a preset's
`AlbertConfig.to_dict()`). Writes `--results-json` after every configuration, so a run cut
short keeps what it measured, and exits 1 when a loss check fails.
"""

import json
import sys
import time
import types

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import numpy as np
import torch
import transformers

from benchmarks.batches import pretraining_batch
from benchmarks.checklist import TINY, checklist_parser, loss_check, make_tiny, square_roof_size
from benchmarks.roofs import gemm_roof, training_flops_per_sequence

PRECISIONS = {"float32": None, "autocast_bfloat16": torch.bfloat16,
              "autocast_float16": torch.float16}  # fmt: skip


def albert_base(config_json: str | None) -> dict:
    """ALBERT-base's preset as a dict: from `config_json` when given, else from the library."""
    if config_json:
        with open(config_json, encoding="utf-8") as f:
            return json.load(f)
    from keras_albert.config import get_preset  # needs TensorFlow: not on every accelerator

    return get_preset("albert_base_v2").to_dict()


def hf_model(config: dict, device: torch.device) -> torch.nn.Module:
    """`AlbertForPreTraining` of `config`'s dimensions, dropout off, from seed 0's weights."""
    torch.manual_seed(0)
    hf_config = transformers.AlbertConfig(
        vocab_size=config["vocabulary_size"], embedding_size=config["embedding_dim"],
        hidden_size=config["hidden_dim"], num_attention_heads=config["num_heads"],
        intermediate_size=config["intermediate_dim"], num_hidden_layers=config["num_layers"],
        max_position_embeddings=config["max_sequence_length"], hidden_act="gelu_new",
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0,
    )  # fmt: skip
    return transformers.AlbertForPreTraining(hf_config).to(device).train()


def hf_inputs(batch, device: torch.device) -> dict:
    """The benchmark batch as `AlbertForPreTraining` keyword arguments (labels -100 but where
    masked)."""
    x, mask_ids, sop_labels = batch
    labels = np.full(x["token_ids"].shape, -100, "int64")
    np.put_along_axis(labels, x["mask_positions"], mask_ids, 1)
    arrays = dict(input_ids=x["token_ids"], token_type_ids=x["segment_ids"],
                  attention_mask=x["padding_mask"], labels=labels,
                  sentence_order_label=sop_labels)  # fmt: skip
    return {name: torch.tensor(value, dtype=torch.long, device=device)
            for name, value in arrays.items()}  # fmt: skip


def make_step(config, batch, device, precision, compiled, learning_rate):
    """A training step of a fresh model in `precision` (a key of `PRECISIONS`): returns
    `step() -> loss`, the loss a Python float only when asked (no sync per timed step)."""
    model = hf_model(config, device)
    inputs = hf_inputs(batch, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate,
                                  fused=device.type == "cuda")  # fmt: skip
    dtype = PRECISIONS[precision]
    scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)
    forward = torch.compile(model) if compiled else model

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = forward(**inputs).loss
        scaler.scale(loss).backward()
        scaler.step(optimizer)  # skips the step when a gradient is not finite
        scaler.update()
        return loss.detach()

    return step


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(step, device, batch_size: int, warmup_steps: int, steps: int) -> float:
    """Sequences/s over `steps` steps after `warmup_steps` (tracing, compilation)."""
    for _ in range(warmup_steps):
        step()
    synchronize(device)
    start = time.perf_counter()
    for _ in range(steps):
        loss = step()
    float(loss)  # waits for the last step
    return batch_size * steps / (time.perf_counter() - start)


def main(argv=None) -> int:
    parser = checklist_parser(__file__, __doc__.splitlines()[0], batch_size=256)
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--config-json", default=None, help="ALBERT-base's preset as JSON")
    args = parser.parse_args(argv)
    prelude.header()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cpu" and not args.tiny:
        print("accelerator_peers: no GPU found; use --tiny for a CPU check")
        return 2
    config = TINY if args.tiny else albert_base(args.config_json)
    if args.tiny:
        make_tiny(args)
        args.warmup_steps = 1
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 means float32, as in ours
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"device: {name}")
    batch = pretraining_batch(args.batch_size, args.sequence_length, args.num_masked,
                              config["vocabulary_size"])  # fmt: skip
    flops = training_flops_per_sequence(types.SimpleNamespace(**config), args.sequence_length,
                                        args.num_masked)  # fmt: skip
    size, seconds = square_roof_size(args.tiny)
    roofs = {dtype: gemm_roof(dtype, device.type, size, size, size, seconds, backend="torch")
             for dtype in ("float32", "bfloat16", "float16")}  # fmt: skip
    print("GEMM roof, GFLOP/s: " + ", ".join(f"{k} {v:,.0f}" for k, v in roofs.items()))
    results = {"device": name, "torch": torch.__version__,
               "transformers": transformers.__version__, "config": config,
               "batch_size": args.batch_size, "sequence_length": args.sequence_length,
               "gflop_per_sequence": flops / 1e9, "gemm_roof_gflops": roofs,
               "peak_tflops": args.peak_tflops, "throughput": {}, "convergence": {}}  # fmt: skip
    float32_step = make_step(config, batch, device, "float32", False, args.learning_rate)
    reference = [float(float32_step()) for _ in range(args.convergence_steps)]
    failed = False
    for precision, dtype in PRECISIONS.items():
        if dtype is not None:  # the loss check first, from the initial weights
            step = make_step(config, batch, device, precision, False, args.learning_rate)
            curve = [float(step()) for _ in range(args.convergence_steps)]
            check = loss_check(precision, curve, reference, args.loss_tolerance)
            results["convergence"][precision] = check
            failed |= not check["passed"]
        for compiled in (False, True) if device.type == "cuda" else (False,):
            label = f"hf_{precision}{'_compiled' if compiled else ''}"
            step = make_step(config, batch, device, precision, compiled, args.learning_rate)
            rate = timed(step, device, args.batch_size, args.warmup_steps, args.steps)
            roof_dtype = "float32" if dtype is None else str(dtype).removeprefix("torch.")
            peak = args.peak_tflops * 1e3 if args.peak_tflops and dtype else roofs[roof_dtype]
            mfu = rate * flops / 1e9 / peak
            results["throughput"][label] = {"sequences_per_second": rate, "mfu": mfu,
                                            "roof_dtype": roof_dtype}  # fmt: skip
            print(f"  {label}: {rate:,.1f} seq/s, MFU {mfu:.2f} of the {roof_dtype} roof")
            prelude.write_results(args.results_json, results)
            del step
    prelude.write_results(args.results_json, results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
