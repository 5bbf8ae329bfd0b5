"""The accelerator checklist's halves in their CPU mode (`--tiny`): ours
(benchmarks/accelerator_checklist.py) on each Keras backend and HF's
(benchmarks/accelerator_peers.py). Every configuration runs, the JSON holds a rate and an MFU
for each, and the losses fall and follow float32's from the same start. On JAX and PyTorch the
run has TensorFlow made unimportable: what an accelerator image without it runs."""

import pytest

from tests.benchmark_runs import FAST_XLA, run_tiny


@pytest.mark.slow  # ≈ 14 s each (CI runs them, as the TensorFlow tiny run)
@pytest.mark.parametrize(
    "backend, names",
    [("jax", {"float32_xla", "mixed_bfloat16_xla"}), ("torch", {"float32", "mixed_bfloat16"})],
)
def test_tiny_mode_on_jax_and_pytorch_trains_without_tensorflow(backend, names, tmp_path):
    record = run_tiny("accelerator_checklist", tmp_path, "--backend", backend, "--no-peer",
                      tensorflow=False, extra_env=FAST_XLA)  # fmt: skip
    assert "tensorflow" not in record["machine"]["versions"]
    results = record["results"]
    assert results["backend"] == backend and results["peer"] is None
    assert set(results["gemm_roof_gflops"]) == {"float32", "bfloat16"}
    assert all(roof > 0 for roof in results["gemm_roof_gflops"].values())
    assert set(results["throughput"]) == names
    for entry in results["throughput"].values():
        assert entry["sequences_per_second"] > 0 and 0 < entry["mfu"] < 1
    reference = results["float32_losses"]
    assert len(reference) == 6 and reference[-1] < reference[0]
    (check,) = results["convergence"].values()  # mixed_bfloat16 against float32
    assert check["passed"] and check["float32_losses"] == reference
    assert abs(check["losses"][0] - reference[0]) < 0.01
    assert check["losses"][-1] < check["losses"][0]
    assert 0 < check["max_difference"] <= 0.1


@pytest.mark.slow  # trains the tiny model in every precision, and the peer (CI: --run-slow)
def test_tiny_mode_measures_every_configuration_and_checks_the_losses(tmp_path):
    results = run_tiny("accelerator_checklist", tmp_path, "--backend", "tensorflow")["results"]
    assert set(results["throughput"]) == {
        "mixed_float16", "mixed_float16_xla", "mixed_bfloat16", "mixed_bfloat16_xla"
    }  # fmt: skip
    for entry in results["throughput"].values():
        assert entry["sequences_per_second"] > 0 and 0 < entry["mfu"] < 1
    for policy in ("mixed_float16", "mixed_bfloat16"):
        check = results["convergence"][policy]
        assert check["passed"] and len(check["losses"]) == 6
        # The same start and a falling curve: both runs trained the same model.
        assert abs(check["losses"][0] - check["float32_losses"][0]) < 0.01
        assert check["losses"][-1] < check["losses"][0]
        assert 0 < check["max_difference"] <= 0.1
    # The peer ran first, in its own process, on the same batch.
    assert results["peer"]["exit_status"] == 0
    assert results["peer"]["batch_size"] == results["batch_size"]
    assert set(results["over_peer"]) == {"float16", "bfloat16"}


@pytest.mark.slow  # trains the tiny model in every precision (CI: --run-slow)
def test_peer_script_tiny_mode_measures_hf_and_checks_its_losses(tmp_path):
    """HF on PyTorch, no TensorFlow: a rate and an MFU per precision, and the autocast losses
    follow float32's."""
    results = run_tiny("accelerator_peers", tmp_path, tensorflow=False)["results"]
    assert set(results["throughput"]) == {
        "hf_float32", "hf_autocast_bfloat16", "hf_autocast_float16"
    }  # fmt: skip
    for entry in results["throughput"].values():
        assert entry["sequences_per_second"] > 0 and entry["mfu"] > 0
    for precision in ("autocast_bfloat16", "autocast_float16"):
        check = results["convergence"][precision]
        assert check["passed"] and len(check["losses"]) == 6
        assert abs(check["losses"][0] - check["float32_losses"][0]) < 0.01
        assert check["losses"][-1] < check["losses"][0]
        assert check["max_difference"] <= 0.1
