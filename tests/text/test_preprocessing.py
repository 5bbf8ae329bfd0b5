"""`preprocessed_dataset`: raw rows in batches through a preprocessor, in order for `predict`
and `evaluate`, shuffled anew every epoch for `fit` (as Keras shuffles arrays)."""

import numpy as np
import tensorflow as tf

from keras_albert.text.preprocessing import preprocessed_dataset


def rows_of(dataset) -> list[int]:
    return [int(value) for batch in dataset for value in batch[0].numpy()]


def test_rows_keep_their_order_unless_shuffled_and_are_shuffled_anew_every_epoch():
    tf.random.set_seed(0)
    texts = [f"text {i}" for i in range(64)]
    labels = np.arange(64)

    def preprocessor(x, y=None, sample_weight=None):
        return y, x  # the labels say each row's place

    in_order = preprocessed_dataset(preprocessor, texts, labels, batch_size=10)
    assert rows_of(in_order) == list(range(64)) == rows_of(in_order)
    shuffled = preprocessed_dataset(preprocessor, texts, labels, batch_size=10, shuffle=True)
    first, second = rows_of(shuffled), rows_of(shuffled)
    assert sorted(first) == sorted(second) == list(range(64))  # every row once per epoch
    assert first != list(range(64)) and second != first
