"""`fill_mask(model, tokenizer, texts)` (`keras_albert.fill_mask`): the Python API of fill-mask,
as Hugging Face's `pipeline("fill-mask")`.

    model = keras_albert.load_checkpoint("albert-base-v2/", model="fill_mask")
    tokenizer = keras_albert.AlbertTokenizer("albert-base-v2/spiece.model")
    keras_albert.fill_mask(model, tokenizer, ["The capital of France is [MASK]."])[0][0][0]
    # {"token_id": ..., "token": "▁paris", "probability": ...,
    #  "text": "The capital of France is paris."}

Each text is tokenized in Python (`features.MaskedTextEncoder`), packed as `[CLS] text [SEP]`,
and the masked LM gives a softmax over the vocabulary at every mask (float32); the served
SavedModel (`serving.py`) does the same in the graph and answers the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
import numpy as np

from keras_albert.serving.saved_model import checked_text_inputs
from keras_albert.tasks.fill_mask import defaults
from keras_albert.tasks.fill_mask.model import masked_lm_from
from keras_albert.tasks.fill_mask.preprocessor import AlbertMaskedLMPreprocessor
from keras_albert.text.tokenizer import AlbertTokenizer
from keras_albert.validation import require_positive_int


def top_k_predictions(model, inputs: dict, top_k: int) -> tuple[np.ndarray, np.ndarray]:
    """The `top_k` most probable tokens at each of `inputs["mask_positions"]`: ids (int32) and
    probabilities (float32), both `(batch, num_masked, top_k)`, most probable first."""
    logits = model(inputs, training=False)  # (batch, num_masked, V), float32
    probabilities, ids = keras.ops.top_k(keras.ops.softmax(logits, axis=-1), top_k)
    return keras.ops.convert_to_numpy(ids), keras.ops.convert_to_numpy(probabilities)


def check_top_k(top_k, vocabulary_size: int) -> None:
    """`top_k` is a number of tokens a vocabulary of `vocabulary_size` has."""
    require_positive_int("top_k", top_k)
    if top_k > vocabulary_size:
        raise ValueError(
            f"`top_k` must be at most the vocabulary_size={vocabulary_size}. "
            f"Received: top_k={top_k}"
        )


def fill_mask(
    model,
    tokenizer: AlbertTokenizer,
    texts: Sequence[str | bytes],
    top_k: int = defaults.TOP_K,
    max_sequence_length: int | None = None,
    batch_size: int = defaults.BATCH_SIZE,
) -> list[list[list[dict]]]:
    """The `top_k` most probable tokens for every mask of every text.

    Args:
        model: an `AlbertMaskedLM`, or an `AlbertPretrainer` (its masked-LM head is used).
        tokenizer: the model's `AlbertTokenizer`.
        texts: texts holding mask tokens ("[MASK]"); a text without one gets no masks (`[]`),
            as the served fill-mask answers it (`num_masks` 0): one text that is not what
            was meant does not fail the others.
        top_k: tokens per mask.
        max_sequence_length: the longest packed text ([CLS] and [SEP] included); by default
            the model's `max_sequence_length`. A longer text is an error (never truncated: a
            mask could be cut off).
        batch_size: texts per model call.

    Returns:
        For each text, for each of its masks in order, `top_k` dicts, most probable first:
        `token_id` (int), `token` (the piece, e.g. "▁blue"), `probability` (float, the
        softmax over the vocabulary) and `text` (the text with this mask filled by the token
        and its other masks left as they are: `MaskedTextEncoder.filled_text`).
    """
    model = masked_lm_from(model)
    config = model.backbone.albert_config
    # The checks of every string-in export: the tokenizer's vocabulary is the model's, and the
    # length at most the model's.
    max_sequence_length = checked_text_inputs(tokenizer, config, max_sequence_length)
    check_top_k(top_k, config.vocabulary_size)
    require_positive_int("batch_size", batch_size)
    if isinstance(texts, (str, bytes)):
        raise TypeError(
            f"`texts` must be a sequence of texts, not a single text. Received: texts={texts!r}"
        )
    if not texts:
        return []
    # The preprocessor's Python path: the ids `predict` on texts and the SavedModel give.
    preprocessor = AlbertMaskedLMPreprocessor(
        tokenizer, sequence_length=max_sequence_length, mask_selection_length=None
    )
    inputs = preprocessor.pack_texts_python(texts)  # every text checked before the model runs
    num_masks = np.sum(
        (inputs["token_ids"] == tokenizer.mask_id) & (inputs["padding_mask"] != 0), 1
    )
    encoder = preprocessor.encoder
    results = []
    for start in range(0, len(texts), batch_size):
        batch = slice(start, start + batch_size)
        # The batch's own longest text and most masks (the arrays are padded to all texts').
        length = int(inputs["padding_mask"][batch].sum(axis=1).max())
        most = int(num_masks[batch].max())
        rows = {name: value[batch, : most if name == "mask_positions" else length]
                for name, value in inputs.items()}  # fmt: skip
        ids, probabilities = top_k_predictions(model, rows, top_k)
        for offset in range(len(ids)):
            text = texts[start + offset]
            masks = []
            for mask_index in range(num_masks[start + offset]):
                candidates = []
                for token_id, probability in zip(
                    ids[offset, mask_index], probabilities[offset, mask_index], strict=True
                ):
                    piece = tokenizer.id_to_piece(int(token_id))
                    candidates.append(
                        {
                            "token_id": int(token_id),
                            "token": piece,
                            "probability": float(probability),
                            "text": encoder.filled_text(text, mask_index, piece),
                        }
                    )
                masks.append(candidates)
            results.append(masks)
    return results
