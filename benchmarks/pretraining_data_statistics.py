"""Statistics of the pretraining examples made from the six embedded Austen novels (run by hand).

    python -m benchmarks.pretraining_data_statistics [--short-seq-draw chunk]

Sequence length 128, dupe_factor 2, the shipped 30k-clean SentencePiece model (lowercased),
every other option at its default (seed 12345). Prints the instance count, the mask rate (masked
/ non-special tokens), the n-gram shares of the masked spans, the sentence-order balance (share
of label 1), the share of instances under 64 tokens and the mean instance length: the table of
docs/pretraining_data.md.
"""

import os
import tempfile

from benchmarks import prelude

# The corpus, SentencePiece model and tokenizer of the throughput benchmark, beside this file.
from benchmarks.pretraining_data_throughput import AUSTEN, load_tokenizer
from keras_albert.pretraining.data import PretrainingDataConfig, create_pretraining_data


def main():
    parser = prelude.parser(__file__)
    parser.add_argument("--short-seq-draw", default="document", choices=["document", "chunk"])
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--dupe-factor", type=int, default=2)
    args = parser.parse_args()
    prelude.header()
    tokenizer = load_tokenizer()
    config = PretrainingDataConfig(
        sequence_length=args.sequence_length,
        dupe_factor=args.dupe_factor,
        short_seq_draw=args.short_seq_draw,
    )
    lengths = []
    with tempfile.TemporaryDirectory() as directory:
        summary = create_pretraining_data(
            [AUSTEN],
            os.path.join(directory, "austen"),
            tokenizer,
            config,
            progress=False,
            on_example=lambda example: lengths.append(len(example.token_ids)),
        )
    spans = summary.span_length_counts
    total_spans = sum(spans.values())
    shares = ", ".join(f"{n}: {count / total_spans:.1%}" for n, count in sorted(spans.items()))
    print(f"short_seq_draw:        {args.short_seq_draw}")
    print(f"instances:             {summary.num_examples}")
    print(f"mask rate:             {summary.mask_rate:.2%}")
    print(f"n-gram shares:         {shares}")
    print(f"SOP label 1:           {summary.sentence_order_balance:.2%}")
    print(f"under 64 tokens:       {sum(n < 64 for n in lengths) / len(lengths):.2%}")
    print(f"mean length (tokens):  {sum(lengths) / len(lengths):.1f}")
    prelude.write_results(
        args.results_json,
        {
            "options": vars(args),
            "instances": summary.num_examples,
            "mask_rate": summary.mask_rate,
            "span_length_counts": {str(n): count for n, count in sorted(spans.items())},
            "sentence_order_balance": summary.sentence_order_balance,
            "under_64_tokens": sum(n < 64 for n in lengths) / len(lengths),
            "mean_length": sum(lengths) / len(lengths),
        },
    )


if __name__ == "__main__":
    main()
