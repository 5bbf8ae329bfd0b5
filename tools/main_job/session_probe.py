"""Classifies texts with an exported SavedModel the way TF Serving runs it. A standalone script.

    python tools/main_job/session_probe.py EXPORT_DIR "a text" ["another" ...]

The main job imports this module and runs its file (`python -I session_probe.__file__`) in a
fresh process: moving it breaks the job's import, not a path.

It imports only TensorFlow and TensorFlow Text (which registers the ops the server links
in), never keras_albert: it is the proof that an export stands on its own. The SavedModel
is loaded with the TF1 session loader that tensorflow_model_server uses, and
`serving_default` runs by its signature's tensor names, as the server's Predict does. Prints
one JSON line: the predictions, the median batch-1 latency and what was imported.
"""

import json
import statistics
import sys
import time

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the SentencePiece and normalization ops)


def main() -> None:
    export_dir, texts = sys.argv[1], sys.argv[2:]
    session = tf.compat.v1.Session(graph=tf.Graph())
    with session.graph.as_default():
        meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], export_dir)
    signature = meta_graph.signature_def["serving_default"]
    fetch = {name: info.name for name, info in signature.outputs.items()}
    text_tensor = signature.inputs["text"].name

    def run(batch):
        return session.run(fetch, feed_dict={text_tensor: [t.encode("utf-8") for t in batch]})

    outputs = run(texts)
    latencies = []
    for text in texts * 4:
        started = time.perf_counter()
        run([text])
        latencies.append((time.perf_counter() - started) * 1000)
    predictions = [
        {
            "text": text,
            "label": int(outputs["label"][i]),
            "probabilities": [round(float(p), 4) for p in outputs["probabilities"][i]],
        }
        for i, text in enumerate(texts)
    ]
    print(
        json.dumps(
            {
                "predictions": predictions,
                "latency_ms_batch_1": round(statistics.median(latencies), 2),
                "keras_albert_imported": "keras_albert" in sys.modules,
            }
        )
    )


if __name__ == "__main__":
    main()
