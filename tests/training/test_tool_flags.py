"""`keras-albert pretrain` and `keras-albert finetune`: one flag per option field, the dataclass's
defaults, the original run_pretraining.py flags as aliases."""

import pytest

from keras_albert.cli import options_from_args
from keras_albert.commands import command_module
from keras_albert.finetuning.options import FinetuningOptions
from keras_albert.finetuning.task_choice import options_from_flags
from keras_albert.pretraining.options import PretrainingOptions
from keras_albert.tasks.classification.options import ClassificationOptions
from keras_albert.tasks.multiple_choice.options import MultipleChoiceOptions
from keras_albert.tasks.question_answering.options import QuestionAnsweringOptions
from keras_albert.tasks.registry import TASK_TYPES
from tests.tool_flags import check_tool_flags


def _tool(name):
    return vars(command_module(name))


def test_pretrain_tool_flags_and_aliases():
    tool = _tool("pretrain")
    parser = tool["build_parser"]()
    aliases = {**tool["ALIASES"], "strategy": ("--use_tpu",)}
    check_tool_flags(parser, PretrainingOptions, aliases=aliases)
    for flags in tool["ALIASES"].values():  # each alias is documented in the tool's docstring
        assert all(flag in tool["__doc__"] for flag in flags), flags

    required = ["--train-data", "t", "--output-dir", "o", "--train-steps", "5"]
    required += ["--batch-size", "8", "--preset", "albert_base_v2"]
    options = options_from_args(parser.parse_args(required), PretrainingOptions)
    assert options == PretrainingOptions("t", "o", 5, 8, preset="albert_base_v2")

    original = (
        "--input_file=t --output_dir=o --albert_config_file=c.json --init_checkpoint=i "
        "--max_seq_length=128 --max_predictions_per_seq=20 --train_batch_size=4096 "
        "--learning_rate=0.00176 --num_train_steps=125000 --num_warmup_steps=3125 "
        "--save_checkpoints_steps=5000 --keep_checkpoint_max=5 --iterations_per_loop=100 "
        "--max_eval_steps=100 --eval-data e --use_tpu --tpu_name=my-tpu "
        "--spm_model_file=s.model --random_seed=7 --weight-decay-rate 0.02 --jit-compile true "
        "--text-columns"
    )
    with pytest.raises(SystemExit):  # --text-columns is no pretraining flag
        parser.parse_args(original.split())
    options = options_from_args(
        parser.parse_args(original.removesuffix(" --text-columns").split()), PretrainingOptions
    )
    assert options == PretrainingOptions(
        train_data="t", output_dir="o", config="c.json", init_checkpoint="i",
        sequence_length=128, max_predictions_per_sequence=20, batch_size=4096,
        learning_rate=0.00176, train_steps=125000, warmup_steps=3125,
        checkpoint_every_steps=5000, keep_checkpoints=5, steps_per_execution=100,
        eval_steps=100, eval_data="e", strategy="tpu", tpu_address="my-tpu",
        vocabulary="s.model", seed=7, weight_decay_rate=0.02, jit_compile=True,
    )  # fmt: skip
    not_tpu = parser.parse_args([*required, "--use_tpu=false", "--strategy", "cpu"])
    assert not_tpu.strategy == "cpu"
    assert parser.parse_args([*required, "--use_tpu=False"]).strategy == "auto"


def test_finetune_tool_flags():
    parser = _tool("finetune")["build_parser"]()
    task_options = tuple(t.options for t in TASK_TYPES if t.options is not None)
    check_tool_flags(parser, FinetuningOptions, given_only=task_options)
    args = parser.parse_args(
        "--dataset generic --train-data t --eval-data e --output-dir o --preset albert_base_v2 "
        "--text-columns a,b --label-column c --labels x,y --no-header --skip-invalid".split()
    )
    assert options_from_flags(args) == FinetuningOptions(
        "generic", "t", "e", "o", preset="albert_base_v2", skip_invalid=True,
        task_options=ClassificationOptions(
            text_columns=("a", "b"), label_column="c", labels=("x", "y"), header=False
        ),
    )  # fmt: skip
    squad = (
        "--dataset squad_v2 --train-data t --eval-data e --output-dir o --preset albert_base_v2 "
        "--squad-answerability answer_class --doc-stride 64 --max-query-length 32 "
        "--max-answer-length 20 --sequence-length 256"
    )
    assert options_from_flags(parser.parse_args(squad.split())) == FinetuningOptions(
        "squad_v2", "t", "e", "o", preset="albert_base_v2", sequence_length=256,
        task_options=QuestionAnsweringOptions(
            answerability="answer_class", doc_stride=64, max_query_length=32,
            max_answer_length=20,
        ),
    )  # fmt: skip
    # A flag of another task type is refused, not ignored.
    with pytest.raises(ValueError, match=r"`--max-qa-length` is an option of multiple_choice"):
        options_from_flags(parser.parse_args([*squad.split(), "--max-qa-length", "100"]))
    # No task flag given: the task type's defaults.
    args = parser.parse_args(["--dataset", "race", *squad.split()[2:10]])
    assert options_from_flags(args).task_options == MultipleChoiceOptions()


def test_finetune_task_is_the_former_name_of_dataset():
    parser = _tool("finetune")["build_parser"]()
    rest = "--train-data t --eval-data e --output-dir o --preset albert_base_v2 --doc-stride 64"
    options = {
        flag: options_from_flags(parser.parse_args([flag, "squad_v2", *rest.split()]))
        for flag in ("--dataset", "--task")
    }
    assert options["--task"] == options["--dataset"]
    assert options["--dataset"].dataset == "squad_v2"
    assert options["--dataset"].task_options == QuestionAnsweringOptions(doc_stride=64)
    dataset_help = next(a.help for a in parser._actions if a.dest == "dataset")
    assert "`--task` is its former name" in dataset_help and "(also: --task)" in dataset_help
    # A flag of another task type names the data set flag it is refused for.
    with pytest.raises(ValueError, match=r"Received: --dataset squad_v2"):
        options_from_flags(parser.parse_args(["--task", "squad_v2", *rest.split(), "--labels=a"]))


def test_finetuning_options_take_task_as_a_deprecated_keyword():
    current = FinetuningOptions(dataset="SST-2", train_data="t", eval_data="e", output_dir="o",
                                preset="albert_base_v2")  # fmt: skip
    with pytest.warns(DeprecationWarning, match=r"use `dataset=`"):
        former = FinetuningOptions(task="SST-2", train_data="t", eval_data="e", output_dir="o",
                                   preset="albert_base_v2")  # fmt: skip
    assert former == current and former.dataset == "SST-2"
    with pytest.raises(TypeError, match=r"`task` must be None when `dataset` is given"):
        FinetuningOptions("SST-2", "t", "e", "o", preset="albert_base_v2", task="MRPC")
