"""Check a text-in export before you deploy it: load it as TF Serving does, answer texts.

    keras-albert probe saved_models/sst2/1 "a gorgeous movie ." "a sour movie ."
    keras-albert probe saved_models/fill_mask/1 "she was a [MASK] woman ."

Prints one JSON line: per text every output of `serving_default` by its name, as that text
sent on its own gets it (a classifier's `label`, `logits`, `probabilities`; fill-mask's
`tokens`, `texts`, ... per mask; a tagger's `words`, `tags`, ...), strings decoded and floats
at full float32 precision (fit for comparisons); with the class name the Classify API gives
it (`class`, when the export has a `serve_examples` signature with class names); then the
median batch-1 latency in milliseconds. Exits 1 with one `error: …` line (the reason a text
was refused, e.g. its length) if the export cannot be loaded or run. Exports whose
`serving_default` takes inputs other than one `text` (question answering, multiple choice, a
text pair) are refused with the names of the inputs they take.

The script knows no task type: each task type's serving module says what its answer is by the
outputs of its `serving_default`, and the script prints them as they are.

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
    """Answers each of `texts` through `serving_default`; returns the JSON-ready result."""
    tf = import_tensorflow(verbose)
    session = tf.compat.v1.Session(graph=tf.Graph())
    with session.graph.as_default():
        meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], export_dir)
    signatures = meta_graph.signature_def
    signature = signatures["serving_default"]
    if list(signature.inputs) != ["text"]:
        raise ValueError(
            f"{export_dir} is not a single-text export: its serving_default takes "
            f"{sorted(signature.inputs)}, and this probe sends one `text` per request."
        )
    fetch = {name: info.name for name, info in signature.outputs.items()}
    text_tensor = signature.inputs["text"].name

    def run(text):
        return session.run(fetch, feed_dict={text_tensor: [text.encode("utf-8")]})

    # One request per text, as a client sending one text gets its answer: not padded to the
    # other texts' lengths or mask counts.
    predictions = []
    for text in texts:
        outputs = run(text)
        prediction = {"text": text}
        prediction.update({name: _json_ready(outputs[name][0]) for name in sorted(outputs)})
        class_name = _class_name(tf, session, signatures, text)
        if class_name is not None:
            prediction["class"] = class_name
        predictions.append(prediction)
    latencies = []
    for text in texts * repeats:
        started = time.perf_counter()
        run(text)
        latencies.append((time.perf_counter() - started) * 1000)
    return {
        "export": export_dir,
        "predictions": predictions,
        "latency_ms_batch_1": round(statistics.median(latencies), 2) if latencies else None,
        "keras_albert_imported": "keras_albert" in sys.modules,
    }


def _json_ready(value):
    """One example's output as JSON values: strings decoded, float32 → Python float exactly
    (the printed value is the served one, fit for comparisons)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list):
        return [_json_ready(item) for item in value]
    return value


def _class_name(tf, session, signatures, text: str) -> str | None:
    """The class that `serve_examples` (the Classify API's signature, where the export has
    one) gives `text` the highest score."""
    signature = signatures.get("serve_examples")
    if signature is None or "classes" not in signature.outputs:
        return None
    example = tf.train.Example()
    example.features.feature["text"].bytes_list.value.append(text.encode("utf-8"))
    classes, scores = session.run(
        [signature.outputs["classes"].name, signature.outputs["scores"].name],
        feed_dict={signature.inputs["inputs"].name: [example.SerializeToString()]},
    )
    return classes[0][int(scores[0].argmax())].decode("utf-8")


def error_line(message: str) -> str:
    """The line of a TensorFlow error that says why: Python's session puts "Graph execution
    error:" and a blank line before the op's own message (an assertion's text)."""
    lines = [line for line in message.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0] == "Graph execution error:":
        return lines[1]
    return lines[0] if lines else message


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("export_dir", help="a version directory, e.g. saved_models/sst2/1")
    parser.add_argument("texts", nargs="+", help="the texts to send, one request each")
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
        print(f"error: {args.export_dir}: {error_line(message)}", file=sys.stderr)
        return 1
    print(json.dumps(result, ensure_ascii=False))  # Chinese texts readable as they were given
    return 0


if __name__ == "__main__":
    sys.exit(main())
