"""`AlbertMaskedLMPreprocessor`: texts holding "[MASK]" to a masked LM's inputs."""

from __future__ import annotations

import keras

from keras_albert._startup import tensorflow_installed
from keras_albert.tasks.fill_mask import defaults
from keras_albert.tasks.fill_mask.python_features import PythonMaskedTextEncoder, pack
from keras_albert.text.preprocessing import TokenizerPreprocessor
from keras_albert.text.python_tokenizer import PythonTokenizer
from keras_albert.validation import require_int


@keras.saving.register_keras_serializable(package="keras_albert")
class AlbertMaskedLMPreprocessor(TokenizerPreprocessor):
    """Texts holding the mask token ("[MASK]") to `token_ids`, `segment_ids`, `padding_mask`
    and `mask_positions`: `[CLS] text [SEP]` with the mask id at every mask (the rules of
    `keras_albert.tasks.fill_mask.features`), padded to the batch's longest text, and the
    positions of the masks, padded with 0 (the [CLS] position: its logits are padding) to
    `mask_selection_length`. An `AlbertMaskedLM` that carries one (`from_preset`) `predict`s
    on texts: `(batch, mask_selection_length, vocabulary_size)` logits, row m of a text at its
    m-th mask. A text without a mask is no error: it has no masks (the served fill-mask's
    `num_masks` 0, `fill_mask`'s `[]`). A text longer than `sequence_length` tokens with [CLS]
    and [SEP], or with more masks than `mask_selection_length`, is an error (never truncated: a
    mask could be cut off).

    Called as `preprocessor(x, y=None, sample_weight=None)` (labels and weights pass through):
    on a `(batch,)` string tensor (in `tf.data`) it runs the graph of the string-in SavedModel
    (`features.pack_texts_graph`, `mask_positions_graph`); on a list of texts it runs their
    Python twins (`PythonMaskedTextEncoder.encode`, `pack`), which give the same ids and need
    no TensorFlow: `predict` on JAX or PyTorch without TensorFlow takes texts too.
    `keras_albert.fill_mask` is this preprocessor's Python path and the model, with the top
    tokens of every mask. `fit` takes token ids (`preprocessor=None`): no dynamic masking here.

    Args:
        tokenizer: the model's `AlbertTokenizer` (or, without TensorFlow, `PythonTokenizer`).
        sequence_length: the longest packed text ([CLS] and [SEP] included).
        mask_selection_length: the masks a text may hold (the width of `mask_positions`); None
            pads to the batch's most masks, as the SavedModel does (then `predict`'s batches
            differ in width and cannot be joined: for one batch at a time, as `fill_mask`).

    Example:
    >>> from keras_albert import AlbertMaskedLMPreprocessor, AlbertTokenizer
    >>> tokenizer = AlbertTokenizer("tests/data/30k-clean.model")
    >>> preprocessor = AlbertMaskedLMPreprocessor(tokenizer, mask_selection_length=2)
    >>> preprocessor(["the sky is [MASK] ."])["mask_positions"].tolist()
    [[4, 0]]
    """

    PYTHON_PATH = True

    def __init__(
        self,
        tokenizer: PythonTokenizer | None = None,
        sequence_length=512,
        mask_selection_length=defaults.MASK_SELECTION_LENGTH,
        **kwargs,
    ):
        require_int("mask_selection_length", mask_selection_length, minimum=1, optional=True)
        self.mask_selection_length = mask_selection_length
        super().__init__(tokenizer, sequence_length, **kwargs)

    def _set_tokenizer(self, tokenizer: PythonTokenizer | None) -> None:
        super()._set_tokenizer(tokenizer)
        self._encoder = None
        if tokenizer is None:
            return
        if hasattr(tokenizer, "packer"):  # an `AlbertTokenizer`: the graph path too
            from keras_albert.tasks.fill_mask.features import MaskedTextEncoder

            self._encoder = MaskedTextEncoder(tokenizer)
        else:
            self._encoder = PythonMaskedTextEncoder(tokenizer)

    @property
    def encoder(self) -> PythonMaskedTextEncoder:
        """The masked-text encoder (`MaskedTextEncoder` with TensorFlow), of the tokenizer."""
        self.tokenizer  # noqa: B018 (the error of a preprocessor without its tokenizer yet)
        return self._encoder

    def call(self, x, y=None, sample_weight=None):
        inputs = self.pack_texts(x) if _is_tensor(x) else self.pack_texts_python(x)
        return keras.utils.pack_x_y_sample_weight(inputs, y, sample_weight)

    def pack_texts(self, texts) -> dict:
        """The model inputs of a `(batch,)` string tensor, in the graph."""
        from keras_albert.tasks.fill_mask.features import mask_positions_graph, pack_texts_graph

        inputs = pack_texts_graph(self.encoder, texts, self.sequence_length, type(self).__name__)
        inputs["mask_positions"], _ = mask_positions_graph(
            inputs["token_ids"],
            inputs["padding_mask"],
            self.encoder.mask_id,
            self.mask_selection_length,
        )
        return inputs

    def pack_texts_python(self, texts) -> dict:
        """The model inputs (NumPy arrays) of a sequence of texts (`str` or UTF-8 `bytes`)."""
        if isinstance(texts, (str, bytes)):
            raise TypeError(
                f"`texts` must be a sequence of texts, not a single text. Received: texts={texts!r}"
            )
        texts = list(texts)
        if not texts:
            raise ValueError("`texts` must hold at least one text. Received: texts=[]")
        rows = []
        for index, text in enumerate(texts):
            ids = self.encoder.encode(text)
            if len(ids) + 2 > self.sequence_length:
                raise ValueError(
                    f"`texts` must each be at most max_sequence_length={self.sequence_length} "
                    f"tokens with [CLS] and [SEP]. Received: texts[{index}] of {len(ids) + 2} "
                    "tokens"
                )
            rows.append(ids)
        return pack(rows, self.tokenizer, self.mask_selection_length)

    def get_config(self):
        config = super().get_config()
        config["mask_selection_length"] = self.mask_selection_length
        return config


def _is_tensor(x) -> bool:
    # A TensorFlow tensor (in `tf.data`, or given): the graph path. A list or a NumPy array of
    # texts: the Python path.
    if not tensorflow_installed():
        return False
    import tensorflow as tf

    return tf.is_tensor(x)
