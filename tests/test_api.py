"""The top-level API: what users reach for first is one `import keras_albert` away."""

import ast
import pathlib
import subprocess
import sys

import numpy as np

import keras_albert
from tests.helpers import random_inputs, tiny_backbone, tiny_config

REPO = pathlib.Path(__file__).resolve().parents[1]
PUBLIC = (
    "AlbertBackbone",
    "AlbertClassifier",
    "AlbertConfig",
    "AlbertMultipleChoice",
    "AlbertPacker",
    "AlbertPretrainer",
    "AlbertQuestionAnswerer",
    "AlbertTokenClassifier",
    "AlbertTokenizer",
    "FinetuningOptions",
    "FinetuningTask",
    "TASK_TYPES",
    "fill_mask",
    "finetune",
    "get_task_type",
    "PRESETS",
    "get_preset",
    "load_checkpoint",
    "save_checkpoint",
)


def test_import_keras_albert_exposes_the_public_api():
    assert set(PUBLIC) <= set(keras_albert.__all__)
    for name in keras_albert.__all__:
        assert getattr(keras_albert, name) is not None, name
    from keras_albert.text.packing import AlbertPacker
    from keras_albert.text.tokenizer import AlbertTokenizer

    assert keras_albert.AlbertTokenizer is AlbertTokenizer
    assert keras_albert.AlbertPacker is AlbertPacker
    from keras_albert.tasks.fill_mask.predict import fill_mask

    assert keras_albert.fill_mask is fill_mask
    # Every model class, and every task type of the registry by its one name.
    from keras_albert import export, models

    assert set(models.__all__) <= set(keras_albert.__all__)
    for task_type in keras_albert.TASK_TYPES:
        assert keras_albert.get_task_type(task_type.name) is task_type
        assert getattr(keras_albert, task_type.model_class.__name__) is task_type.model_class
        if task_type.trains:
            assert issubclass(task_type.finetuning_task_class(), keras_albert.FinetuningTask)
        # Its preprocessor from the package, and its serving module from the export's.
        if task_type.preprocessor is not None:
            name = task_type.preprocessor_class().__name__
            assert name in keras_albert.__all__
            assert getattr(keras_albert, name) is task_type.preprocessor_class()
        module_class = task_type.serving_module_class()
        assert module_class.__name__ in export.__all__
        assert getattr(export, module_class.__name__) is module_class


def test_load_checkpoint_round_trips_save_checkpoint(tmp_path):
    config = tiny_config(vocabulary_size=32, num_layers=2)
    model = keras_albert.AlbertClassifier(
        keras_albert.AlbertBackbone.from_albert_config(config), num_classes=2
    )
    rng = np.random.default_rng(0)
    model.set_weights([rng.normal(size=w.shape).astype("float32") for w in model.weights])
    inputs = random_inputs(vocabulary_size=32)
    for destination, extra in (("m.keras", {}), ("m.weights.h5", {"config": config})):
        keras_albert.save_checkpoint(model, tmp_path / destination)
        restored = keras_albert.load_checkpoint(tmp_path / destination, **extra)
        assert isinstance(restored, keras_albert.AlbertClassifier)
        np.testing.assert_allclose(
            np.asarray(restored(inputs)), np.asarray(model(inputs)), rtol=0, atol=1e-6
        )


def fresh_python(code: str) -> list[str]:
    """The lines `code` prints in a new interpreter (nothing imported yet)."""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    return result.stdout.strip().splitlines()


def test_pretraining_and_export_load_no_fine_tuning_task():
    # The top-level names of fine-tuning are imported when first used, and a task type's
    # fine-tuning task when the driver asks for it, so that the pretraining tool (and any
    # export) reads neither the driver nor a task's training code.
    code = (
        "import sys, keras_albert, keras_albert.pretraining.driver\n"
        # The export's public names are imported when first used: all of them.
        "from keras_albert.export import *\n"
        "print(sorted(m for m in sys.modules if m.startswith('keras_albert.finetuning')"
        " or m.startswith('keras_albert.tasks')))\n"
        "from keras_albert import finetune, TASK_TYPES\n"
        "from keras_albert.finetuning.task_choice import make_task\n"
        "print('keras_albert.tasks.question_answering.task' in sys.modules,"
        " [t.name for t in TASK_TYPES])\n"
    )
    lines = fresh_python(code)
    # The serving modules read the tasks' defaults and in-graph features, nothing above them.
    loaded = ast.literal_eval(lines[0])
    above = (".task", ".finetuning_task", ".recipes")
    assert [m for m in loaded if m.endswith(above) or ".finetuning" in m] == []
    assert "keras_albert.tasks.question_answering.defaults" in loaded
    assert "keras_albert.tasks.question_answering.serving" in loaded
    names = [task_type.name for task_type in keras_albert.TASK_TYPES]
    assert lines[1] == f"False {names}"


