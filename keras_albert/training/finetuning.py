"""The fine-tuning driver: GLUE-style tasks by name (or generic), over plain `model.fit`.

`finetune(FinetuningOptions(...))` reads the task files (`keras_albert.text.glue`), builds the
classifier from our pretraining output, a converted checkpoint or (from scratch) a config,
trains with AdamW and ALBERT's warmup + linear decay, evaluates the task's official metrics
(scikit-learn / SciPy) after every epoch, keeps the best checkpoint and writes predictions.

What `output_dir` holds:

    best.keras               the classifier with the best main metric so far
    history.csv              one row per epoch: train loss/metrics and the official metrics
    logs/train, logs/validation   TensorBoard
    eval_predictions.tsv     id, prediction, label for the eval data (best checkpoint)
    test_predictions.tsv     index, prediction (GLUE submission layout), if `test_data` given
    tokenizer.model          the SentencePiece model used (so the directory is self-contained)
    summary.json             the options, recipe, best metrics and skipped-row counts

Defaults per task are google-research/albert `run_glue.sh` (commit 557c37b): warmup steps,
learning rate, train steps and batch size per task, `--max_seq_length=512 --optimizer=adamw`.
`scale` multiplies train and warmup steps for small machines (`keras_albert.training.recipes`).
"""

from __future__ import annotations

import dataclasses
import json
import os

import keras

from keras_albert.text.glue import Examples, TaskSpec, make_dataset, read_examples
from keras_albert.training import run_directory
from keras_albert.training.callbacks import BestModel, GlueEvaluation
from keras_albert.training.elastic_depth import enable_elastic_depth
from keras_albert.training.glue_metrics import predictions_from_logits
from keras_albert.training.initial_weights import initial_classifier, sentencepiece_model_for
from keras_albert.training.options import FinetuningOptions
from keras_albert.training.recipes import epoch_plan, resolve_recipe
from keras_albert.training.schedule import WarmupPolynomialDecay
from keras_albert.training.strategy import build_strategy

__all__ = ["FinetuningOptions", "build_optimizer", "finetune"]


