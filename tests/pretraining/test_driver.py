"""The pretraining driver: losses and metrics against NumPy, a short fit on synthetic records in
the original layout, initialization from checkpoints, XLA with static shapes, bad inputs."""

import csv
import dataclasses
import glob
import io
import json
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertBackbone, AlbertPretrainer, load_checkpoint
from keras_albert.cli import options_from_args
from keras_albert.pretraining.data.dataset import make_pretraining_dataset
from keras_albert.pretraining.driver import (
    PretrainingOptions,
    inspect_records,
    make_datasets,
    pretrain,
)
from keras_albert.pretraining.objective import compile_pretrainer
from keras_albert.pretraining.streams import dynamic_masking_for, layout_for_options
from keras_albert.training.lamb import Lamb
from tests.helpers import TINY
from tests.pretraining.test_losses import log_softmax

SEQUENCE_LENGTH = 16
MAX_PREDICTIONS = 4
TINY_MODEL = {**TINY, "num_layers": 2}


def write_records(
    path,
    num_records,
    seed=0,
    sequence_length=SEQUENCE_LENGTH,
    max_predictions=MAX_PREDICTIONS,
    vocabulary_size=64,
    num_real_predictions=None,
    drop_feature=None,
):
    """Synthetic pretraining records in the original ALBERT layout (`input_ids`, ...).

    Learnable on purpose: segment A draws from the lower half of the ids above the special
    ones (0-4) and B from the upper half, swapped when the sentence-order label is 1, each
    half with Zipf frequencies, so both the SOP and the MLM loss can fall. Each record has
    `num_real_predictions` (default: random 1..max) real predictions, the rest padded with
    weight 0.
    """
    rng = np.random.default_rng(seed)

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))

    half = (sequence_length - 3) // 2
    middle = 5 + (vocabulary_size - 5) // 2
    low_probabilities, high_probabilities = (zipf(middle - 5), zipf(vocabulary_size - middle))
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(num_records):
            low = rng.choice(np.arange(5, middle), half, p=low_probabilities)
            high = rng.choice(np.arange(middle, vocabulary_size), half, p=high_probabilities)
            label = int(rng.integers(0, 2))
            first, second = (high, low) if label else (low, high)
            ids = [2, *first, 3, *second, 3]
            length = len(ids)
            segments = [0] * (half + 2) + [1] * (half + 1)
            count = num_real_predictions or int(rng.integers(1, max_predictions + 1))
            candidates = [i for i in range(1, length) if ids[i] not in (2, 3)]
            positions = sorted(rng.choice(candidates, count, replace=False).tolist())
            labels = [ids[p] for p in positions]
            for p in positions:
                ids[p] = 4  # [MASK]
            padding = sequence_length - length
            unused = max_predictions - count
            features = {
                "input_ids": ints(ids + [0] * padding),
                "input_mask": ints([1] * length + [0] * padding),
                "segment_ids": ints(segments + [0] * padding),
                "masked_lm_positions": ints(positions + [0] * unused),
                "masked_lm_ids": ints(labels + [0] * unused),
                "masked_lm_weights": tf.train.Feature(
                    float_list=tf.train.FloatList(value=[1.0] * count + [0.0] * unused)
                ),
                "next_sentence_labels": ints([label]),
            }
            features.pop(drop_feature, None)
            example = tf.train.Example(features=tf.train.Features(feature=features))
            writer.write(example.SerializeToString())


def zipf(size):
    probabilities = 1.0 / np.arange(1, size + 1)
    return probabilities / probabilities.sum()


def write_config(path, **changes):
    with open(path, "w", encoding="utf-8") as f:
        json.dump({**TINY_MODEL, **changes}, f)
    return str(path)


