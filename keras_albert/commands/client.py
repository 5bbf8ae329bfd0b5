"""Send texts to an ALBERT model served by tensorflow_model_server (REST or gRPC).

Examples:
  keras-albert client --model sst2 "a charming and often affecting journey"
  keras-albert client --model mrpc --pair "He said it." "It was said by him."
  keras-albert client --model sst2 --protocol grpc --format inputs "great film"
  keras-albert client --model squad --fields question,context "Who?" "Jane wrote it."
  keras-albert client --model race --fields article,question,options,options \
      "Tom bought apples." "What did Tom buy?" "apples" "pears"
  keras-albert client --model ner --fields text "Jane lives in Bath"
"""

import argparse
import dataclasses
import urllib.error
from typing import Literal

from keras_albert.cli import (
    ToolError,
    add_options,
    options_from_args,
    with_debug_help,
)
from keras_albert.export.client import PROTOCOLS, send_inputs, send_texts
from keras_albert.serving.requests import REST_FORMATS


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
        fields: comma-separated input names of serving_default (a task model's, e.g.
            question,context); the texts fill them example by example, and a name given
            several times collects a list (RACE's options).
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
    fields: str | None = None


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
    "--model_config_file=$PWD/saved_models/models.config` (see docs/guides/serving.md)"
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
    if options.fields is not None:
        if options.pair:
            parser.error("--fields and --pair exclude each other")
        columns = fields_columns(options.fields, options.texts)
        if isinstance(columns, str):
            parser.error(columns)
    # Where and how either kind of request goes.
    server = dict(
        model_name=options.model,
        host=options.host,
        protocol=options.protocol,
        rest_format=options.format,
        rest_port=options.rest_port,
        grpc_port=options.grpc_port,
        version=options.version,
    )
    try:
        if options.fields is not None:
            outputs = send_inputs(columns, **server)
        else:
            outputs = send_texts(list(texts), pairs and list(pairs), **server)
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


def fields_columns(fields: str, texts) -> dict | str:
    """The columns of `--fields` filled by `texts`, or the error message."""
    names = [name.strip() for name in fields.split(",")]
    if not all(names):
        return f"--fields must be comma-separated input names. Received: --fields {fields!r}"
    if len(texts) % len(names):
        return f"--fields {fields} needs a multiple of {len(names)} texts. Received: {len(texts)}"
    columns = {name: [] for name in names}
    for start in range(0, len(texts), len(names)):
        example = {}
        for name, text in zip(names, texts[start : start + len(names)], strict=True):
            example.setdefault(name, []).append(text)
        for name, values in example.items():
            columns[name].append(values if names.count(name) > 1 else values[0])
    return columns


def _is_unavailable_rpc(error: Exception) -> bool:
    """A gRPC call that found no server (grpc's `_InactiveRpcError` with UNAVAILABLE)."""
    code = getattr(error, "code", None)
    if not callable(code):
        return False
    import grpc

    return isinstance(error, grpc.RpcError) and code() == grpc.StatusCode.UNAVAILABLE
