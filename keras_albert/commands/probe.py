"""Check a text-classifier export before you deploy it: load it as TF Serving does, classify texts.

    keras-albert probe saved_models/sst2/1 "a gorgeous movie ." "a sour movie ."

Prints one JSON line: per text the predicted `label`, its class name (`class`, when the export
has class names), the `probabilities` at full float32 precision (fit for comparisons), and the
median batch-1 latency in milliseconds. Exits 1 with one `error: …` line if the export cannot
be loaded or run.

A standalone script: it imports only TensorFlow and TensorFlow Text, never keras_albert, so it
checks that the export stands on its own (`keras-albert probe` runs this file in a fresh
interpreter). `import tensorflow_text` registers the SentencePiece
and normalization ops the graph uses (the server links them in); without it loading fails with
`Op type not registered 'SentencepieceOp'`. The SavedModel is loaded with the TF1 session
loader that `tensorflow_model_server` uses, and `serving_default` is run by its signature's
tensor names, as the server's Predict does.
"""

import argparse
import json
import os
import statistics
import sys
import time


def import_tensorflow(verbose: bool = False):
    """TensorFlow with TensorFlow Text's ops registered; its C++ start-up lines (`I0000 …
    cudart_stub`, `E0000 … cuInit` on a machine without a GPU) hidden unless `verbose`."""
    if verbose:
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers SentencepieceOp and NormalizeUTF8)

        return tf
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.stderr.flush()
    stderr, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)  # the runtime writes to file descriptor 2, not to sys.stderr
    try:
        import tensorflow as tf
        import tensorflow_text  # noqa: F401

        tf.constant(0)  # device set-up logs on first use
    finally:
        os.dup2(stderr, 2)
        os.close(stderr)
        os.close(devnull)
    tf.get_logger().setLevel("ERROR")  # e.g. the TF1 loader's deprecation notice
    return tf


def probe(export_dir: str, texts: list[str], repeats: int = 4, verbose: bool = False) -> dict:
    """Classifies `texts` through `serving_default`; returns the JSON-ready result."""
    tf = import_tensorflow(verbose)
    session = tf.compat.v1.Session(graph=tf.Graph())
    with session.graph.as_default():
        meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], export_dir)
    signatures = meta_graph.signature_def
    signature = signatures["serving_default"]
    if "text" not in signature.inputs or "probabilities" not in signature.outputs:
        raise ValueError(
            f"{export_dir} is not a single-text classifier export: its serving_default takes "
            f"{sorted(signature.inputs)} and returns {sorted(signature.outputs)}."
        )
    fetch = {name: info.name for name, info in signature.outputs.items()}
    text_tensor = signature.inputs["text"].name

    def run(batch):
        return session.run(fetch, feed_dict={text_tensor: [t.encode("utf-8") for t in batch]})

    outputs = run(texts)
    latencies = []
    for text in texts * repeats:
        started = time.perf_counter()
        run([text])
        latencies.append((time.perf_counter() - started) * 1000)
    class_names = _class_names(tf, session, signatures)
    predictions = []
    for i, text in enumerate(texts):
        label = int(outputs["label"][i])
        prediction = {"text": text, "label": label}
        if class_names:
            prediction["class"] = class_names[label]
        # float32 → Python float is exact: the printed value is the served one.
        prediction["probabilities"] = [float(p) for p in outputs["probabilities"][i]]
        predictions.append(prediction)
    return {
        "export": export_dir,
        "predictions": predictions,
        "latency_ms_batch_1": round(statistics.median(latencies), 2) if latencies else None,
        "keras_albert_imported": "keras_albert" in sys.modules,
    }


def _class_names(tf, session, signatures) -> list[str] | None:
    """The classes `serve_examples` (the Classify API's signature) names, if the export has it."""
    signature = signatures.get("serve_examples")
    if signature is None or "classes" not in signature.outputs:
        return None
    example = tf.train.Example()
    example.features.feature["text"].bytes_list.value.append(b"")
    classes = session.run(
        signature.outputs["classes"].name,
        feed_dict={signature.inputs["inputs"].name: [example.SerializeToString()]},
    )
    return [name.decode("utf-8") for name in classes[0]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("export_dir", help="a version directory, e.g. saved_models/sst2/1")
    parser.add_argument("texts", nargs="+", help="the texts to classify")
    parser.add_argument(
        "--repeats", type=int, default=4, help="batch-1 latency runs per text (0: none)"
    )
    parser.add_argument(
        "--verbose", action="store_true", help="show TensorFlow's start-up log lines"
    )
    args = parser.parse_args(argv)
    if not os.path.isfile(os.path.join(args.export_dir, "saved_model.pb")):
        print(f"error: no SavedModel at {args.export_dir} (no saved_model.pb)", file=sys.stderr)
        return 1
    if args.repeats < 0:
        parser.error(f"`repeats` must be >= 0. Received: repeats={args.repeats}")
    tf = import_tensorflow(args.verbose)
    try:
        result = probe(args.export_dir, args.texts, args.repeats, args.verbose)
    except (ValueError, tf.errors.OpError) as error:
        message = getattr(error, "message", None) or str(error)
        print(f"error: {args.export_dir}: {message.splitlines()[0]}", file=sys.stderr)
        return 1
    print(json.dumps(result, ensure_ascii=False))  # Chinese texts readable as they were given
    return 0


if __name__ == "__main__":
    sys.exit(main())
