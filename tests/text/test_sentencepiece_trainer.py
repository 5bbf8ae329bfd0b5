"""Training a tiny ALBERT-style SentencePiece model and using it in AlbertTokenizer."""

import os
import pathlib
import runpy
import sys

import pytest
import tensorflow as tf
from sentencepiece import sentencepiece_model_pb2

from keras_albert.commands import command_module
from keras_albert.text.sentencepiece_trainer import (
    ALBERT_USER_DEFINED_SYMBOLS,
    train_sentencepiece,
)
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.text.text_data import ALBERT_MODEL, load_austen_paragraphs
from tests.tool_flags import check_tool_flags

VOCABULARY_SIZE = 300


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    directory = tmp_path_factory.mktemp("spm")
    paragraphs = load_austen_paragraphs()[:150]
    corpus = directory / "corpus.txt"
    # Paragraphs keep their line wraps, so the file has blank lines between them, and one line
    # with invalid UTF-8.
    corpus.write_bytes("\n\n".join(paragraphs).encode("utf-8") + b"\nbad \xff byte\n")
    result = train_sentencepiece(
        [str(corpus)],
        str(directory / "tiny"),
        vocabulary_size=VOCABULARY_SIZE,
        character_coverage=1.0,
        num_threads=1,
        seed=1,
        progress=False,
    )
    return result, paragraphs, corpus


def test_trained_model_is_albert_like(trained):
    result, _, corpus = trained
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(open(result.model_path, "rb").read())
    reference = sentencepiece_model_pb2.ModelProto()
    reference.ParseFromString(ALBERT_MODEL.read_bytes())
    assert len(proto.pieces) == VOCABULARY_SIZE
    assert [piece.piece for piece in proto.pieces[:5]] == [
        piece.piece for piece in reference.pieces[:5]
    ]
    for field in ("model_type", "pad_id", "unk_id", "bos_id", "eos_id", "split_by_whitespace"):
        assert getattr(proto.trainer_spec, field) == getattr(reference.trainer_spec, field), field
    assert list(proto.trainer_spec.control_symbols) == ["[CLS]", "[SEP]", "[MASK]"]
    assert tuple(proto.trainer_spec.user_defined_symbols) == ALBERT_USER_DEFINED_SYMBOLS
    assert proto.normalizer_spec.name == "nmt_nfkc"
    # Lines: counted, never dropped silently.
    lines = corpus.read_bytes().split(b"\n")
    assert result.num_lines + result.num_empty_lines == len(lines) - 1  # last "\n" ends a line
    assert result.num_empty_lines == sum(not line.strip() for line in lines[:-1])
    assert result.num_lines_with_invalid_utf8 == 1


def test_trained_model_loads_and_round_trips(trained):
    result, paragraphs, _ = trained
    tokenizer = AlbertTokenizer(result.model_path)
    assert tokenizer.vocabulary_size == VOCABULARY_SIZE
    assert (tokenizer.pad_id, tokenizer.unk_id) == (0, 1)
    assert {tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id} == {2, 3, 4}
    texts = paragraphs[:40] + ["THE Lady's (a year) - ok."]
    python_ids = [tokenizer.encode(text) for text in texts]
    for text, ids in zip(texts, python_ids, strict=True):
        assert tokenizer.unk_id not in ids
        assert tokenizer.decode(ids) == tokenizer.normalize(text)
    # Numbers with commas: the re-split may produce pieces without "▁" that a tiny vocabulary
    # lacks (<unk>), as in the original; both paths must still agree.
    texts.append("1,200, 92000, 3,")
    python_ids.append(tokenizer.encode(texts[-1]))
    assert tokenizer(tf.constant(texts)).to_list() == python_ids
    # The model was trained on lowercased text: capitals are unknown to it.
    assert "▁the" in tokenizer.encode_pieces("THE")
    assert AlbertTokenizer(result.model_path, lowercase=False).encode("THE").count(1) >= 1


