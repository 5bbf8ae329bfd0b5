"""The speed benchmarks against the peers in their CPU mode (`--tiny`):
benchmarks/encoder_forward.py and benchmarks/pretraining_step.py with ours, keras-hub, Model
Garden and Hugging Face, in float32 and bfloat16, with and without XLA. Every implementation
runs and the JSON holds a rate for each and the ratios of ours to the peers."""

import pytest

from benchmarks.checklist import TINY
from benchmarks.roofs import forward_flops_per_sequence, training_flops_per_sequence
from keras_albert import AlbertConfig
from tests.benchmark_runs import FAST_XLA, run_tiny

FORWARD_RUNNERS = {"keras_albert", "keras_hub", "model_garden", "hf_torch"}


@pytest.mark.slow  # ≈ 50 s each: four frameworks imported, each model traced (CI: --run-slow)
@pytest.mark.parametrize(
    "flags", [(), ("--precision", "mixed_bfloat16", "--jit-compile")], ids=["float32", "bf16_xla"]
)
def test_encoder_forward_runs_every_peer(flags, tmp_path):
    record = run_tiny("encoder_forward", tmp_path, *flags, extra_env=FAST_XLA)
    results = record["results"]
    assert set(results["medians"]) == FORWARD_RUNNERS
    assert all(rate > 0 for rate in results["medians"].values())
    assert set(results["keras_albert_over"]) == FORWARD_RUNNERS - {"keras_albert"}
    assert results["options"]["precision"] == ("mixed_bfloat16" if flags else "float32")
    assert record["machine"]["versions"]["tf-models-official"] == "2.20.0"
    assert_against_the_roof(results, forward_flops_per_sequence(AlbertConfig(**TINY), 16))


@pytest.mark.slow  # ≈ 150 s: six TensorFlow train steps compiled, three under XLA (CI: --run-slow)
def test_pretraining_step_runs_every_peer_in_bfloat16_with_and_without_xla(tmp_path):
    record = run_tiny("pretraining_step", tmp_path, "--precision", "mixed_bfloat16",
                      extra_env=FAST_XLA)  # fmt: skip
    results = record["results"]
    tensorflow_peers = ("keras_albert", "model_garden", "keras_hub")
    assert set(results["medians"]) == {
        *tensorflow_peers,
        *(f"{name}_xla" for name in tensorflow_peers),
        "hf_torch",
    }
    assert all(rate > 0 for rate in results["medians"].values())
    assert set(results["best"]) == {*tensorflow_peers, "hf_torch"}
    for reference in ("model_garden", "keras_hub", "hf_torch"):
        assert results["ratios"][f"best keras_albert / best {reference}"] > 0
    assert results["ratios"]["keras_albert_xla / model_garden_xla"] > 0
    flops = training_flops_per_sequence(AlbertConfig(**TINY), 16, num_masked=3)
    assert_against_the_roof(results, flops)


def assert_against_the_roof(results: dict, flops_per_sequence: float) -> None:
    """The GEMM roof measured in the run, and each rate's share of it from the model's FLOPs."""
    roof = results["roof"]
    assert roof["gemm_roof_gflops"] > 0
    assert roof["flops_per_sequence"] == pytest.approx(flops_per_sequence)
    assert set(roof["fraction_of_roof"]) == set(results["medians"])
    for name, rate in results["medians"].items():
        expected = rate * flops_per_sequence / 1e9 / roof["gemm_roof_gflops"]
        assert roof["fraction_of_roof"][name] == pytest.approx(expected)
