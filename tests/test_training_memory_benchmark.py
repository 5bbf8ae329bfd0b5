"""`benchmarks/training_memory.py` on a tiny model: every configuration runs in its own
process and is measured, remat's runs train exactly as the plain ones (the same losses: the
same work measured), and a run that cannot allocate is recorded as not fitting."""

import json

import numpy as np
import pytest

from benchmarks import training_memory

TINY_SIZES = json.dumps(
    {"vocabulary_size": 64, "embedding_dim": 8, "hidden_dim": 32, "intermediate_dim": 64,
     "num_layers": 3, "num_heads": 2, "max_sequence_length": 32}
)  # fmt: skip


@pytest.mark.slow  # two processes per backend, each importing its backend and compiling
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_tiny_run_measures_both_ways_and_remat_trains_the_same(tmp_path, backend):
    results = training_memory.main(
        ["--sizes-json", TINY_SIZES, "--shapes", "4x32", "--backends", backend, "--steps", "2",
         "--results-json", str(tmp_path / "memory.json")]
    )  # fmt: skip
    plain, remat = (f"{backend}/tiny/4x32/float32/{kind}" for kind in ("plain", "remat"))
    assert list(results["runs"]) == [plain, remat]
    for name in (plain, remat):
        (run,) = results["runs"][name]
        assert run["fits"], run
        assert 0 < run["built_rss_bytes"] <= run["peak_rss_bytes"]
        assert len(run["step_seconds"]) == 2 and len(run["losses"]) == 3
        assert np.isfinite(run["losses"]).all() and run["losses"][2] < run["losses"][0]
    np.testing.assert_allclose(
        results["runs"][remat][0]["losses"], results["runs"][plain][0]["losses"], rtol=1e-5
    )
    effect = results["remat"][f"{backend}/tiny/4x32/float32"]
    table = results["table"]
    assert effect["peak_memory_cut"] == pytest.approx(
        1 - table[remat]["peak_rss_bytes"] / table[plain]["peak_rss_bytes"]
    )
    written = json.loads((tmp_path / "memory.json").read_text())
    assert written["results"]["table"] == table and written["machine"]["cpu"]["model_name"]


def test_a_run_beyond_the_budget_is_recorded_as_not_fitting():
    config = {
        "backend": "tensorflow", "preset": None, "sizes": json.loads(TINY_SIZES),
        "batch_size": 4, "sequence_length": 32, "precision": "float32", "remat": False,
        "warmup_steps": 1, "steps": 1, "memory_budget_bytes": 64 * 2**20,
    }  # fmt: skip
    result = training_memory.measure(config)
    assert result["fits"] is False and result["returncode"] != 0
    assert training_memory.summarize({"x": [result]}) == {"x": {"fits": False}}


def test_shapes_must_be_batch_by_length():
    with pytest.raises(ValueError, match=r"`shapes` must be BATCHxLENGTH .* Received: 8by128"):
        training_memory.parse_shape("8by128")
