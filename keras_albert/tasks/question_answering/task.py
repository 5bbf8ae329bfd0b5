"""SQuAD v1.1 and v2.0 as a `FinetuningTask`: windows (`features`) → an `AlbertQuestionAnswerer`
→ answers, no-answer scores and the official metrics.

`squad_v1` trains the null-span head (the original `run_squad_v1.py`); `squad_v2` trains the
head `squad_answerability` names: "null_span" (BERT / Hugging Face) or "answer_class" (the
original `run_squad_v2.py`). In v2 a question is answered "" when its null odds exceed
`defaults.NULL_SCORE_THRESHOLD` (0: null score above the best span's for null span,
answerability logit above 0 for answer class; the export's default too); `metrics.json` also
reports the threshold that would have been best (`best_f1_thresh`). The final evaluation writes
`predictions.json`, `null_odds.json`, `nbest_predictions.json` and `metrics.json`
(`keras_albert.tasks.question_answering.postprocess`) and, with `test_data` (a SQuAD file whose
questions have no answers, read with `labeled=False`), `test_predictions.json` (question id →
answer: the official submission) and for v2 `test_null_odds.json`, decoded as the evaluation
decodes, at the same threshold.

`SQUAD_RECIPE` is the original README's (`defaults.RECIPE`, with the window flags beside it);
the epochs count questions, as the original's `num_train_steps`.
"""

from __future__ import annotations

import numpy as np

from keras_albert.tasks.finetuning_task import FinetuningTask, predict_packed
from keras_albert.tasks.question_answering import defaults
from keras_albert.tasks.question_answering.features import (
    SquadFeature,
    feature_arrays,
    read_squad_examples,
    read_squad_json,
    squad_features,
)
from keras_albert.tasks.question_answering.model import AlbertQuestionAnswerer
from keras_albert.tasks.question_answering.postprocess import (
    SquadPredictions,
    decode_answer_class,
    decode_null_span,
    evaluation_metrics,
    write_evaluation,
    write_test_predictions,
)
from keras_albert.tasks.question_answering.preprocessor import AlbertQuestionAnswererPreprocessor
from keras_albert.tasks.recipes import EpochRecipe
from keras_albert.text.offsets import offsets_supported
from keras_albert.text.pipeline import example_batches
from keras_albert.training.objective import Objective

SQUAD_RECIPE = EpochRecipe(**defaults.RECIPE)
_INPUTS = ("token_ids", "segment_ids", "padding_mask")


def _model_inputs(features: list[SquadFeature]) -> dict[str, np.ndarray]:
    return {name: value for name, value in feature_arrays(features).items() if name in _INPUTS}


class QuestionAnsweringTask(FinetuningTask):
    """SQuAD through the fine-tuning driver (task "squad_v1" or "squad_v2"); main metric F1."""

    default_sequence_length = defaults.SEQUENCE_LENGTH
    preprocessor_class = AlbertQuestionAnswererPreprocessor

    @classmethod
    def check_options(cls, options) -> None:
        if options.dataset == "squad_v1" and options.task_options.answerability != "null_span":
            raise ValueError(
                "`answerability` must be 'null_span' for squad_v1 (the answer-class head is "
                "SQuAD v2.0's). Received: "
                f"answerability={options.task_options.answerability!r}"
            )

    def __init__(self, options, tokenizer):
        super().__init__(options, tokenizer)
        self.main_metric = "f1"
        self.version_2 = options.dataset == "squad_v2"
        self.answerability = options.task_options.answerability
        self.threshold = defaults.NULL_SCORE_THRESHOLD if self.version_2 else None
        self.eval_json = read_squad_json(options.eval_data, "eval_data")
        self.train_examples = list(
            read_squad_examples(read_squad_json(options.train_data, "train_data"))
        )
        self.eval_examples = list(read_squad_examples(self.eval_json))
        windows = dict(
            tokenizer=tokenizer,
            sequence_length=self.sequence_length,
            doc_stride=options.task_options.doc_stride,
            max_query_length=options.task_options.max_query_length,
        )
        self.train_features = list(squad_features(self.train_examples, **windows))
        self.eval_features = list(squad_features(self.eval_examples, **windows))
        self._eval_inputs = _model_inputs(self.eval_features)
        self.test_examples = self.test_features = None
        if options.test_data:
            self.test_examples = list(read_squad_examples(options.test_data, labeled=False))
            self.test_features = list(squad_features(self.test_examples, **windows))
        self._training_targets = None

    def build_preprocessor(self, tokenizer):
        # The preprocessor follows character offsets in the graph, which some SentencePiece
        # vocabularies do not allow; the task's windows (in Python) take any.
        if not offsets_supported(tokenizer):
            return None
        return self.preprocessor_class(
            tokenizer,
            sequence_length=self.sequence_length,
            max_query_length=self.options.task_options.max_query_length,
        )

    @property
    def num_train(self) -> int:
        return len(self.train_examples)

    @property
    def num_eval(self) -> int:
        return len(self.eval_examples)

    @property
    def num_test(self) -> int | None:
        return None if self.test_examples is None else len(self.test_examples)

    def num_train_features(self) -> int:
        return len(self.train_features)

    def recipe(self):
        return SQUAD_RECIPE

    def build_model(self, backbone):
        model = AlbertQuestionAnswerer(
            backbone,
            answerability=self.answerability,
            dropout=self.options.dropout,
            initializer_range=backbone.albert_config.initializer_range,
        )
        self._training_targets = model.training_targets
        return model

    def objective(self, model):
        return Objective(**model.training_loss())

    def train_dataset(self, batch_size, seed):
        if self._training_targets is None:
            raise RuntimeError("`build_model` must be called before `train_dataset`")
        x, y = self._training_targets(feature_arrays(self.train_features))
        return example_batches((x, y), len(self.train_features), batch_size, True, seed)

    def evaluate(self, model, batch_size, output_dir=None):
        result = self._decode(model, self.eval_features, self._eval_inputs, batch_size)
        if output_dir is None:
            return evaluation_metrics(self.eval_json, result, self.threshold)
        if self.test_features is not None:
            inputs = _model_inputs(self.test_features)
            test = self._decode(model, self.test_features, inputs, batch_size)
            write_test_predictions(test, output_dir, self.version_2)
        return write_evaluation(self.eval_json, result, output_dir, self.threshold)

    def _decode(self, model, features, inputs, batch_size) -> SquadPredictions:
        """The answers of the questions of `features` (their windows), by the model's head."""
        outputs = predict_packed(model, inputs, batch_size=batch_size, verbose=0)
        decode = dict(
            n_best_size=defaults.N_BEST_SIZE,
            max_answer_length=self.options.task_options.max_answer_length,
        )
        if self.answerability == "null_span":
            return decode_null_span(
                features, outputs["start_logits"], outputs["end_logits"],
                version_2=self.version_2, null_score_threshold=self.threshold, **decode,
            )  # fmt: skip
        return decode_answer_class(features, outputs, null_score_threshold=self.threshold, **decode)

    def summary(self):
        return {
            **super().summary(),
            "num_train_windows": len(self.train_features),
            "num_eval_windows": len(self.eval_features),
            "num_test_windows": None if self.test_features is None else len(self.test_features),
            "answerability": self.answerability,
        }
