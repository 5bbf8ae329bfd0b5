"""`benchmarks/input_pipeline.py` in its tiny mode: every pipeline is timed over the batches it
was asked for, the pretraining stream gives the features the pretrainer takes at each length,
the fine-tuning reader packs to that length, and the JSON carries the prelude's fields; and
`benchmarks/dynamic_masking_stages.py` times each of its stages."""

import json

from benchmarks import dynamic_masking_stages, input_pipeline
from tests.test_benchmark_results import missing_fields

PRETRAINING_FEATURES = {"token_ids", "segment_ids", "padding_mask", "mask_positions"}


def test_tiny_run_times_every_pipeline_at_every_length(tmp_path):
    path = tmp_path / "input_pipeline.json"
    results = input_pipeline.main(["--tiny", "--lengths", "64", "128", "--results-json", str(path)])
    runs = results["runs"]
    batch_size, batches = 8, 3  # what --tiny sets
    assert [(run["pipeline"], run["sequence_length"]) for run in runs] == [
        ("pretraining, static masks", 64),
        ("pretraining, dynamic masking", 64),
        ("pretraining, static masks", 128),
        ("pretraining, dynamic masking", 128),
        ("fine-tuning, SST-2 text → packed", 64),
        ("fine-tuning, SST-2 text → packed", 128),
    ]
    for run in runs:
        length, shapes = run["sequence_length"], run["shapes"]
        assert run["batches"] == batches and run["sequences"] == batches * batch_size
        for key in ("token_ids", "segment_ids", "padding_mask"):
            assert shapes[key] == [batch_size, length], (run["pipeline"], key)
        if run["pipeline"].startswith("pretraining"):
            assert set(shapes) == PRETRAINING_FEATURES | {"y.mlm_logits", "y.sop_logits"}
            predictions = run["max_predictions_per_sequence"]
            assert shapes["mask_positions"] == shapes["y.mlm_logits"] == [batch_size, predictions]
            assert shapes["y.sop_logits"] == [batch_size]
            assert run["records"] >= batch_size
        else:
            assert set(shapes) == {"token_ids", "segment_ids", "padding_mask"}
        assert run["wall_seconds"] > 0 and run["cpu_seconds"] > 0
        assert run["sequences_per_second"] > 0 and run["sequences_per_cpu_second"] > 0
        assert run["cores_to_feed_target"] == (
            input_pipeline.H100_SEQUENCES_PER_SECOND / run["sequences_per_cpu_second"]
        )
    record = json.loads(path.read_text())
    assert missing_fields(record) == frozenset()
    assert record["results"] == json.loads(json.dumps(results))


def test_masking_stages_are_each_timed(tmp_path):
    path = tmp_path / "stages.json"
    results = dynamic_masking_stages.main(
        ["--tiny", "--lengths", "64", "--batches", "2", "--results-json", str(path)]
    )
    runs = results["runs"]
    assert [run["stage"] for run in runs] == list(dynamic_masking_stages.STAGES)
    for run in runs:
        assert run["sequences"] == 2 * 32 and run["cpu_microseconds_per_sequence"] > 0
    assert missing_fields(json.loads(path.read_text())) == frozenset()
