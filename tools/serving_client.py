"""Send texts to an ALBERT model served by tensorflow_model_server (REST or gRPC).

Examples:
  python tools/serving_client.py --model sst2 "a charming and often affecting journey"
  python tools/serving_client.py --model mrpc --pair "He said it." "It was said by him."
  python tools/serving_client.py --model sst2 --protocol grpc --format inputs "great film"
"""

import argparse
import dataclasses
import os
from typing import Literal

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from keras_albert.cli import add_options, options_from_args  # noqa: E402
from keras_albert.export.client import PROTOCOLS, send_texts  # noqa: E402
from keras_albert.export.requests import REST_FORMATS  # noqa: E402


@dataclasses.dataclass(frozen=True)
class ClientOptions:
    """One request.

    Args:
        texts: the texts; with --pair, text and pair alternate.
        model: the model's name in models.config.
        host: the server's host.
        protocol: REST or gRPC.
        format: the REST body's layout (instances: row format, inputs: columnar).
        rest_port: the server's --rest_api_port.
        grpc_port: the server's --port.
        version: a model version; default: the server's latest.
        pair: the texts are (text, text_pair) pairs.
    """

    texts: tuple[str, ...] = dataclasses.field(metadata={"flag": False})
    model: str = "albert"
    host: str = "localhost"
    protocol: Literal[PROTOCOLS] = "rest"
    format: Literal[REST_FORMATS] = "instances"
    rest_port: int = 8501
    grpc_port: int = 8500
    version: int | None = None
    pair: bool = False


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[2:]),
    )
    parser.add_argument("texts", nargs="+", help="texts; with --pair, text and pair alternate")
    add_options(parser, ClientOptions)
    return parser


def main() -> None:
    parser = build_parser()
    args = parser.parse_args()
    options = options_from_args(args, ClientOptions, texts=tuple(args.texts))
    if options.pair and len(options.texts) % 2:
        parser.error(f"--pair needs an even number of texts. Received: {len(options.texts)}")
    texts = options.texts
    texts, pairs = (texts[0::2], texts[1::2]) if options.pair else (texts, None)
    outputs = send_texts(
        list(texts),
        pairs and list(pairs),
        model_name=options.model,
        host=options.host,
        protocol=options.protocol,
        rest_format=options.format,
        rest_port=options.rest_port,
        grpc_port=options.grpc_port,
        version=options.version,
    )
    for name, value in sorted(outputs.items()):
        print(f"{name}: {value.tolist()}")


if __name__ == "__main__":
    main()
