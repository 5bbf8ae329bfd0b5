"""Send texts to an ALBERT model served by tensorflow_model_server (REST or gRPC).

Examples:
  python tools/serving_client.py --model sst2 "a charming and often affecting journey"
  python tools/serving_client.py --model mrpc --pair "He said it." "It was said by him."
  python tools/serving_client.py --model sst2 --protocol grpc --format inputs "great film"
"""

import argparse
import dataclasses
import os
import urllib.error
from typing import Literal

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from keras_albert.cli import (  # noqa: E402
    ToolError,
    add_options,
    options_from_args,
    run_tool,
    with_debug_help,
)
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
        epilog=with_debug_help("\n".join(__doc__.splitlines()[2:])),
    )
    parser.add_argument("texts", nargs="+", help="texts; with --pair, text and pair alternate")
    add_options(parser, ClientOptions)
    return parser


START_SERVER = (
    "start one with `tensorflow_model_server --port=8500 --rest_api_port=8501 "
    "--model_config_file=$PWD/saved_models/models.config` (see docs/serving.md)"
)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    options = options_from_args(args, ClientOptions, texts=tuple(args.texts))
    if options.pair and len(options.texts) % 2:
        parser.error(f"--pair needs an even number of texts. Received: {len(options.texts)}")
    texts = options.texts
    texts, pairs = (texts[0::2], texts[1::2]) if options.pair else (texts, None)
    port = options.grpc_port if options.protocol == "grpc" else options.rest_port
    address = f"{options.host}:{port} ({options.protocol})"
    try:
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
    except urllib.error.HTTPError as error:  # a server answered, with an error
        detail = error.read().decode("utf-8", errors="replace")
        raise ToolError(f"the server at {address} answered {error.code}: {detail}") from None
    except (urllib.error.URLError, ConnectionError) as error:
        raise ToolError(f"no server at {address}: {START_SERVER}") from error
    except Exception as error:
        if not _is_unavailable_rpc(error):
            raise
        raise ToolError(f"no server at {address}: {START_SERVER}") from error
    for name, value in sorted(outputs.items()):
        print(f"{name}: {value.tolist()}")
    return 0


def _is_unavailable_rpc(error: Exception) -> bool:
    """A gRPC call that found no server (grpc's `_InactiveRpcError` with UNAVAILABLE)."""
    code = getattr(error, "code", None)
    if not callable(code):
        return False
    import grpc

    return isinstance(error, grpc.RpcError) and code() == grpc.StatusCode.UNAVAILABLE


if __name__ == "__main__":
    run_tool(main)