def finetune(options: FinetuningOptions) -> dict:
    """Fine-tunes a classifier on `options.task`; returns the summary (also `summary.json`)."""
    from keras_albert.text.tokenizer import AlbertTokenizer

    # Setup. Seed first: seeding clears TensorFlow's kernel cache, which drops the
    # SentencePiece resource of a tokenizer made earlier ("SentencepieceOp ... does not exist"
    # in tf.data).
    keras.utils.set_random_seed(options.seed)
    run_directory.check_output_dir(options.output_dir)
    task = options.task_spec()
    sentencepiece_model = sentencepiece_model_for(options)
    if sentencepiece_model is None:
        raise ValueError(
            "`sentencepiece_model` must be given: none was found beside `init_checkpoint`. "
            f"Received: sentencepiece_model=None, init_checkpoint={options.init_checkpoint!r}"
        )
    tokenizer = AlbertTokenizer(sentencepiece_model)

    # Data.
    read = dict(task=task, skip_invalid=options.skip_invalid, progress=options.verbose > 0)
    train = read_examples(options.train_data, **read)
    evaluation = read_examples(options.eval_data, **read)
    test = None
    if options.test_data:
        test = read_examples(options.test_data, labeled=False, **read)
    for examples in (train, evaluation, test):
        if examples is not None and examples.num_skipped:
            print(
                f"keras_albert: skipped {examples.num_skipped} invalid rows of {examples.path}; "
                f"first: {examples.skipped[0]}"
            )
    recipe = resolve_recipe(options, task, len(train))
    epochs, steps_per_epoch = epoch_plan(
        recipe.train_steps, recipe.batch_size, len(train), options.epochs
    )
    train_steps = epochs * steps_per_epoch

    # Model.
    strategy = build_strategy(options.strategy)
    with strategy.scope():
        model = initial_classifier(options, task)
        config = model.backbone.albert_config
        if config.vocabulary_size != tokenizer.vocabulary_size:
            raise ValueError(
                f"The SentencePiece model {sentencepiece_model!r} has "
                f"{tokenizer.vocabulary_size} pieces but the model's vocabulary_size is "
                f"{config.vocabulary_size}."
            )
        if options.sequence_length > config.max_sequence_length:
            raise ValueError(
                f"`sequence_length` must be at most the model's max_sequence_length, "
                f"{config.max_sequence_length}. Received: sequence_length="
                f"{options.sequence_length}"
            )
        if task.is_regression:
            loss = keras.losses.MeanSquaredError()
            train_metrics = [keras.metrics.MeanSquaredError(name="mse")]
        else:
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            train_metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        optimizer = build_optimizer(
            recipe.learning_rate, train_steps, recipe.warmup_steps, options.weight_decay_rate
        )
        model.compile(optimizer=optimizer, loss=loss, metrics=train_metrics)
        if options.elastic_depths:
            enable_elastic_depth(model, options.elastic_depths)

    # The loop. The output directory is made only now: a failed check leaves none behind.
    run_directory.prepare_output_dir(options.output_dir)
    dataset = dict(tokenizer=tokenizer, sequence_length=options.sequence_length)
    train_dataset = make_dataset(
        train, batch_size=recipe.batch_size, training=True, seed=options.seed, **dataset
    )
    eval_dataset = make_dataset(evaluation, batch_size=recipe.batch_size, in_memory=True, **dataset)
    evaluator = GlueEvaluation(task, eval_dataset, evaluation.labels, loss)
    best_path = os.path.join(options.output_dir, "best.keras")
    callbacks = [
        evaluator,  # first: the callbacks after it read the metrics it adds to the logs
        BestModel(best_path, monitor=f"val_{task.main_metric}"),
        keras.callbacks.CSVLogger(os.path.join(options.output_dir, "history.csv")),
        keras.callbacks.TensorBoard(os.path.join(options.output_dir, "logs"), write_graph=False),
    ]
    print(
        f"keras_albert: {task.name}: {len(train)} train / {len(evaluation)} eval examples; "
        f"{epochs} epochs x {steps_per_epoch} steps (batch {recipe.batch_size}, "
        f"peak lr {recipe.learning_rate}, warmup {recipe.warmup_steps})"
    )
    try:
        model.fit(
            train_dataset,
            epochs=epochs,
            steps_per_epoch=steps_per_epoch,
            callbacks=callbacks,
            shuffle=False,  # the dataset shuffles itself
            verbose=options.verbose,
        )
    except KeyboardInterrupt:  # one line for the command, not TensorFlow's traceback
        saved = (
            f"the best model so far is {best_path}"
            if os.path.exists(best_path)
            else f"nothing saved in {options.output_dir} yet"
        )
        raise KeyboardInterrupt(f"{saved} — rerun the same command to train again") from None

    # Save: the best model's predictions, the SentencePiece model, the summary.
    best = keras.models.load_model(best_path)
    evaluator.set_model(best)
    best_results, predictions = evaluator.evaluate()
    _write_predictions(
        os.path.join(options.output_dir, "eval_predictions.tsv"),
        evaluation,
        task,
        predictions,
        with_labels=True,
    )
    if test is not None:
        test_logits = best.predict(make_dataset(test, batch_size=recipe.batch_size, **dataset))
        _write_predictions(
            os.path.join(options.output_dir, "test_predictions.tsv"),
            test,
            task,
            predictions_from_logits(task, test_logits),
            with_labels=False,
        )
    run_directory.atomic_copy(
        sentencepiece_model, os.path.join(options.output_dir, "tokenizer.model")
    )
    best_epoch = max(evaluator.history, key=lambda row: row[task.main_metric])["epoch"]
    summary = {
        "task": task.name,
        "options": dataclasses.asdict(options),
        "recipe": dataclasses.asdict(recipe),
        "epochs": epochs,
        "steps_per_epoch": steps_per_epoch,
        "train_steps": train_steps,
        "num_train_examples": len(train),
        "num_eval_examples": len(evaluation),
        "num_skipped": {
            "train": train.num_skipped,
            "eval": evaluation.num_skipped,
            "test": test.num_skipped if test is not None else None,
        },
        "history": evaluator.history,
        "best_epoch": best_epoch,
        "best": best_results,
    }
    run_directory.write_summary(options.output_dir, summary)
    print(json.dumps({"task": task.name, "best_epoch": best_epoch, "best": best_results}))
    return summary


def build_optimizer(
    learning_rate: float, train_steps: int, warmup_steps: int, weight_decay_rate: float
) -> keras.optimizers.AdamW:
    """ALBERT's `--optimizer=adamw`: decoupled decay 0.01 (not on LayerNorm or biases),
    epsilon 1e-6, gradients clipped to global norm 1, linear warmup then linear decay to 0.

    Keras's AdamW corrects the moments' bias; ALBERT's AdamWeightDecayOptimizer does not.
    """
    schedule = WarmupPolynomialDecay(learning_rate, warmup_steps, train_steps)
    optimizer = keras.optimizers.AdamW(
        learning_rate=schedule,
        weight_decay=weight_decay_rate,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        global_clipnorm=1.0,
    )
    optimizer.exclude_from_weight_decay(var_names=["layer_norm", "LayerNorm", "bias"])
    return optimizer


def _write_predictions(path, examples: Examples, task: TaskSpec, predictions, with_labels):
    def label_text(value):
        return repr(float(value)) if task.is_regression else task.labels[int(value)]

    lines = ["index\tprediction" + ("\tlabel" if with_labels else "")]
    for index, example_id in enumerate(examples.ids):
        row = [example_id, label_text(predictions[index])]
        if with_labels:
            row.append(label_text(examples.labels[index]))
        lines.append("\t".join(row))
    run_directory.write_text_atomically(path, "\n".join(lines) + "\n")