def test_input_validation(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        train_sentencepiece([str(tmp_path / "missing.txt")], str(tmp_path / "m"), progress=False)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n\t\n")
    with pytest.raises(ValueError, match="every line is empty"):
        train_sentencepiece([str(empty)], str(tmp_path / "m"), vocabulary_size=50, progress=False)
    with pytest.raises(ValueError, match=r"vocabulary_size.*>= \d+. Received: vocabulary_size=10"):
        train_sentencepiece([str(empty)], str(tmp_path / "m"), vocabulary_size=10, progress=False)


def test_command_line_tool(tmp_path, monkeypatch, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(load_austen_paragraphs()[:60]), encoding="utf-8")
    prefix = tmp_path / "out" / "cli"
    tool = pathlib.Path(__file__).resolve().parents[2] / "tools" / "train_tokenizer.py"
    monkeypatch.setattr(
        sys,
        "argv",
        [str(tool), "--inputs", str(corpus), "--vocabulary", f"{prefix}.model"]
        + ["--vocabulary-size", "200", "--num-threads", "1", "--seed", "3"],
    )
    with pytest.raises(SystemExit) as exit_code:
        runpy.run_path(str(tool), run_name="__main__")
    assert exit_code.value.code == 0
    assert f"wrote {prefix}.model and {prefix}.vocab" in capsys.readouterr().out
    assert AlbertTokenizer(f"{prefix}.model").vocabulary_size == 200
    assert os.path.isfile(f"{prefix}.vocab")


def test_tool_has_one_flag_per_option():
    command = command_module("train-tokenizer")
    check_tool_flags(command.build_parser(), command.TokenizerToolOptions)


def test_trainer_log_only_when_verbose_and_binary_input_is_refused(tmp_path, capfd):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(load_austen_paragraphs()[:40]), encoding="utf-8")
    common = dict(vocabulary_size=150, num_threads=1, seed=1, progress=False)
    for verbose in (False, True):
        train_sentencepiece([str(corpus)], str(tmp_path / f"m{verbose}"), verbose=verbose, **common)
        # The settings dump ("trainer_spec { ... }") is the trainer's INFO log, on stderr.
        assert ("trainer_spec" in capfd.readouterr().err) == verbose

    # 10% of invalid bytes is still text (replaced, counted); just over is refused, by name.
    def share_invalid(num_bad):
        return b"\xff" * num_bad + b"a" * (99 - num_bad) + b"\n"

    (tmp_path / "ten.txt").write_bytes(share_invalid(10) * 30 + b"word " * 20 + b"\n")
    result = train_sentencepiece(
        [str(tmp_path / "ten.txt")], str(tmp_path / "ten"), **{**common, "vocabulary_size": 20}
    )
    assert result.num_lines_with_invalid_utf8 == 30
    (tmp_path / "eleven.txt").write_bytes(share_invalid(11) * 30)
    with pytest.raises(ValueError, match=r"eleven.txt' has 11% NUL or invalid UTF-8 bytes"):
        train_sentencepiece([str(tmp_path / "eleven.txt")], str(tmp_path / "x" / "m"), **common)
    assert not (tmp_path / "x").exists()


def test_lines_longer_than_the_trainers_default_limit_are_trained_on(tmp_path, capfd):
    # SentencePiece skips lines over 4,192 bytes by default (a long paragraph of a novel): the
    # only "ž" of this corpus is in such a line, so a skipped line would leave it unknown.
    long_line = " ".join(["žabaž"] * 1000)
    assert len(long_line.encode("utf-8")) > 4192
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(
        "\n".join([*load_austen_paragraphs()[:40], long_line]) + "\n", encoding="utf-8"
    )
    result = train_sentencepiece(
        [str(corpus)],
        str(tmp_path / "m"),
        vocabulary_size=150,
        character_coverage=1.0,
        num_threads=1,
        seed=1,
        progress=False,
    )
    assert "too long line" not in capfd.readouterr().err.lower()
    tokenizer = AlbertTokenizer(result.model_path)
    assert tokenizer.unk_id not in tokenizer.encode("žabaž")


def test_accents_kept_for_a_language_that_needs_them(tmp_path):
    # Vietnamese tones carry meaning: "mà", "má", "mả", "mã", "mạ" are five words.
    corpus = tmp_path / "vi.txt"
    corpus.write_text("ma mà má mả mã mạ ba bà bá\n" * 50, encoding="utf-8")
    common = dict(character_coverage=1.0, num_threads=1, seed=1, progress=False)
    kept = train_sentencepiece(
        [str(corpus)], str(tmp_path / "kept"), vocabulary_size=24, strip_accents=False, **common
    )
    # Five fewer characters to learn: the largest vocabulary SentencePiece allows here.
    stripped = train_sentencepiece(
        [str(corpus)], str(tmp_path / "stripped"), vocabulary_size=18, **common
    )
    with_accents = AlbertTokenizer(kept.model_path, strip_accents=False)
    without = AlbertTokenizer(stripped.model_path)
    words = ["mà", "má", "mả", "mã", "mạ"]
    assert len({tuple(with_accents.encode(w)) for w in words}) == 5
    assert len({tuple(without.encode(w)) for w in words}) == 1  # all "ma"
    assert with_accents.unk_id not in with_accents.encode("mạ bà")
