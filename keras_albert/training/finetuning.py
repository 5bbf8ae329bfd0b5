"""The fine-tuning driver: every task (GLUE-style classification, SQuAD, RACE, NER) over plain
`model.fit`.

`finetune(FinetuningOptions(...))` reads the task's files (`keras_albert.training.tasks`: one
`FinetuningTask` per task), builds the task model on the backbone of our pretraining output, a
converted checkpoint or (from scratch) a config, trains with AdamW and ALBERT's warmup + linear
decay, evaluates the task's official metrics after every stretch of steps, keeps the best
checkpoint and writes the best checkpoint's predictions.

What `output_dir` holds:

    best.keras               the task model with the best main metric so far
    history.csv              one row per evaluation: train loss/metrics and the official metrics
    logs/train, logs/validation   TensorBoard
    metrics.json             the best checkpoint's official metrics
    predictions              the best checkpoint's, per task:
                               GLUE: eval_predictions.tsv (index, prediction, label) and, with
                                 `test_data`, test_predictions.tsv (index, prediction)
                               SQuAD: predictions.json, null_odds.json, nbest_predictions.json
                               RACE: eval_predictions.jsonl (one line per question)
                               NER: eval_predictions.conll (word, gold, predicted)
    tokenizer.model          the SentencePiece model used (so the directory is self-contained)
    summary.json             the options, recipe, best metrics and example counts

Default recipes: google-research/albert `run_glue.sh` (commit 557c37b) per GLUE task, the
original README's for SQuAD and RACE, Hugging Face `run_ner`'s for NER. `scale` multiplies
train and warmup steps for small machines (`keras_albert.training.recipes`). Progress is a Keras
progress bar over the steps between two evaluations, headed "evaluation k/n: steps a-b of N,
about T left".
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings

import keras

from keras_albert.training import run_directory
from keras_albert.training.callbacks import BestModel, EvaluationProgress, TaskEvaluation
from keras_albert.training.elastic_depth import enable_elastic_depth
from keras_albert.training.initial_weights import initial_backbone, sentencepiece_model_for
from keras_albert.training.options import FinetuningOptions
from keras_albert.training.recipes import epoch_plan, resolve_recipe
from keras_albert.training.schedule import WarmupPolynomialDecay
from keras_albert.training.strategy import build_strategy
from keras_albert.training.tasks import make_task

__all__ = ["FinetuningOptions", "build_optimizer", "finetune"]


def finetune(options: FinetuningOptions) -> dict:
    """Fine-tunes a model on `options.task`; returns the summary (also `summary.json`)."""
    from keras_albert.text.tokenizer import AlbertTokenizer

    # Setup. Seed first: seeding clears TensorFlow's kernel cache, which drops the
    # SentencePiece resource of a tokenizer made earlier ("SentencepieceOp ... does not exist"
    # in tf.data).
    keras.utils.set_random_seed(options.seed)
    run_directory.check_output_dir(options.output_dir)
    sentencepiece_model = sentencepiece_model_for(options)
    if sentencepiece_model is None:
        raise ValueError(
            "`sentencepiece_model` must be given: none was found beside `init_checkpoint`. "
            f"Received: sentencepiece_model=None, init_checkpoint={options.init_checkpoint!r}"
        )
    tokenizer = AlbertTokenizer(sentencepiece_model)

    # Data.
    task = make_task(options, tokenizer)
    recipe = resolve_recipe(options, task.recipe(), task.num_train)
    epochs, steps_per_epoch = epoch_plan(
        recipe.train_steps, recipe.batch_size, task.num_train_features(), options.epochs
    )
    train_steps = epochs * steps_per_epoch

    # Model.
    strategy = build_strategy(options.strategy)
    with strategy.scope():
        backbone = initial_backbone(options)
        config = backbone.albert_config
        if config.vocabulary_size != tokenizer.vocabulary_size:
            raise ValueError(
                f"The SentencePiece model {sentencepiece_model!r} has "
                f"{tokenizer.vocabulary_size} pieces but the model's vocabulary_size is "
                f"{config.vocabulary_size}."
            )
        if task.sequence_length > config.max_sequence_length:
            raise ValueError(
                f"`sequence_length` must be at most the model's max_sequence_length, "
                f"{config.max_sequence_length}. Received: sequence_length="
                f"{task.sequence_length}"
            )
        model = task.build_model(backbone)
        optimizer = build_optimizer(
            recipe.learning_rate, train_steps, recipe.warmup_steps, options.weight_decay_rate
        )
        task.compile(model, optimizer)
        if options.elastic_depths:
            enable_elastic_depth(model, options.elastic_depths)

    # The loop. The output directory is made only now: a failed check leaves none behind.
    run_directory.prepare_output_dir(options.output_dir)
    train_dataset = task.train_dataset(recipe.batch_size, options.seed)
    evaluator = TaskEvaluation(task, recipe.batch_size)
    best_path = os.path.join(options.output_dir, "best.keras")
    callbacks = [
        evaluator,  # first: the callbacks after it read the metrics it adds to the logs
        BestModel(best_path, monitor=f"val_{task.main_metric}"),
        keras.callbacks.CSVLogger(os.path.join(options.output_dir, "history.csv")),
        keras.callbacks.TensorBoard(os.path.join(options.output_dir, "logs"), write_graph=False),
        EvaluationProgress(steps_per_epoch, train_steps),
    ]
    print(
        f"keras_albert: {task.name}: {task.num_train} train / {task.num_eval} eval examples; "
        f"{train_steps} steps (batch {recipe.batch_size}, peak lr {recipe.learning_rate}, "
        f"warmup {recipe.warmup_steps}), {epochs} evaluations"
    )
    # The backbone's pooler takes no part in the span and token heads: no gradient, by design.
    warnings.filterwarnings("ignore", message=r"Gradients do not exist for variables \['pooler/")
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

    # Save: the best model's predictions and metrics, the SentencePiece model, the summary.
    best = keras.models.load_model(best_path)
    best_results = task.evaluate(best, recipe.batch_size, output_dir=options.output_dir)
    run_directory.write_text_atomically(
        os.path.join(options.output_dir, "metrics.json"), json.dumps(best_results, indent=2) + "\n"
    )
    run_directory.atomic_copy(
        sentencepiece_model, os.path.join(options.output_dir, "tokenizer.model")
    )
    best_epoch = max(evaluator.history, key=lambda row: row[task.main_metric])["epoch"]
    summary = {
        "task": task.name,
        "options": dataclasses.asdict(options),
        "recipe": dataclasses.asdict(recipe),
        "sequence_length": task.sequence_length,
        "epochs": epochs,
        "steps_per_epoch": steps_per_epoch,
        "train_steps": train_steps,
        **task.summary(),
        "main_metric": task.main_metric,
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
