"""Convert an ALBERT checkpoint (any load_checkpoint source) → .keras, .weights.h5, HF, keras-hub.

Examples:
  keras-albert convert albert_base/ albert_base.keras
  keras-albert convert hf_albert_dir/ ours.keras --model backbone
  keras-albert convert ours.keras hf_out_dir/ --to hf
  keras-albert convert runs/sst2/best.keras sst2_preset/ --to keras_hub
  keras-albert convert keras_hub_preset/ ours.keras
  keras-albert convert runs/pretraining/ backbone.keras --model backbone
  keras-albert convert pretrainer.weights.h5 ours.keras --config albert_base_v2
"""

import argparse
import dataclasses
from typing import Literal

from keras_albert.cli import (
    VOCABULARY_METADATA,
    add_options,
    options_from_args,
    with_debug_help,
)
from keras_albert.convert import (
    FORMATS,
    MODEL_KINDS,
    find_vocabulary,
    load_checkpoint,
    resolve_normalization,
    save_checkpoint,
)
from keras_albert.convert.checkpoints import WRITE_FORMATS


@dataclasses.dataclass(frozen=True)
class ConvertOptions:
    """One conversion.

    Args:
        source: the checkpoint: a preset name, config JSON, .keras, .weights.h5, Hugging Face
            or original TF1 directory, TF1 prefix, or a training output directory.
        destination: a .keras or .weights.h5 file, or a directory for a Hugging Face model
            or a keras-hub preset.
        format: the source's form; auto tells it from the path.
        model: the model to write (backbone, pretrainer or classifier); default: the
            checkpoint's own.
        config: the architecture (preset name or config JSON) for a .weights.h5 file or a
            TF1 prefix.
        num_classes: for a classifier whose checkpoint does not say.
        to: the written format; auto: .keras / .weights.h5 by extension, else Hugging Face.
        vocabulary: the tokenizer (a SentencePiece model) a keras-hub preset carries;
            default: the one beside the source (or named by its run.json).
        lowercase: the keras-hub preset's tokenizer lowercases (written into its SentencePiece
            model); default: as recorded with the source (run.json or summary.json), else true.
        strip_accents: the keras-hub preset's tokenizer drops combining marks; default: as
            recorded with the source, else true.
    """

    source: str = dataclasses.field(metadata={"flag": False})
    destination: str = dataclasses.field(metadata={"flag": False})
    format: Literal[FORMATS] = "auto"
    model: str | None = dataclasses.field(default=None, metadata={"choices": MODEL_KINDS})
    config: str | None = None
    num_classes: int | None = None
    to: Literal[WRITE_FORMATS] = "auto"
    vocabulary: str | None = dataclasses.field(default=None, metadata=VOCABULARY_METADATA)
    lowercase: bool | None = None
    strip_accents: bool | None = None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=with_debug_help("\n".join(__doc__.splitlines()[2:])),
    )
    parser.add_argument("source", help="the checkpoint (see --help's description)")
    parser.add_argument(
        "destination", help=".keras / .weights.h5 file, or an HF or keras-hub directory"
    )
    add_options(parser, ConvertOptions)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    options = options_from_args(
        args, ConvertOptions, source=args.source, destination=args.destination
    )
    model = load_checkpoint(
        options.source,
        format=options.format,
        model=options.model,
        config=options.config,
        num_classes=options.num_classes,
    )
    save_checkpoint(
        model,
        options.destination,
        format=options.to,
        vocabulary=options.vocabulary or find_vocabulary(options.source),
        **resolve_normalization(options.source, options.lowercase, options.strip_accents),
    )
    print(
        f"wrote {type(model).__name__} ({model.count_params():,} parameters) to "
        f"{options.destination}"
    )
    return 0
