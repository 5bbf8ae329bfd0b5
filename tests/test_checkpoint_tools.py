"""The checkpoint tools' flags: one per option field, the dataclass's default, nothing else."""

import dataclasses

import pytest

from keras_albert.commands import command_module as _tool
from tests.tool_flags import check_tool_flags


@pytest.mark.parametrize(
    "name,options_class",
    [
        ("convert", "ConvertOptions"),
        ("export", "ExportOptions"),
        ("client", "ClientOptions"),
    ],
)
def test_every_option_has_its_one_flag_and_its_default(name, options_class):
    from keras_albert.tasks.registry import TASK_TYPES

    tool = _tool(name)
    # The export tool's task-type groups: each task type's export options, given only.
    given_only = ()
    if name == "export":
        given_only = tuple(t.export_options for t in TASK_TYPES if t.export_options is not None)
    check_tool_flags(tool.build_parser(), getattr(tool, options_class), given_only=given_only)


def test_positional_arguments_and_flags_reach_the_options():
    from keras_albert.cli import options_from_args

    tool = _tool("export")
    args = tool.build_parser().parse_args(
        ["run/", "--class-names", "no", "yes", "--pair", "--output-dir", "out"]
    )
    options = options_from_args(args, tool.ExportOptions, checkpoint=args.checkpoint)
    assert options.checkpoint == "run/" and options.output_dir == "out" and options.pair
    assert options.class_names == ["no", "yes"] and options.vocabulary is None
    client = _tool("client")
    args = client.build_parser().parse_args(["a", "b", "--protocol", "grpc"])
    assert options_from_args(args, client.ClientOptions, texts=tuple(args.texts)).texts == (
        "a",
        "b",
    )


def _export_call(tool, argv: list[str], monkeypatch) -> dict:
    """What the export tool's `main(argv)` hands the library's `export_checkpoint`, flattened:
    `base_dir`, `name`, `source.<field>` and `spec.<field>` (the call itself is recorded, not
    run)."""
    calls = []
    monkeypatch.setattr(tool, "export_checkpoint", lambda *args: calls.append(args) or "path")
    assert tool.main(argv) == 0
    ((source, base_dir, name, spec),) = calls
    return {
        "base_dir": base_dir,
        "name": name,
        **{f"source.{f.name}": getattr(source, f.name) for f in dataclasses.fields(source)},
        **{f"spec.{f.name}": getattr(spec, f.name) for f in dataclasses.fields(spec)},
    }


def test_each_export_flag_reaches_its_one_field_unchanged(tmp_path, monkeypatch):
    from keras_albert.cli import flag_name
    from keras_albert.export import BatchingParameters
    from keras_albert.tasks.registry import TASK_TYPES

    tool = _tool("export")
    warmup = tmp_path / "warmup.txt"
    warmup.write_text("a fine film\tits pair\nanother one\n", encoding="utf-8")
    out = str(tmp_path / "out")
    baseline = _export_call(tool, ["run/", "--output-dir", out], monkeypatch)
    tasks = baseline["spec.task_options"]
    # Each option's flag (with a value other than its default) → the fields it changes.
    flags = {
        "vocabulary": (["--vocabulary", "v.model"], {"source.vocabulary": "v.model"}),
        "lowercase": (["--no-lowercase"], {"source.lowercase": False}),
        "strip_accents": (["--strip-accents"], {"source.strip_accents": True}),
        "name": (["--name", "sst2"], {"name": "sst2"}),
        "output_dir": (["--output-dir", out + "2"], {"base_dir": out + "2"}),
        "version": (["--version", "3"], {"spec.version": 3}),
        "model": (["--model", "backbone"], {"source.model_kind": "backbone"}),
        "config": (["--config", "base"], {"source.config": "base"}),
        "num_classes": (["--num-classes", "3"], {"source.num_classes": 3}),
        "pair": (["--pair"], {"spec.text_pair": True}),
        "max_sequence_length": (["--max-sequence-length", "64"], {"spec.max_sequence_length": 64}),
        "pad_to_max_length": (["--pad-to-max-length"], {"spec.pad_to_max_length": True}),
        "class_names": (["--class-names", "no", "yes"], {"spec.class_names": ("no", "yes")}),
        "warmup_texts": (
            ["--warmup-texts", str(warmup)],
            {"spec.warmup_texts": ("a fine film", "another one")},
        ),
        "base_path_prefix": (
            ["--base-path-prefix", "/models"],
            {"spec.base_path_prefix": "/models"},
        ),
        "max_batch_size": (
            ["--max-batch-size", "8"],
            {"spec.batching": BatchingParameters(max_batch_size=8)},
        ),
        "precision": (["--precision", "bfloat16"], {"spec.precision": "bfloat16"}),
        "num_layers": (["--num-layers", "2"], {"spec.num_layers": 2}),
        "format": (["--format", "tflite"], {"spec.format": "tflite"}),
    }
    # Each task type's own flags: its options (one field changed) in `task_options`.
    for task_type in [t for t in TASK_TYPES if t.export_options is not None]:
        for field in dataclasses.fields(task_type.export_options):
            value = getattr(task_type.export_options(), field.name) + 1  # int and float fields
            options = task_type.export_options(**{field.name: value})
            flags[field.name] = (
                [flag_name(field.name), str(value)],
                {"spec.task_options": {**tasks, task_type.name: options}},
            )
    assert set(flags) >= {f.name for f in dataclasses.fields(tool.ExportOptions)} - {"checkpoint"}
    assert {"doc_stride", "null_score_threshold", "num_choices", "top_k"} <= set(flags)
    for name, (argv, expected) in flags.items():
        call = _export_call(tool, ["run/", "--output-dir", out, *argv], monkeypatch)
        changed = {key: value for key, value in call.items() if value != baseline[key]}
        assert changed == expected, name
    # A pair model's warmup requests take their pairs from the file.
    call = _export_call(
        tool, ["run/", "--output-dir", out, "--pair", "--warmup-texts", str(warmup)], monkeypatch
    )
    assert call["spec.warmup_text_pairs"] == ("its pair", "")
    # TF-Hub reads no task options (nor any other SavedModel option).
    call = _export_call(tool, ["run/", "--output-dir", out, "--format", "tfhub"], monkeypatch)
    assert call["spec.format"] == "tfhub" and call["spec.task_options"] is None
