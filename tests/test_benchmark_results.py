"""Every raw result under `benchmarks/results/` says when, where and how it was measured: the
date, the CPU (model name, family, flags), the load, the command and the commit, as the
prelude's one writer (`benchmarks.prelude.write_results`) records them.

Files written before the writer recorded all of these are listed in `LEGACY`, each with the
fields it lacks; the values are not reconstructed (where the document citing a file states the
date and the CPU, it says so in its text). A new file must carry every field, and a legacy entry
must match its file exactly, so that the list can only shrink."""

import json
import pathlib

from benchmarks import prelude

RESULTS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "results"
# Inputs of a benchmark kept beside its results, not results.
INPUTS = {"sst2_tiny_config.json"}
EVERY_FIELD = ("date", "cpu.model_name", "cpu.family", "cpu.flags", "load", "command", "commit")
NO_MACHINE = frozenset(("cpu.model_name", "cpu.family", "cpu.flags", "load", "commit"))
NOTHING = frozenset(EVERY_FIELD)


def _named(names: str, fields: frozenset) -> dict[str, frozenset]:
    return {name: fields for name in names.split()}


LEGACY = {
    # Written by the prelude before it recorded the CPU's family and the commit.
    **_named(
        """backend_step_epyc_family25.json inference_precision_onnx_epyc_zen4.json
        inference_precision_onnx_epyc_zen4_second_run.json lora_sst2_epyc_family25.json
        memory.json memory_compiled.json""",
        frozenset(("cpu.family", "commit")),
    ),
    # Command and date, but only the core count and the architecture of the machine.
    **_named(
        """accelerator_peers_h100.json loop_vs_fit_epyc_avx2.json multi_worker_step_epyc_avx2.json
        precision_convergence_3_seeds_epyc_family26.json
        precision_convergence_5_seeds_epyc_family26.json
        precision_convergence_5x5_seeds_epyc_family26.json
        precision_cross_finetuning_epyc_family26.json serving_concurrency_epyc_family26.json
        squad_long_context_epyc_family26_bfloat16_softmax.json
        squad_long_context_epyc_family26_float32_softmax.json training_precision_epyc_family26.json
        training_step_profile_pretraining_epyc_family26.json
        training_step_profile_squad_epyc_family26.json""",
        NO_MACHINE,
    ),
    # The command and a one-line CPU description (a string, no family or flags field), the load
    # at start and end, no date.
    **_named(
        """elastic_depth_accuracy_sst2_tiny.json elastic_depth_accuracy_sst2_tiny_normal_lr1e-3.json
        inference_precision_epyc_avx2.json inference_precision_epyc_family26_bfloat16_softmax.json
        inference_precision_epyc_family26_float32_softmax.json
        inference_precision_epyc_zen4.json""",
        NO_MACHINE | {"date"},
    ),
    # Results only (notes or tables written by hand or by the main job's summary): the document
    # that cites each one states its date and CPU where they are known.
    **_named("cast_once.json training_precision_cast_once_ab_epyc_family26.json", NOTHING),
    **{
        path.relative_to(RESULTS).as_posix(): NOTHING
        for path in sorted((RESULTS / "pretraining_transfer").glob("*.json"))
    },
}


def missing_fields(record: dict) -> frozenset:
    """The fields of `EVERY_FIELD` that `record` (a result JSON) lacks."""
    machine = record.get("machine") if isinstance(record.get("machine"), dict) else {}
    cpu = machine.get("cpu") if isinstance(machine.get("cpu"), dict) else {}
    present = {
        "date": bool(record.get("date")),
        "cpu.model_name": bool(cpu.get("model_name")),
        "cpu.family": cpu.get("family") is not None,
        "cpu.flags": bool(cpu.get("flags")),
        "load": machine.get("load_average") is not None,
        "command": bool(record.get("command")),
        "commit": machine.get("commit") not in (None, "", "unknown"),
    }
    return frozenset(field for field, there in present.items() if not there)


def result_files() -> list[str]:
    return sorted(
        path.relative_to(RESULTS).as_posix()
        for path in RESULTS.rglob("*.json")
        if path.relative_to(RESULTS).as_posix() not in INPUTS
    )


def test_every_result_records_date_cpu_load_command_and_commit():
    problems = []
    for name in result_files():
        lacks = missing_fields(json.loads((RESULTS / name).read_text(encoding="utf-8")))
        expected = LEGACY.get(name, frozenset())
        if lacks != expected:
            problems.append(f"{name}: lacks {sorted(lacks)}, listed as lacking {sorted(expected)}")
    assert not problems, "\n".join(problems)


def test_every_legacy_entry_is_a_file():
    assert set(LEGACY) <= set(result_files()), sorted(set(LEGACY) - set(result_files()))


def test_the_prelude_writes_every_field(tmp_path):
    path = prelude.write_results(str(tmp_path / "r.json"), {"x": 1})
    assert missing_fields(json.loads(pathlib.Path(path).read_text(encoding="utf-8"))) == set()
    assert missing_fields({}) == set(EVERY_FIELD)
