"""A classifier exported with a WordPiece tokenizer: the vocabulary is the SavedModel's asset,
and the served packing is the Python path's, with only TF Serving-safe ops."""

import numpy as np
import tensorflow as tf

from keras_albert.export import export_saved_model
from keras_albert.models import AlbertBackbone
from keras_albert.serving.saved_model import VOCABULARY_ASSET
from keras_albert.tasks.classification.model import AlbertClassifier
from keras_albert.text.tokenizer import AlbertTokenizer
from tests.export.conftest import TINY_SIZES
from tests.text.test_graph_export import PYTHON_OPS, UNSERVABLE_OPS, _graph_def, _op_types
from tests.text.text_data import DATA

VOCABULARY = DATA / "zh" / "vocab_chinese.txt"


def test_classifier_export_carries_the_vocabulary(tmp_path):
    tokenizer = AlbertTokenizer(VOCABULARY)
    sizes = dict(TINY_SIZES, vocabulary_size=tokenizer.vocabulary_size)
    model = AlbertClassifier(AlbertBackbone(**sizes), num_classes=2)
    module = export_saved_model(model, tokenizer, tmp_path, text_pair=True)

    assert sorted(path.name for path in (tmp_path / "assets").iterdir()) == [VOCABULARY_ASSET]
    assert (tmp_path / "assets" / VOCABULARY_ASSET).read_bytes() == VOCABULARY.read_bytes()
    ops = _op_types(_graph_def(tmp_path))
    assert {"WordpieceTokenizeWithOffsets", "RegexSplitWithOffsets", "NormalizeUTF8"} <= ops
    assert ops.isdisjoint(UNSERVABLE_OPS | PYTHON_OPS), ops & (UNSERVABLE_OPS | PYTHON_OPS)

    first = ["这家酒店很好！", "Crème Brûlée ＡＢＣ１２３"]
    second = ["服务一般", "房间干净，早餐不错。"]
    loaded = tf.saved_model.load(str(tmp_path))
    served = loaded.signatures["serving_default"](
        text=tf.constant(first), text_pair=tf.constant(second)
    )
    packed = module.pack(tf.constant(first), tf.constant(second))
    rows = [
        [
            tokenizer.cls_id,
            *tokenizer.encode(a),
            tokenizer.sep_id,
            *tokenizer.encode(b),
            tokenizer.sep_id,
        ]
        for a, b in zip(first, second, strict=True)
    ]
    width = max(len(row) for row in rows)
    expected = [row + [tokenizer.pad_id] * (width - len(row)) for row in rows]
    assert packed["token_ids"].numpy().tolist() == expected
    outputs = module.outputs(packed)
    np.testing.assert_allclose(served["logits"].numpy(), outputs["logits"].numpy(), atol=1e-5)
