"""The text-embedding task type's own fine-tuning options (`TextEmbeddingOptions`): the columns
of a file of sentence pairs (`PairLayout`; STS-B's are `STSB`), the embedder's pooling and the
in-batch loss's scale."""

from __future__ import annotations

import dataclasses

from keras_albert.tasks.text_embedding import defaults
from keras_albert.validation import require_given, require_number, require_one_of


@dataclasses.dataclass(frozen=True)
class PairLayout:
    """Where a file keeps its pairs.

    Args:
        name: the data set's name (in messages and the summary).
        text_columns: the two texts: header names, or 0-based field indices without a header.
        score_column: the similarity score; None: the file has none.
        max_score: a score divided by it lies in 0..1 (the cosine loss's target).
        delimiter: the field separator; the default tab becomes a comma for a `.csv` file.
        header: whether the first line names the columns.
    """

    name: str
    text_columns: tuple[str | int, str | int]
    score_column: str | int | None
    max_score: float = defaults.MAX_SCORE
    delimiter: str = "\t"
    header: bool = True


STSB = PairLayout(
    "stsb_embedding", ("sentence1", "sentence2"), "score", max_score=defaults.STSB_MAX_SCORE
)


@dataclasses.dataclass(frozen=True)
class TextEmbeddingOptions:
    """A text-embedding fine-tuning's own options (`--dataset stsb_embedding` or
    `sentence_pairs`).

    Args:
        pair_columns: sentence_pairs: the two text columns (header names, or 0-based indices
            with `--no-pair-header`).
        score_column: sentence_pairs: the similarity score column. The eval file must have it
            (the metrics correlate the cosine with it); a training file with it trains the
            cosine loss on its scores, one whose header lacks it the in-batch negatives loss
            on its pairs.
        max_score: sentence_pairs: scores are divided by it, to lie in 0..1 (STS-B: 5).
        pair_delimiter: sentence_pairs: the field separator (a `.csv` file, given the default
            tab: a comma); tab-separated files are read without quoting, as GLUE's.
        pair_header: sentence_pairs: the first row names the columns.
        pooling: how the embedder pools its token vectors: mean, cls or max.
        normalize_embeddings: the embedder's outputs have unit length (training and the metrics
            use cosines, which it does not change).
        mnrl_scale: the in-batch negatives loss's similarity scale.
    """

    pair_columns: tuple[str, ...] | None = None
    score_column: str | None = None
    max_score: float = defaults.MAX_SCORE
    pair_delimiter: str = "\t"
    pair_header: bool = True
    pooling: str = dataclasses.field(
        default=defaults.POOLING, metadata={"choices": defaults.POOLING_MODES}
    )
    normalize_embeddings: bool = defaults.NORMALIZE
    mnrl_scale: float = defaults.MNRL_SCALE

    def __post_init__(self):
        require_one_of("pair_header", self.pair_header, (True, False))
        require_one_of("normalize_embeddings", self.normalize_embeddings, (True, False))
        require_one_of("pooling", self.pooling, defaults.POOLING_MODES)
        require_number("max_score", self.max_score, 0, exclusive_minimum=True)
        require_number("mnrl_scale", self.mnrl_scale, 0, exclusive_minimum=True)

    def pair_layout(self, dataset: str) -> PairLayout:
        """Where `dataset`'s files keep their pairs: STS-B's columns, or these for
        "sentence_pairs"."""
        # `--dataset` as given: case, "-" and "_" do not matter (the registry's rule).
        if dataset.lower().replace("-", "").replace("_", "") != "sentencepairs":
            return STSB
        require_given("pair_columns", self.pair_columns, "for sentence_pairs (two columns)")
        require_given("score_column", self.score_column, "for sentence_pairs (the eval scores)")
        columns = (*self.pair_columns, self.score_column)
        if len(self.pair_columns) != 2:
            raise ValueError(
                "`pair_columns` must name two columns. Received: "
                f"pair_columns={self.pair_columns!r}"
            )
        if not self.pair_header and not all(str(column).isdigit() for column in columns):
            raise ValueError(
                "`pair_columns` and `score_column` must be 0-based indices without a header. "
                f"Received: pair_columns={self.pair_columns!r}, score_column={self.score_column!r}"
            )
        if not self.pair_header:
            columns = tuple(int(column) for column in columns)
        return PairLayout(
            "sentence_pairs",
            columns[:2],
            columns[2],
            max_score=self.max_score,
            delimiter=self.pair_delimiter,
            header=self.pair_header,
        )