@pytest.fixture
def records(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for i in range(2):
        write_records(data / f"train-{i}.tfrecord", 48, seed=i)
    write_records(data / "eval.tfrecord", 24, seed=9)
    return {
        "train_data": str(data / "train-*.tfrecord"),
        "eval_data": str(data / "eval.tfrecord"),
        "config": write_config(tmp_path / "config.json"),
    }


def options(tmp_path, records, **changes):
    values = dict(
        train_data=records["train_data"],
        config=records["config"],
        output_dir=str(tmp_path / "run"),
        train_steps=30,
        batch_size=8,
        learning_rate=1e-2,
        warmup_steps=3,
        strategy="cpu",
        log_every_steps=10,
        checkpoint_every_steps=10,
        jit_compile=False,
        seed=3,
        verbose=0,
    )
    values.update(changes)
    return PretrainingOptions(**values)


@pytest.mark.parametrize("sop_weight", [1.0, 2.5])
def test_compiled_losses_and_metrics_against_numpy(tmp_path, sop_weight):
    """evaluate() on one batch equals the formulas applied to the model's own outputs; padded
    prediction slots count in neither the MLM loss nor the MLM accuracy; the SOP loss enters
    the total with its weight."""
    path = tmp_path / "records.tfrecord"
    write_records(path, 16, seed=4)
    layout = inspect_records(str(path))
    run_options = PretrainingOptions(
        train_data=str(path), output_dir=str(tmp_path), train_steps=1, batch_size=16, preset=None,
        config=write_config(tmp_path / "c.json"), shuffle_buffer_size=1,
    )  # fmt: skip
    x, y, weights = next(iter(make_datasets(run_options, layout)))
    model = AlbertPretrainer(AlbertBackbone(**TINY_MODEL))
    compile_pretrainer(model, Lamb(1e-3), sentence_order_loss_weight=sop_weight)
    results = model.evaluate(x, y, sample_weight=weights, return_dict=True, verbose=0)

    outputs = keras.tree.map_structure(np.asarray, model(x))
    mlm_labels, mlm_weights = np.asarray(y["mlm_logits"]), np.asarray(weights["mlm_logits"])
    sop_labels = np.asarray(y["sop_logits"])
    assert 0 < mlm_weights.sum() < mlm_weights.size  # some slots are padding
    nll = -np.take_along_axis(log_softmax(outputs["mlm_logits"]), mlm_labels[..., None], -1)
    mlm_loss = (mlm_weights * nll[..., 0]).sum() / (mlm_weights.sum() + 1e-5)
    sop_loss = -np.take_along_axis(log_softmax(outputs["sop_logits"]), sop_labels[:, None], -1)
    hits = outputs["mlm_logits"].argmax(-1) == mlm_labels
    expected = {
        "mlm_logits_loss": mlm_loss,
        "sop_logits_loss": sop_loss.mean(),
        "loss": mlm_loss + sop_weight * sop_loss.mean(),
        "mlm_logits_mlm_accuracy": (hits * mlm_weights).sum() / mlm_weights.sum(),
        "mlm_logits_mlm_mean_loss": (mlm_weights * nll[..., 0]).sum() / mlm_weights.sum(),
        "sop_logits_sop_mean_loss": sop_loss.mean(),
        "sop_logits_sop_accuracy": (outputs["sop_logits"].argmax(-1) == sop_labels).mean(),
    }
    assert set(expected) <= set(results)
    for name, value in expected.items():
        np.testing.assert_allclose(results[name], value, rtol=1e-5, err_msg=name)


def test_short_fit_learns_and_writes_everything(tmp_path, records):
    # 55: the last Keras epoch is a short one.
    run = options(tmp_path, records, eval_data=records["eval_data"], train_steps=55)
    summary = pretrain(run)
    with open(os.path.join(run.output_dir, "history.csv"), encoding="utf-8") as f:
        history = list(csv.DictReader(f))
    assert [int(row["step"]) for row in history] == [10, 20, 30, 40, 50, 55]
    losses = [float(row["loss"]) for row in history]
    assert losses[-1] < losses[0] - 0.4, losses  # observed: 4.78 -> 4.18
    assert float(history[-1]["mlm_accuracy"]) > float(history[0]["mlm_accuracy"])
    # The logged rate is the schedule's at the last update (step 54 of 55, warmup 3).
    np.testing.assert_allclose(float(history[-1]["learning_rate"]), 1e-2 * (1 - 54 / 55), rtol=1e-6)
    assert summary["step"] == 55 and summary["examples_seen"] == 440
    # The progress line's rate (`StepRate`): after the first, compiling stretch, so above the
    # average over every step of the run.
    average = summary["trained_steps_this_run"] / summary["train_seconds_this_run"]
    assert summary["train_steps_per_second"] > average, summary
    assert set(summary["eval"]) >= {"loss", "mlm_loss", "sop_loss", "mlm_accuracy", "sop_accuracy"}
    with open(os.path.join(run.output_dir, "summary.json"), encoding="utf-8") as f:
        assert json.load(f)["step"] == 55
    checkpoints = tf.train.get_checkpoint_state(os.path.join(run.output_dir, "checkpoints"))
    assert checkpoints.model_checkpoint_path.endswith("ckpt-55")
    assert glob.glob(os.path.join(run.output_dir, "logs", "train", "events.out.tfevents.*"))
    assert glob.glob(os.path.join(run.output_dir, "logs", "validation", "events.out.tfevents.*"))
    restored = keras.models.load_model(os.path.join(run.output_dir, "pretrainer.keras"))
    assert isinstance(restored, AlbertPretrainer)
    # A user's fresh process needs nothing but `import keras_albert` to load it, optimizer
    # (Lamb and its schedule) and losses included.
    load = (
        "import sys, keras, keras_albert; m = keras.models.load_model(sys.argv[1]); "
        "print(type(m.optimizer).__name__, m.optimizer.get_config()['learning_rate']['class_name'])"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", load, os.path.join(run.output_dir, "pretrainer.keras")],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "3",
             "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )  # fmt: skip
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    assert loaded.stdout.split()[-2:] == ["Lamb", "WarmupPolynomialDecay"], loaded.stdout

    # Rerunning a finished run trains nothing and keeps the step.
    again = pretrain(run)
    assert again["resumed_from_step"] == 55 and again["trained_steps_this_run"] == 0


def test_remat_reaches_the_model(tmp_path, records):
    """`--remat` sets `PretrainingOptions.remat`, and the run's model is rematerialized: its
    pretrainer.keras says so (that it trains as without: tests/models/test_remat.py)."""
    tool = Path(__file__).resolve().parents[2] / "tools" / "pretrain.py"
    parser = runpy.run_path(str(tool))["build_parser"]()
    required = ["--train-data", "d", "--output-dir", "o", "--train-steps", "1", "--batch-size", "8"]
    required += ["--preset", "albert_base_v2"]
    assert options_from_args(parser.parse_args([*required, "--remat"]), PretrainingOptions).remat
    run = options(tmp_path, records, train_steps=2, warmup_steps=1, remat=True)
    assert pretrain(run)["step"] == 2
    restored = keras.models.load_model(os.path.join(run.output_dir, "pretrainer.keras"))
    assert restored.backbone.remat is True


@pytest.mark.slow
def test_data_and_output_on_a_registered_file_system(tmp_path, records):
    """Records read and every output written through `tf.io.gfile`: the same run with its data
    and its output directory on TensorFlow's in-memory file system (`ram://`, registered as
    `gs://` is) trains on the same batches, writes the same files, and resumes from there."""
    remote = f"ram://{tmp_path.name}"
    tf.io.gfile.makedirs(f"{remote}/data")
    for path in glob.glob(records["train_data"]):
        tf.io.gfile.copy(path, f"{remote}/data/{os.path.basename(path)}", overwrite=True)
    local = pretrain(options(tmp_path, records, train_steps=20))
    run = options(tmp_path, records, train_steps=20, train_data=f"{remote}/data/train-*.tfrecord",
                  output_dir=f"{remote}/run")  # fmt: skip
    summary = pretrain(run)
    assert summary["final_train_logs"] == pytest.approx(local["final_train_logs"], rel=1e-6)
    listed = sorted(tf.io.gfile.listdir(run.output_dir))
    assert listed == sorted(os.listdir(tmp_path / "run")), listed
    with tf.io.gfile.GFile(f"{run.output_dir}/history.csv") as f:
        assert [row["step"] for row in csv.DictReader(io.StringIO(f.read()))] == ["10", "20"]
    restored = keras.models.load_model(f"{run.output_dir}/pretrainer.keras")
    for a, b in zip(restored.get_weights(), keras.models.load_model(
            tmp_path / "run" / "pretrainer.keras").get_weights(), strict=True):  # fmt: skip
        np.testing.assert_allclose(a, b, atol=1e-6)
    again = pretrain(run)  # finds its checkpoint on ram://
    assert again["resumed_from_step"] == 20 and again["trained_steps_this_run"] == 0


def test_evaluation_covers_every_record_with_exact_means(tmp_path, records):
    """21 held-out records in batches of 8: the partial last batch is evaluated (static-shape
    batches would leave 5 records out), the task losses are the exact means over the 21
    records, the total is their sum (the SOP loss with its weight), not a mean of the three
    batches' losses."""
    write_records(tmp_path / "data" / "eval.tfrecord", 21, seed=9)
    run = options(tmp_path, records, eval_data=records["eval_data"], train_steps=10)
    summary = pretrain(run)
    assert summary["eval_records"] == summary["eval_records_evaluated"] == 21

    model = keras.models.load_model(os.path.join(run.output_dir, "pretrainer.keras"))
    ((x, y, weights),) = list(
        make_pretraining_dataset(
            records["eval_data"], 21, SEQUENCE_LENGTH, MAX_PREDICTIONS, shuffle=False
        )
    )
    outputs = keras.tree.map_structure(np.asarray, model(x))
    sop_labels = np.asarray(y["sop"])
    sop_nll = -np.take_along_axis(log_softmax(outputs["sop_logits"]), sop_labels[:, None], -1)
    mlm_labels, mlm_weights = np.asarray(y["mlm"]), np.asarray(weights["mlm"])
    mlm_nll = -np.take_along_axis(log_softmax(outputs["mlm_logits"]), mlm_labels[..., None], -1)
    mlm_nll = mlm_nll[..., 0] * mlm_weights
    hits = (outputs["mlm_logits"].argmax(-1) == mlm_labels) * mlm_weights
    # What a mean of the three batches' losses (8, 8, 5 records) would give instead.
    batch_losses = [
        (mlm_nll[b].sum() / (mlm_weights[b].sum() + 1e-5) + sop_nll[b].mean(), b.stop - b.start)
        for b in (slice(0, 8), slice(8, 16), slice(16, 21))
    ]
    batch_mean = sum(loss * size for loss, size in batch_losses) / 21
    expected = {
        "loss": mlm_nll.sum() / mlm_weights.sum() + sop_nll.mean(),
        "sop_loss": sop_nll.mean(),
        "sop_accuracy": (outputs["sop_logits"].argmax(-1) == sop_labels).mean(),
        # Over every real prediction of the set, as the original's `tf.metrics.mean`.
        "mlm_loss": mlm_nll.sum() / mlm_weights.sum(),
        "mlm_accuracy": hits.sum() / mlm_weights.sum(),
    }
    for name, value in expected.items():
        np.testing.assert_allclose(summary["eval"][name], value, rtol=1e-5, err_msg=name)
    assert abs(batch_mean - expected["loss"]) > 1e-3  # the two totals differ here
    # The evaluation logged at the last step saw the same weights.
    with open(os.path.join(run.output_dir, "history.csv"), encoding="utf-8") as f:
        last = list(csv.DictReader(f))[-1]
    np.testing.assert_allclose(float(last["val_sop_loss"]), expected["sop_loss"], rtol=1e-5)


def test_dynamic_masking_trains_with_fresh_masks(tmp_path, records):
    """The records' static masks are undone and new ones drawn in-graph, with the option's
    number of prediction slots; the vocabulary must match the model's."""
    vocabulary = str(Path(__file__).parents[1] / "data" / "albert_test_vocab.spm")  # 12 pieces
    path = tmp_path / "small-vocabulary.tfrecord"
    write_records(path, 32, vocabulary_size=12)
    config = write_config(tmp_path / "v12.json", vocabulary_size=12)
    run = options(
        tmp_path, records, train_data=str(path), config=config, train_steps=4, log_every_steps=2,
        checkpoint_every_steps=4,
        dynamic_masking=True, vocabulary=vocabulary, max_predictions_per_sequence=3,
        seed=0,
    )  # fmt: skip
    keras.utils.set_random_seed(0)  # a global TF seed of 0 once broke the per-pass seeds
    layout = inspect_records(run.train_data)
    stream = make_datasets(run, layout_for_options(layout, run), dynamic_masking_for(run))
    x, y, weights = next(iter(stream))
    assert x["mask_positions"].shape == (8, 3)
    assert 0 < float(tf.reduce_sum(weights["mlm_logits"])) <= 24

    def masked_positions_by_record(stream, batches):
        """{record (its ids with the masked ones restored): [masked positions of each pass]}."""
        found = {}
        for x, y, weights in stream.take(batches):
            for row in range(len(x["token_ids"])):
                ids = x["token_ids"][row].numpy().copy()
                real = weights["mlm_logits"][row].numpy() > 0
                positions = x["mask_positions"][row].numpy()[real]
                ids[positions] = y["mlm_logits"][row].numpy()[real]
                found.setdefault(tuple(ids), []).append(frozenset(positions.tolist()))
        return found

    # 32 records, batches of 8: two passes in 8 batches, each record seen once per pass.
    static_run = dataclasses.replace(run, max_predictions_per_sequence=MAX_PREDICTIONS)
    static = make_datasets(static_run, layout_for_options(layout, static_run))
    in_file = masked_positions_by_record(static, 4)
    fresh = masked_positions_by_record(stream, 8)
    assert len(in_file) == len(fresh) == 32 and set(in_file) == set(fresh)
    assert all(len(passes) == 2 for passes in fresh.values())
    assert sum(fresh[key][0] != in_file[key][0] for key in fresh) >= 28  # not the file's
    assert sum(first != second for first, second in fresh.values()) >= 28  # new each pass
    assert pretrain(run)["step"] == 4

    mismatched = write_config(tmp_path / "v64.json", vocabulary_size=64)
    with pytest.raises(ValueError, match="has 12 pieces but the model's vocabulary_size is 64"):
        pretrain(dataclasses.replace(run, config=mismatched, output_dir=str(tmp_path / "b")))


def test_the_stream_is_a_function_of_the_seed_alone(tmp_path, records):
    """The per-pass pipelines' shuffles take their seeds from `seed` only: the same batches
    under any global TF seed, 0 included (which once failed: TF compared the tensor seed with
    0 in Python), across a pass boundary (96 records: 12 batches a pass)."""
    run = options(tmp_path, records)
    layout = inspect_records(run.train_data)

    def first_batches(global_seed, seed=run.seed):
        keras.utils.set_random_seed(global_seed)
        stream = make_datasets(dataclasses.replace(run, seed=seed), layout)
        return np.stack([x["token_ids"].numpy() for x, _, _ in stream.take(14)])

    under_zero = first_batches(0)
    np.testing.assert_array_equal(under_zero, first_batches(5))
    assert not np.array_equal(under_zero, first_batches(0, seed=run.seed + 1))  # it shuffles
    # Each record once per pass, the second pass in another order.
    rows = under_zero.reshape(-1, under_zero.shape[-1])
    assert len({row.tobytes() for row in rows[:96]}) == 96
    assert not np.array_equal(rows[:16], rows[96:112])


def test_input_sharding_by_files_reads_only_the_pipelines_own_files(tmp_path, records):
    """`input_sharding="files"`: of 2 input pipelines (workers) with one replica each, each
    reads only its own file, in batches of batch_size / 2; with fewer files than pipelines, a
    clear error."""
    run = options(tmp_path, records, input_sharding="files")
    layout = inspect_records(run.train_data)

    def rows(dataset):
        return {row.tobytes() for x, _, _ in dataset for row in x["token_ids"].numpy()}

    for pipeline, path in enumerate(layout.files):
        context = tf.distribute.InputContext(2, pipeline, 2)
        batches = list(make_datasets(run, layout, input_context=context).take(12))
        assert {int(x["token_ids"].shape[0]) for x, _, _ in batches} == {4}
        own = make_pretraining_dataset(
            [path], 8, layout.sequence_length, layout.max_predictions_per_sequence, shuffle=False
        )
        assert rows(batches) == rows(own)  # 12 × 4 = 48 rows: exactly its file, once
    single = dataclasses.replace(layout, files=layout.files[:1])
    with pytest.raises(
        ValueError, match=r"at least one file per input pipeline: 1 file\(s\) for 2"
    ):
        make_datasets(run, single, input_context=tf.distribute.InputContext(2, 0, 2))


@pytest.mark.parametrize(
    "kind",
    ["keras_pretrainer", pytest.param("keras_backbone", marks=pytest.mark.slow),
     pytest.param("weights_h5", marks=pytest.mark.slow), "hf"],
)  # fmt: skip
def test_initialization_from_a_checkpoint(tmp_path, records, kind):
    """With one step at learning rate 0 (warmup step 0) the final weights are the initial
    ones: the checkpoint's, or, for a backbone-only checkpoint, its backbone and fresh heads."""
    keras.utils.set_random_seed(123)
    source = AlbertPretrainer(AlbertBackbone(**TINY_MODEL))
    paths = {
        "keras_pretrainer": tmp_path / "init.keras",
        "keras_backbone": tmp_path / "init.keras",
        "weights_h5": tmp_path / "init.weights.h5",
        "hf": tmp_path / "hf",
    }
    init = paths[kind]
    if kind == "keras_pretrainer":
        source.save(init)
    elif kind == "keras_backbone":
        source.backbone.save(init)
    elif kind == "weights_h5":
        source.save_weights(init)
    else:
        from keras_albert.convert import save_checkpoint

        save_checkpoint(source, init, format="hf")
    changes = dict(init_checkpoint=str(init), train_steps=1, warmup_steps=1, log_every_steps=1)
    changes["checkpoint_every_steps"] = 1
    if kind != "weights_h5":
        changes["config"] = None  # the architecture comes from the checkpoint
    summary = pretrain(options(tmp_path, records, **changes))
    final = keras.models.load_model(summary["model"])
    atol = 1e-6 if kind == "hf" else 0
    for expected, actual in zip(
        source.backbone.get_weights(), final.backbone.get_weights(), strict=True
    ):
        np.testing.assert_allclose(actual, expected, atol=atol, rtol=0)
    heads_equal = all(
        np.array_equal(a, b)
        for a, b in zip(
            source.masked_lm_head.get_weights(), final.masked_lm_head.get_weights(), strict=True
        )
    )
    assert heads_equal == (kind != "keras_backbone")


def test_init_checkpoint_with_another_architecture_is_refused(tmp_path, records):
    AlbertPretrainer(AlbertBackbone(**{**TINY_MODEL, "hidden_dim": 8})).save(tmp_path / "a.keras")
    with pytest.raises(ValueError, match="has the architecture .*'hidden_dim': 8"):
        pretrain(options(tmp_path, records, init_checkpoint=str(tmp_path / "a.keras")))


def test_jit_compiled_train_step_has_static_shapes(tmp_path, records):
    """What a TPU needs: static batch shapes, and a train step XLA compiles whole."""
    run = options(tmp_path, records)
    layout = inspect_records(run.train_data)
    dataset = make_datasets(run, layout)
    for spec in tf.nest.flatten(dataset.element_spec):
        assert spec.shape.is_fully_defined(), dataset.element_spec
    model = AlbertPretrainer(AlbertBackbone(**TINY_MODEL))
    compile_pretrainer(model, Lamb(1e-3), jit_compile=True)
    batch = next(iter(dataset))
    model.optimizer.build(model.trainable_variables)
    step = tf.function(model.train_step, jit_compile=True)
    hlo = step.experimental_get_compiler_ir(batch)(stage="hlo")
    assert "s32[8,16]" in hlo  # token_ids and friends: (batch, sequence) known at compile time
    assert "f32[8,4,64]" in hlo  # mlm_logits: (batch, num_masked, vocabulary)


# === Bad input: each a clear error before training starts ===


def test_data_glob_matching_nothing(tmp_path, records):
    missing = str(tmp_path / "nowhere-*.tfrecord")
    with pytest.raises(ValueError, match=f"`train_data` matches no file.*{re.escape(missing)}"):
        pretrain(options(tmp_path, records, train_data=missing))


def test_records_without_the_original_features(tmp_path, records):
    path = tmp_path / "bad.tfrecord"
    write_records(path, 4, drop_feature="masked_lm_weights")
    with pytest.raises(ValueError, match="lack the features \\['masked_lm_weights'\\]"):
        pretrain(options(tmp_path, records, train_data=str(path)))


def test_files_with_different_lengths(tmp_path, records):
    write_records(tmp_path / "data" / "train-9.tfrecord", 4, sequence_length=20)
    with pytest.raises(ValueError, match="train-9.tfrecord holds sequences of 20 tokens"):
        pretrain(options(tmp_path, records))


def test_eval_data_with_another_layout(tmp_path, records):
    write_records(tmp_path / "eval-long.tfrecord", 4, max_predictions=6)
    eval_data = str(tmp_path / "eval-long.tfrecord")
    with pytest.raises(ValueError, match="eval_data holds sequences of 16 tokens with 6"):
        pretrain(options(tmp_path, records, eval_data=eval_data))


def test_vocabulary_smaller_than_the_data(tmp_path, records):
    config = write_config(tmp_path / "small.json", vocabulary_size=32)
    with pytest.raises(ValueError, match="token_ids in \\[0, 6[0-3]\\] but the model's "):
        pretrain(options(tmp_path, records, config=config))


def test_sequences_longer_than_the_model(tmp_path, records):
    config = write_config(tmp_path / "short.json", max_sequence_length=8)
    with pytest.raises(ValueError, match="sequences of 16 tokens but the model's max_seq"):
        pretrain(options(tmp_path, records, config=config))


def test_output_dir_that_cannot_be_written(tmp_path, records):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(ValueError, match="`output_dir` is not a writable directory"):
        pretrain(options(tmp_path, records, output_dir=str(blocker / "run")))


def test_resuming_with_other_options_is_refused(tmp_path, records):
    pretrain(options(tmp_path, records, train_steps=10))
    with pytest.raises(ValueError, match="batch_size: 8 -> 16"):
        pretrain(options(tmp_path, records, train_steps=10, batch_size=16))
    # A run.json of before the renames (`total_steps`, `sentencepiece_model`, fewer options)
    # resumes under today's names, and is checked under them.
    run_file = tmp_path / "run" / "run.json"
    recorded = json.loads(run_file.read_text())
    assert recorded["train_steps"] == 10 and recorded["vocabulary"] is None
    old = {key: value for key, value in recorded.items() if key not in ("max_ngram",)}
    old["total_steps"] = old.pop("train_steps")
    old["sentencepiece_model"] = old.pop("vocabulary")
    run_file.write_text(json.dumps(old))
    with pytest.raises(ValueError, match="train_steps: 10 -> 20"):
        pretrain(options(tmp_path, records, train_steps=20))
    again = pretrain(options(tmp_path, records, train_steps=10))
    assert again["resumed_from_step"] == 10 and again["trained_steps_this_run"] == 0


def test_resume_skips_a_truncated_latest_checkpoint_and_ends_as_an_uninterrupted_run(
    tmp_path, records, capsys
):
    run = options(tmp_path, records, train_steps=20)
    pretrain(run)
    final = keras.models.load_model(os.path.join(run.output_dir, "pretrainer.keras")).get_weights()
    checkpoints = os.path.join(run.output_dir, "checkpoints")
    index = Path(checkpoints, "ckpt-20.index")
    index.write_bytes(index.read_bytes()[:30])  # as a copy cut short leaves it
    capsys.readouterr()
    again = pretrain(run)
    assert again["resumed_from_step"] == 10 and again["trained_steps_this_run"] == 10
    assert (
        f"{os.path.join(checkpoints, 'ckpt-20')} (" in capsys.readouterr().out
    )  # the one line naming the skipped checkpoint
    resumed = keras.models.load_model(os.path.join(run.output_dir, "pretrainer.keras"))
    for expected, actual in zip(final, resumed.get_weights(), strict=True):
        np.testing.assert_array_equal(actual, expected)


def back_to(output_dir, step):
    """The run's checkpoints as a run stopped after `step`'s checkpoint left them."""
    checkpoints = os.path.join(output_dir, "checkpoints")
    for path in glob.glob(os.path.join(checkpoints, "ckpt-*")):
        if int(re.search(r"ckpt-(\d+)", path).group(1)) > step:
            os.remove(path)
    kept = os.path.join(checkpoints, f"ckpt-{step}")
    tf.compat.v1.train.update_checkpoint_state(checkpoints, kept, all_model_checkpoint_paths=[kept])


def final_weights(run):
    path = os.path.join(run.output_dir, "pretrainer.keras")
    return keras.models.load_model(path).get_weights()


@pytest.mark.slow
def test_resume_with_dropout_ends_as_an_uninterrupted_run(tmp_path, records):
    """The checkpoint holds the dropout layers' seed generators: the resumed run draws the
    masks the uninterrupted one drew, and ends bit for bit where it ended."""
    config = write_config(tmp_path / "dropout.json", dropout=0.1, attention_dropout=0.1)
    run = options(tmp_path, records, config=config, train_steps=20)
    pretrain(run)
    final = final_weights(run)
    back_to(run.output_dir, 10)
    again = pretrain(run)
    assert again["resumed_from_step"] == 10 and again["trained_steps_this_run"] == 10
    for expected, actual in zip(final, final_weights(run), strict=True):
        np.testing.assert_array_equal(actual, expected)


@pytest.mark.slow
def test_a_checkpoint_without_dropout_state_resumes_with_one_line(
    tmp_path, records, monkeypatch, capsys
):
    """A checkpoint written before they held the seed generators resumes; the generators start
    afresh, so the masks, and the weights the run ends with, differ from an uninterrupted
    run's (which is why the checkpoints now hold them)."""
    config = write_config(tmp_path / "dropout.json", dropout=0.1, attention_dropout=0.1)
    run = options(tmp_path, records, config=config, train_steps=20)
    with monkeypatch.context() as patch:  # the checkpoint as the driver wrote it before
        old = lambda model, optimizer: tf.train.Checkpoint(model=model, optimizer=optimizer)  # noqa: E731
        patch.setattr("keras_albert.pretraining.driver.training_checkpoint", old)
        pretrain(run)
    final = final_weights(run)
    back_to(run.output_dir, 10)
    capsys.readouterr()
    again = pretrain(run)
    assert again["resumed_from_step"] == 10 and again["trained_steps_this_run"] == 10
    path = os.path.join(run.output_dir, "checkpoints", "ckpt-10")
    lines = [line for line in capsys.readouterr().out.splitlines() if "dropout" in line]
    assert lines == [
        f"keras_albert: {path} holds no dropout state (written by an older keras_albert): the "
        "resumed run draws other dropout masks than an uninterrupted run would."
    ]
    resumed = final_weights(run)
    assert any(not np.array_equal(a, b) for a, b in zip(final, resumed, strict=True))


def test_multi_worker_is_not_refused(tmp_path, records, monkeypatch):
    """The driver once refused "multi_worker" (keras-team/keras#20585 breaks `model.fit`
    there); the loop runs under it (test_multi_worker.py), so the name goes on to the cluster
    set-up, here failing on the unset TF_CONFIG before any work."""
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="TF_CONFIG environment variable, which is not set"):
        pretrain(options(tmp_path, records, strategy="multi_worker"))
    assert not os.path.exists(tmp_path / "run")


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"preset": "albert_base_v2"}, "At most one of `preset`, `config` must be given"),
        ({"config": None}, "One of `preset`, `config`, `init_checkpoint` must be given"),
        ({"checkpoint_every_steps": 15}, "divisible by `log_every_steps`"),
        ({"train_steps": 0}, "`train_steps` must be an integer >= 1"),
        ({"dynamic_masking": True}, "`vocabulary` must be given with `dynamic_mask"),
        ({"jit_compile": "yes"}, "`jit_compile` must be one of True, False, 'auto'"),
        ({"sentence_order_loss_weight": -1.0}, "sentence_order_loss_weight=-1.0"),
    ],
)
def test_bad_options(tmp_path, records, changes, message):
    with pytest.raises(ValueError, match=message):
        options(tmp_path, records, **changes)


