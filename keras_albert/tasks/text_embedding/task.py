"""Text-embedding fine-tuning as a `FinetuningTask`: sentence pairs → an `AlbertTextEmbedder`
→ the correlation of the pairs' cosine similarity with their scores.

The data sets (`--dataset`): "stsb_embedding", GLUE STS-B's TSV files (`sentence1`, `sentence2`,
`score` 0-5, divided by 5), and "sentence_pairs", any CSV/TSV of two text columns and a score
column (`TextEmbeddingOptions`). The loss follows the training file: scored pairs train
`CosineSimilarityLoss` (the cosine regressed on the score: STS-B's graded scores are the signal;
in-batch negatives on pairs above a threshold would drop the grades and take the batch's other
pairs, often on the same topic, as negatives), a file whose header has no score column
`MultipleNegativesRankingLoss` (in-batch negatives) on its pairs. The eval file is scored:
`evaluate` gives Spearman (the main metric, as sentence-transformers' STS evaluator reports)
and Pearson of the cosine against the scores, and with `output_dir` writes
`eval_predictions.tsv` (`index`, `cosine`, `score`) and, with `test_data`,
`test_predictions.tsv` (`index`, `cosine`); `index` is the pair's among the file's, from 0.
"""

from __future__ import annotations

import os

import keras
import numpy as np
from scipy import stats

from keras_albert.tasks.finetuning_task import FinetuningTask, predict_packed
from keras_albert.tasks.recipes import EpochRecipe
from keras_albert.tasks.text_embedding import defaults
from keras_albert.tasks.text_embedding.losses import (
    CosineSimilarityLoss,
    MultipleNegativesRankingLoss,
    PairObjective,
)
from keras_albert.tasks.text_embedding.model import AlbertTextEmbedder
from keras_albert.tasks.text_embedding.preprocessor import AlbertTextEmbedderPreprocessor
from keras_albert.tasks.text_embedding.reader import Pairs, pair_dataset, read_pairs, text_dataset
from keras_albert.text.files import write_text_atomically


def correlations(scores: np.ndarray, cosines: np.ndarray) -> dict[str, float]:
    """Spearman and Pearson correlation of `cosines` with `scores`."""
    if np.ptp(cosines) == 0 or np.ptp(scores) == 0:
        # Undefined for a constant input (SciPy warns and answers nan): no correlation.
        return {"spearman": 0.0, "pearson": 0.0}
    return {
        "spearman": float(stats.spearmanr(scores, cosines).statistic),
        "pearson": float(stats.pearsonr(scores, cosines).statistic),
    }


class TextEmbeddingTask(FinetuningTask):
    """ "stsb_embedding" or "sentence_pairs" (see the module docstring); the main metric is
    Spearman's correlation of the cosine with the eval scores."""

    default_sequence_length = defaults.SEQUENCE_LENGTH
    preprocessor_class = AlbertTextEmbedderPreprocessor

    @classmethod
    def check_options(cls, options) -> None:
        options.task_options.pair_layout(options.dataset)

    def __init__(self, options, tokenizer):
        super().__init__(options, tokenizer)
        self.main_metric = "spearman"
        self.layout = options.task_options.pair_layout(options.dataset)
        read = dict(layout=self.layout, skip_invalid=options.skip_invalid)
        self.train = read_pairs(options.train_data, name="train_data", **read)
        self.evaluation = read_pairs(options.eval_data, scored=True, name="eval_data", **read)
        self.test = None
        if options.test_data:
            self.test = read_pairs(options.test_data, scored=False, name="test_data", **read)
        for pairs in (self.train, self.evaluation, self.test):
            if pairs is not None and pairs.num_skipped:
                print(
                    f"keras_albert: skipped {pairs.num_skipped} invalid rows of {pairs.path}; "
                    f"first: {pairs.skipped[0]}"
                )
        if self.train.scores is not None:
            self.loss_name, self.loss = "cosine", CosineSimilarityLoss()
        else:
            self.loss_name = "multiple_negatives_ranking"
            self.loss = MultipleNegativesRankingLoss(options.task_options.mnrl_scale)
        self._eval_inputs = None

    def recipe(self):
        return EpochRecipe(**defaults.RECIPES[self.loss_name])

    def build_model(self, backbone):
        # No head, so no head dropout (`options.dropout`): the backbone's own rates apply.
        task_options = self.options.task_options
        return AlbertTextEmbedder(
            backbone, pooling=task_options.pooling, normalize=task_options.normalize_embeddings
        )

    def objective(self, model):
        return PairObjective(self.loss)

    def compile(self, model, optimizer):
        # The optimizer only: the losses read a pair a row, which `model.fit` on the embedder's
        # one text a row cannot give (the driver trains through `objective`).
        model.compile(optimizer=optimizer)

    def train_dataset(self, batch_size, seed):
        return pair_dataset(self.train, self.preprocessor, batch_size, seed)

    def evaluate(self, model, batch_size, output_dir=None):
        if self._eval_inputs is None:  # packed once, not at every evaluation
            self._eval_inputs = self._inputs(self.evaluation, batch_size)
        cosines = self._cosines(model, self._eval_inputs)
        metrics = correlations(self.evaluation.scores, cosines)
        if output_dir is not None:
            path = os.path.join(output_dir, "eval_predictions.tsv")
            _write(path, cosines, self.evaluation.scores)
            if self.test is not None:
                test = self._cosines(model, self._inputs(self.test, batch_size))
                _write(os.path.join(output_dir, "test_predictions.tsv"), test)
        return metrics

    def _inputs(self, pairs: Pairs, batch_size: int) -> tuple:
        return tuple(
            text_dataset(texts, self.preprocessor, batch_size)
            for texts in (pairs.first, pairs.second)
        )

    def _cosines(self, model: keras.Model, inputs: tuple) -> np.ndarray:
        """The cosine similarity of each pair's embeddings, in float64."""
        first, second = (
            np.asarray(predict_packed(model, texts, verbose=0), dtype=np.float64)
            for texts in inputs
        )
        norms = np.linalg.norm(first, axis=-1) * np.linalg.norm(second, axis=-1)
        return np.sum(first * second, axis=-1) / np.maximum(norms, 1e-12)

    def summary(self):
        return {
            **super().summary(),
            "loss": self.loss_name,
            "num_skipped": {
                "train": self.train.num_skipped,
                "eval": self.evaluation.num_skipped,
                "test": self.test.num_skipped if self.test is not None else None,
            },
        }


def _write(path: str, cosines: np.ndarray, scores: np.ndarray | None = None) -> None:
    """`index`, `cosine` (and `score`, as the loss saw it: in 0..1) per pair."""
    lines = ["index\tcosine" + ("\tscore" if scores is not None else "")]
    for index, cosine in enumerate(cosines):
        row = [str(index), repr(float(cosine))]
        if scores is not None:
            row.append(repr(float(scores[index])))
        lines.append("\t".join(row))
    write_text_atomically(path, "\n".join(lines) + "\n")
