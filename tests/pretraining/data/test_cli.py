"""`keras-albert create-data`: flags reach the library, the summary is printed."""

import os

import pytest
import tensorflow as tf

from keras_albert.cli import ToolError, options_from_args
from keras_albert.commands import command_module
from keras_albert.pretraining.data import PretrainingDataConfig
from tests.pretraining.data._helpers import AUSTEN, REPO
from tests.text._paths import ALBERT_SPM
from tests.tool_flags import check_tool_flags


@pytest.fixture
def tool():
    return command_module("create-data")


def test_every_option_has_one_flag_and_the_original_aliases(tool):
    parser = tool.build_parser()
    tool_fields = tuple(f.name for f in tool.dataclasses.fields(tool.DataToolOptions))
    config_fields = tuple(f.name for f in tool.dataclasses.fields(PretrainingDataConfig))
    # argparse's BooleanOptionalAction also makes the negated spelling of the alias.
    tool_aliases = {**tool.TOOL_ALIASES, "lowercase": ("--do_lower_case", "--no-do_lower_case")}
    check_tool_flags(parser, tool.DataToolOptions, tool_aliases, tool_flags=config_fields)
    check_tool_flags(parser, PretrainingDataConfig, tool.CONFIG_ALIASES, tool_flags=tool_fields)


def test_the_original_flags_mean_the_same_options(tool):
    parser = tool.build_parser()
    ours = parser.parse_args(
        ["--inputs", "a.txt", "b.txt", "--output-dir", "out", "--vocabulary", "m",
         "--no-lowercase", "--sequence-length", "128", "--max-predictions-per-sequence", "19",
         "--seed", "3", "--max-ngram", "2", "--dupe-factor", "5", "--masked-lm-prob", "0.2",
         "--short-seq-prob", "0.3"]
    )  # fmt: skip
    original = parser.parse_args(
        ["--input_file", "a.txt", "b.txt", "--output_dir", "out", "--spm_model_file", "m",
         "--no-do_lower_case", "--max_seq_length", "128", "--max_predictions_per_seq", "19",
         "--random_seed", "3", "--ngram", "2", "--dupe_factor", "5", "--masked_lm_prob", "0.2",
         "--short_seq_prob", "0.3"]
    )  # fmt: skip
    assert vars(ours) == vars(original)
    config = options_from_args(original, PretrainingDataConfig)
    assert (config.sequence_length, config.max_predictions_per_sequence, config.seed) == (
        128,
        19,
        3,
    )
    assert (config.max_ngram, config.dupe_factor, config.short_seq_draw) == (2, 5, "document")
    options = options_from_args(original, tool.DataToolOptions)
    assert list(options.inputs) == ["a.txt", "b.txt"] and options.lowercase is False


def test_cli_writes_shards_and_prints_the_summary(tool, tmp_path, capsys):
    text = tmp_path / "p.txt"
    text.write_text(open(os.path.join(AUSTEN, "persuasion.txt")).read()[:40_000])
    output_dir = str(tmp_path / "out")
    code = tool.main(
        ["--inputs", str(text), str(tmp_path / "missing.txt"), "--output-dir", output_dir,
         "--file-prefix", "p", "--vocabulary", ALBERT_SPM, "--num-workers", "1",
         "--num-shards", "2", "--sequence-length", "64", "--max-predictions-per-sequence", "10",
         "--dupe-factor", "2", "--task", "nsp"]
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "missing.txt: no such file" in printed
    paths = [os.path.join(output_dir, f"p-0000{i}-of-00002.tfrecord") for i in range(2)]
    num_records = sum(1 for _ in tf.data.TFRecordDataset(paths))
    assert f"examples:          {num_records}" in printed
    record = next(iter(tf.data.TFRecordDataset(paths[0])))
    features = tf.train.Example.FromString(record.numpy()).features.feature
    assert len(features["input_ids"].int64_list.value) == 64
    assert len(features["masked_lm_ids"].int64_list.value) == 10


def test_cli_fails_when_nothing_was_written(tool, tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ToolError, match="no example was made from --inputs .*empty.txt"):
        tool.main(["--inputs", str(empty), "--output-dir", str(tmp_path / "e"),
                   "--vocabulary", ALBERT_SPM])  # fmt: skip
    assert "empty file" in capsys.readouterr().out  # the summary is still printed
    assert not os.path.exists(tmp_path / "e")  # no shard, no folder the tool made


def test_wordpiece_vocabulary_masks_whole_words_of_continuation_pieces(tool, tmp_path):
    """With a WordPiece vocabulary a "##" piece continues its word (the original's
    `_is_start_piece_bert`): a masked word is masked with all of its pieces."""
    vocabulary = os.path.join(REPO, "tests", "data", "zh", "vocab_chinese.txt")
    english = (
        "The receptionist was unbelievably friendly. Breakfast was disappointing. "
        "Housekeeping came late. "
    )
    lines = [f"酒店的wifi信号很差。{english * 2}房间很干净。" for _ in range(20)]
    (tmp_path / "reviews.txt").write_text("\n\n".join(lines) + "\n", encoding="utf-8")
    output_dir = tmp_path / "out"
    code = tool.main(
        ["--inputs", str(tmp_path / "reviews.txt"), "--output-dir", str(output_dir),
         "--vocabulary", vocabulary, "--num-workers", "1", "--sequence-length", "64",
         "--max-predictions-per-sequence", "12", "--dupe-factor", "3",
         "--document-split", "blank_line", "--language", "zh"]
    )  # fmt: skip
    assert code == 0
    from keras_albert.text.tokenizer import AlbertTokenizer

    tokenizer = AlbertTokenizer(vocabulary)
    masked_continuations = 0
    for record in tf.data.TFRecordDataset(str(output_dir / "pretraining-00000-of-00001.tfrecord")):
        features = tf.train.Example.FromString(record.numpy()).features.feature
        ids = list(features["input_ids"].int64_list.value)
        weights = features["masked_lm_weights"].float_list.value
        positions = features["masked_lm_positions"].int64_list.value
        masked = {p for p, w in zip(positions, weights, strict=True) if w > 0}
        for p, label in zip(positions, features["masked_lm_ids"].int64_list.value, strict=True):
            ids[p] = label if p in masked else ids[p]
        pieces = [tokenizer.id_to_piece(i) for i in ids]
        for p in masked:
            if pieces[p].startswith("##"):
                masked_continuations += 1
                assert p - 1 in masked, (pieces[p - 1 : p + 1], "word start left unmasked")
            if p + 1 < len(pieces) and pieces[p + 1].startswith("##"):
                assert p + 1 in masked, (pieces[p : p + 2], "continuation left unmasked")
    assert masked_continuations > 0