def test_a_changed_normalization_is_recorded_for_fine_tuning_and_the_export(tmp_path, records):
    from keras_albert.convert import resolve_normalization

    short = dict(train_steps=2, warmup_steps=1, log_every_steps=2, checkpoint_every_steps=2)
    pretrain(options(tmp_path, records, **short))
    recorded = json.loads((tmp_path / "run" / "run.json").read_text())
    assert "lowercase" not in recorded and "strip_accents" not in recorded  # the defaults
    pretrain(
        options(tmp_path, records, output_dir=str(tmp_path / "cased"), lowercase=False, **short)
    )
    recorded = json.loads((tmp_path / "cased" / "run.json").read_text())
    assert recorded["lowercase"] is False and "strip_accents" not in recorded
    assert resolve_normalization(str(tmp_path / "cased")) == {
        "lowercase": False,
        "strip_accents": True,
    }


def test_an_interrupted_run_started_with_a_config_loads_from_its_checkpoints(tmp_path, records):
    # Until the run ends it has checkpoints but no pretrainer.keras or summary.json: run.json
    # records the architecture from the first step, so the checkpoints load (and fine-tuning
    # starts from them) whatever flags started the run.
    run = options(tmp_path, records, train_steps=10)
    pretrain(run)
    final = keras.models.load_model(os.path.join(run.output_dir, "pretrainer.keras"))
    for name in ("pretrainer.keras", "summary.json"):
        os.remove(os.path.join(run.output_dir, name))
    recorded = json.loads(Path(run.output_dir, "run.json").read_text())["config"]
    assert recorded == final.backbone.albert_config.to_dict()
    loaded = load_checkpoint(run.output_dir)
    assert isinstance(loaded, AlbertPretrainer)
    for expected, actual in zip(final.get_weights(), loaded.get_weights(), strict=True):
        np.testing.assert_array_equal(actual, expected)
    backbone = load_checkpoint(run.output_dir, model="backbone")
    for expected, actual in zip(final.backbone.weights, backbone.weights, strict=True):
        np.testing.assert_array_equal(actual.numpy(), expected.numpy())
    # Resuming it with another architecture is refused in one line naming the difference.
    other = write_config(tmp_path / "other.json", intermediate_dim=TINY_MODEL["hidden_dim"])
    message = (
        f"holds checkpoints of another architecture \\(intermediate_dim: "
        f"{TINY_MODEL['intermediate_dim']} -> {TINY_MODEL['hidden_dim']}\\)"
    )
    with pytest.raises(ValueError, match=message):
        pretrain(options(tmp_path, records, train_steps=10, config=other))