def test_the_pretraining_data_loads_neither_the_driver_nor_the_loop():
    # The data tools import `keras_albert.pretraining.data`; the package's public names (the
    # driver's) are imported when first used.
    code = (
        "import sys, keras_albert.pretraining.data\n"
        "prefixes = ('keras_albert.pretraining', 'keras_albert.training')\n"
        "print(sorted(m for m in sys.modules if m.startswith(prefixes)))\n"
        "from keras_albert.pretraining import PretrainingOptions, pretrain\n"
        "print(pretrain.__module__, PretrainingOptions.__module__)\n"
        "print('apache_beam' in sys.modules)\n"
    )
    lines = fresh_python(code)
    loaded = ast.literal_eval(lines[0])
    # `import keras_albert` registers the saved objects: Lamb, its clipping and schedule, the
    # MLM loss.
    registered = {"pretraining.losses", "training.clipping", "training.lamb", "training.schedule"}
    # `load_checkpoint` (the top-level API) reads a run's record: the run directory's reader,
    # not the training loop.
    registered |= {"training.run_records", "training.run_directory", "training.checkpoints"}
    outside_data = {
        m.removeprefix("keras_albert.")
        for m in loaded
        if not m.startswith("keras_albert.pretraining.data")
    }
    assert outside_data <= {"pretraining", "training", *registered}
    assert lines[1] == "keras_albert.pretraining.driver keras_albert.pretraining.options"
    # Apache Beam is the Beam engine's alone (`--engine beam`), an optional extra.
    assert lines[2] == "False"


def test_a_beam_worker_imports_the_data_path_without_keras_and_the_rest_when_used():
    # A Beam SDK worker (its main module is Beam's) runs the pretraining data's pipeline:
    # `import keras_albert` there loads neither Keras nor TensorFlow; the first use of a name
    # that needs them loads the rest, with the Keras registrations.
    code = (
        "import sys, types\n"
        "sys.modules['__main__'].__spec__ = types.SimpleNamespace("
        "name='apache_beam.runners.worker.sdk_worker_main')\n"
        "import keras_albert.pretraining.data.beam, keras_albert.text.python_tokenizer\n"
        "print(sorted(m for m in ('tensorflow', 'tensorflow_text', 'keras') if m in sys.modules))\n"
        "from keras_albert import AlbertClassifier\n"
        "import keras\n"
        "print(AlbertClassifier.__module__, 'tensorflow' in sys.modules,"
        " keras.saving.get_registered_object('keras_albert>Lamb').__module__)\n"
    )
    lines = fresh_python(code)
    assert lines[0] == "[]"
    assert lines[1] == "keras_albert.tasks.classification.model True keras_albert.training.lamb"


def test_a_model_saved_with_its_preprocessor_loads_after_import_keras_albert(tmp_path):
    # A fine-tuning run's best.keras carries its preprocessor: `keras.models.load_model` finds
    # the class by its registered name, which `import keras_albert` registers.
    from keras_albert import AlbertClassifier, AlbertClassifierPreprocessor, AlbertTokenizer

    tokenizer = AlbertTokenizer(str(REPO / "tests" / "data" / "30k-clean.model"))
    backbone = tiny_backbone(vocabulary_size=30000)
    preprocessor = AlbertClassifierPreprocessor(tokenizer, sequence_length=8)
    path = tmp_path / "model.keras"
    AlbertClassifier(backbone, num_classes=2, preprocessor=preprocessor).save(path)
    code = (
        "import keras, keras_albert\n"
        f"model = keras.models.load_model({str(path)!r}, compile=False)\n"
        "print(type(model.preprocessor).__name__, model.preprocessor.sequence_length)\n"
    )
    assert fresh_python(code)[-1] == "AlbertClassifierPreprocessor 8"
