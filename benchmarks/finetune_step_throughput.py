"""Fine-tuning step throughput of the three task heads: keras_albert vs Hugging Face (PyTorch CPU),
and SQuAD features per second.

Run by hand: `python -m benchmarks.finetune_step_throughput [--preset albert_base_v2]
[--rounds 3] [--json results.json]`.

In this one process, interleaved round by round, on the same random batch and the same
architecture (dropout 0 in both):
- SQuAD: `AlbertQuestionAnswerer` (null span; `train_on_batch` of its compiled train function)
  vs `AlbertForQuestionAnswering`, sequence length `--squad-length` (384, the original's);
- RACE: `AlbertMultipleChoice` vs `AlbertForMultipleChoice`, 4 choices of `--race-length`
  (the original's 512 is very slow on a CPU; 128 by default: say which in the figures);
- NER: `AlbertTokenClassifier` vs `AlbertForTokenClassification`, sequence length 128.
Both sides use AdamW (ours: the driver's `build_optimizer`, with global-norm clipping).
Then SQuAD features per second (`keras_albert.tasks.question_answering.features.squad_features`,
384 / 128 / 64) on tests/data/squad/expmrc-squad-dev-sample.json with the real 30k-piece
SentencePiece model.
Prints sequences/s (a RACE "sequence" is one question of 4 choices), the ratios ours / HF, and
the raw per-round figures as JSON (also written to `--json`).
"""

import json
import os
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import keras
import numpy as np
import torch
import transformers

from benchmarks.interleaved import interleaved_rates, report
from keras_albert import AlbertBackbone, get_preset
from keras_albert.finetuning.driver import build_optimizer
from keras_albert.tasks.multiple_choice.model import AlbertMultipleChoice
from keras_albert.tasks.question_answering.features import read_squad_examples, squad_features
from keras_albert.tasks.question_answering.model import AlbertQuestionAnswerer
from keras_albert.tasks.token_classification.model import AlbertTokenClassifier
from keras_albert.text.tokenizer import AlbertTokenizer

SQUAD_SAMPLE = str(prelude.TEST_DATA / "squad" / "expmrc-squad-dev-sample.json")
SENTENCEPIECE = str(prelude.TEST_DATA / "30k-clean.model")
NUM_LABELS = 13  # WNUT 2017: O + B/I of 6 types


