"""Split one labeled CSV/TSV file into train.csv and dev.csv (seeded), for fine-tuning.

    keras-albert split --input data/zh/chnsenticorp_htl_sample.csv \\
        --output-dir runs/zh/chnsenticorp --dev-fraction 0.1 --seed 0 --text-column review

With --text-column, the train rows' texts also go to train.txt, one per paragraph, as input
for `keras-albert create-data` (--document-split blank_line), so that no dev text is
pretrained on. Every flag is a field of `keras_albert.text.splits.CsvSplitOptions`.
"""

import argparse

from keras_albert.cli import add_options, options_from_args, with_debug_help
from keras_albert.text.splits import CsvSplitOptions, split_csv


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=with_debug_help(None),
    )
    add_options(parser, CsvSplitOptions)
    return parser


def main(argv=None) -> int:
    options = options_from_args(build_parser().parse_args(argv), CsvSplitOptions)
    counts = split_csv(options)
    texts = f", {counts['texts']} texts in train.txt" if options.text_column else ""
    print(f"{options.output_dir}: {counts['train']} train rows, {counts['dev']} dev rows{texts}")
    return 0
