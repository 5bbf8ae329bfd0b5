"""Run in a fresh process by test_tfhub_export.py: a TF-Hub user's code over our export.

`python tfhub_consumer.py EXPORT_DIR INPUTS.json OUTPUTS.npz` builds, with tf_keras (through
`TF_USE_LEGACY_KERAS=1`, set here before TensorFlow is imported, so the test process keeps
Keras 3), `hub.KerasLayer(preprocessor)` + `hub.KerasLayer(encoder, trainable=True)`, writes
their outputs on the sentences, then fine-tunes a Dense head on top with three `model.fit`
steps and writes the loss before and after and how far the encoder's weights moved.
Imports neither keras_albert nor Keras 3.
"""

import json
import os
import sys

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_hub as hub  # noqa: E402
import tensorflow_text  # noqa: E402, F401  the preprocessor's ops, as for Model Garden's own
import tf_keras  # noqa: E402


def main(export_dir: str, inputs_path: str, outputs_path: str) -> None:
    with open(inputs_path, encoding="utf-8") as file:
        data = json.load(file)
    sentences = tf.constant(data["sentences"])
    labels = np.array(data["labels"], dtype="int32")
    assert tf.keras.Model is tf_keras.Model, "TF_USE_LEGACY_KERAS did not select tf_keras"
    tf_keras.utils.set_random_seed(0)  # the head's initial weights and the dropout masks

    preprocessor = hub.KerasLayer(os.path.join(export_dir, "preprocessor"))
    encoder = hub.KerasLayer(os.path.join(export_dir, "encoder"), trainable=True)
    text = tf_keras.Input(shape=(), dtype=tf.string, name="text")
    encoder_inputs = preprocessor(text)
    outputs = encoder(encoder_inputs)
    embedder = tf_keras.Model(text, {**outputs, **encoder_inputs})
    results = {
        name: np.asarray(value)
        for name, value in embedder(sentences, training=False).items()
        if name != "encoder_outputs"
    }
    inference = embedder(sentences, training=False)
    results["encoder_outputs"] = np.stack([np.asarray(x) for x in inference["encoder_outputs"]])
    trained = embedder(sentences, training=True)
    results["dropout_difference"] = np.abs(
        np.asarray(trained["pooled_output"]) - results["pooled_output"]
    ).max()

    logits = tf_keras.layers.Dense(2, name="classifier")(outputs["pooled_output"])
    classifier = tf_keras.Model(text, logits)
    classifier.compile(
        optimizer=tf_keras.optimizers.Adam(learning_rate=1e-3),
        loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    before = [np.asarray(weight) for weight in encoder.trainable_weights]
    results["loss_before"] = classifier.evaluate(sentences, labels, verbose=0)
    classifier.fit(sentences, labels, batch_size=len(labels), epochs=3, verbose=0)
    results["loss_after"] = classifier.evaluate(sentences, labels, verbose=0)
    after = [np.asarray(weight) for weight in encoder.trainable_weights]
    results["num_trainable_weights"] = len(after)
    results["weight_change"] = max(np.abs(a - b).max() for a, b in zip(after, before, strict=True))
    np.savez(outputs_path, **results)


if __name__ == "__main__":
    main(*sys.argv[1:])