def random_inputs(rng, shape, vocabulary_size):
    token_ids = rng.integers(5, vocabulary_size, shape).astype("int32")
    segment_ids = np.zeros(shape, "int32")
    segment_ids[..., shape[-1] // 4 :] = 1
    return {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": np.ones(shape, "int32"),
    }


def hf_inputs(x):
    return dict(
        input_ids=torch.tensor(x["token_ids"], dtype=torch.long),
        token_type_ids=torch.tensor(x["segment_ids"], dtype=torch.long),
        attention_mask=torch.tensor(x["padding_mask"], dtype=torch.long),
    )


def ours(config, head: str):
    backbone = AlbertBackbone.from_albert_config(config)
    if head == "squad":
        model = AlbertQuestionAnswerer(backbone)
        model.compile(optimizer=build_optimizer(5e-5, 1000, 0, 0.01), **model.training_loss())
        return model
    if head == "race":
        model = AlbertMultipleChoice(backbone, dropout=0.0)
    else:
        model = AlbertTokenClassifier(backbone, num_classes=NUM_LABELS, dropout=0.0)
    model.compile(
        optimizer=build_optimizer(5e-5, 1000, 0, 0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model


def hf_step(model, inputs):
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, eps=1e-6, weight_decay=0.01)

    def step():
        optimizer.zero_grad()
        loss = model(**inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss.item()

    return step


def runners(config, task: str, batch_size: int, sequence_length: int):
    rng = np.random.default_rng(0)
    # The span head has two outputs (start, end); the token head has NUM_LABELS.
    num_labels = 2 if task == "squad" else NUM_LABELS
    hf_config = transformers.AlbertConfig(
        **config.to_hf_config(), num_labels=num_labels, attn_implementation="eager"
    )
    if task == "squad":
        x = random_inputs(rng, (batch_size, sequence_length), config.vocabulary_size)
        starts = rng.integers(1, sequence_length, batch_size).astype("int32")
        ends = np.minimum(starts + 3, sequence_length - 1).astype("int32")
        model = ours(config, "squad")
        y = {"start_logits": starts, "end_logits": ends}
        hf = transformers.AlbertForQuestionAnswering(hf_config)
        inputs = {
            **hf_inputs(x),
            "start_positions": torch.tensor(starts, dtype=torch.long),
            "end_positions": torch.tensor(ends, dtype=torch.long),
        }
    elif task == "race":
        x = random_inputs(rng, (batch_size, 4, sequence_length), config.vocabulary_size)
        y = rng.integers(0, 4, batch_size).astype("int32")
        model = ours(config, "race")
        hf = transformers.AlbertForMultipleChoice(hf_config)
        inputs = {**hf_inputs(x), "labels": torch.tensor(y, dtype=torch.long)}
    else:
        x = random_inputs(rng, (batch_size, sequence_length), config.vocabulary_size)
        x["segment_ids"][:] = 0
        y = rng.integers(0, NUM_LABELS, (batch_size, sequence_length)).astype("int32")
        model = ours(config, "ner")
        hf = transformers.AlbertForTokenClassification(hf_config)
        inputs = {**hf_inputs(x), "labels": torch.tensor(y, dtype=torch.long)}
    return {
        f"{task}_keras_albert": lambda: model.train_on_batch(x, y),
        f"{task}_hf_torch": hf_step(hf, inputs),
    }


def squad_features_per_second(repeats: int) -> dict:
    tokenizer = AlbertTokenizer(SENTENCEPIECE)
    examples = list(read_squad_examples(SQUAD_SAMPLE))
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()  # (the context cache lives in one call only)
        features = list(squad_features(examples, tokenizer, 384, 128, 64))
        seconds = time.perf_counter() - start
        rates.append({"features_per_second": len(features) / seconds,
                      "questions_per_second": len(examples) / seconds})  # fmt: skip
    return {"num_questions": len(examples), "num_features": len(features), "rounds": rates}


def main() -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--preset", default="albert_base_v2")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--squad-length", type=int, default=384)
    parser.add_argument("--race-length", type=int, default=128)
    parser.add_argument("--ner-length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps-per-round", type=int, default=2)
    parser.add_argument("--tasks", default="squad,race,ner")
    args = parser.parse_args()
    prelude.header()

    torch.set_num_threads(os.cpu_count())
    config = get_preset(args.preset).replace(dropout=0.0, attention_dropout=0.0)
    lengths = {"squad": args.squad_length, "race": args.race_length, "ner": args.ner_length}
    raw = {"preset": args.preset, "batch_size": args.batch_size, "lengths": lengths,
           "rounds": args.rounds, "steps_per_round": args.steps_per_round,
           "cpu_threads": os.cpu_count(), "load_average": os.getloadavg()}  # fmt: skip
    for task in args.tasks.split(","):
        rates = interleaved_rates(
            runners(config, task, args.batch_size, lengths[task]),
            args.batch_size, args.rounds, args.steps_per_round,
        )  # fmt: skip
        shape = f"4 x {lengths[task]}" if task == "race" else str(lengths[task])
        print(f"{task}: {args.preset}, batch {args.batch_size}, seq {shape}, float32, "
              f"{os.cpu_count()} CPU threads, {args.rounds} rounds")  # fmt: skip
        medians = report(rates)
        ratio = medians[f"{task}_keras_albert"] / medians[f"{task}_hf_torch"]
        print(f"  keras_albert / hf_torch: {ratio:.2f}x")
        raw[task] = {"sequences_per_second": rates, "ratio_of_medians": ratio}
    features = squad_features_per_second(args.rounds)
    best = max(features["rounds"], key=lambda r: r["features_per_second"])
    print(f"SQuAD features (384 / 128 / 64): {features['num_questions']} questions → "
          f"{features['num_features']} windows; best of {args.rounds}: "
          f"{best['features_per_second']:.0f} windows/s, "
          f"{best['questions_per_second']:.0f} questions/s")  # fmt: skip
    raw["squad_features"] = features
    raw["load_average_after"] = os.getloadavg()
    print(json.dumps(raw, indent=2))
    prelude.write_results(args.results_json, raw)


if __name__ == "__main__":
    main()
