"""`AlbertBackbone(remat=True)`: every application of the shared block recomputed in the
backward pass. The gradients are those without remat on TensorFlow (traced and XLA), JAX and
PyTorch, with dropout, groups, LoRA and mixed precision; `fit` trains the same; the option
round-trips through the config and `.keras`; inference traces the plain graph; on JAX the
backward pass keeps a fraction of the forward pass's activations."""

import concurrent.futures

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert import AlbertBackbone, AlbertClassifier
from tests.backends import zoo
from tests.backends.conftest import run_on_backend
from tests.helpers import TINY, check_model_roundtrips, random_inputs, tiny_backbone

GRADIENT_RTOL = 1e-5


@pytest.fixture
def without_fusions():
    """TensorFlow's graph rewrites fuse a matmul with its bias add or not depending on the
    graph around it, and a fused kernel rounds once where two round twice: in bfloat16 a
    different number. Off, the comparisons are of the same operations."""
    tf.config.optimizer.set_experimental_options({"remapping": False})
    yield
    tf.config.optimizer.set_experimental_options({"remapping": True})


def test_remat_must_be_a_bool():
    with pytest.raises(ValueError, match=r"`remat` must be a bool. Received: remat=1"):
        AlbertBackbone(**TINY, remat=1)
    with pytest.raises(ValueError, match=r"`remat` must be a bool. Received: remat='yes'"):
        tiny_backbone().with_remat("yes")


def test_remat_round_trips_through_the_config_and_keras_files(tmp_path):
    backbone = AlbertBackbone(**TINY, remat=True)
    assert backbone.get_config()["remat"] is True
    assert AlbertBackbone.from_config(backbone.get_config()).remat is True
    restored = check_model_roundtrips(backbone, random_inputs(), tmp_path)
    assert restored.remat is True
    assert backbone.with_remat(True) is backbone
    plain = backbone.with_remat(False)
    assert plain.remat is False and not plain.get_config()["remat"]
    assert all(
        np.array_equal(a, b)
        for a, b in zip(plain.get_weights(), backbone.get_weights(), strict=True)
    )


@pytest.mark.parametrize("case", sorted(zoo.REMAT_CASES))
def test_the_gradients_are_those_without_remat(case, without_fusions):
    assert zoo.remat_difference(**zoo.REMAT_CASES[case]) <= GRADIENT_RTOL


@pytest.mark.parametrize("jit_compile", [True, None], ids=["xla", "eager"])
@pytest.mark.parametrize("case", ["float32", "mixed_bfloat16"])
@pytest.mark.slow
def test_the_gradients_are_those_without_remat_under_xla_and_eagerly(
    case, jit_compile, without_fusions
):
    assert zoo.remat_difference(jit_compile, **zoo.REMAT_CASES[case]) <= GRADIENT_RTOL


def test_inference_traces_the_plain_graph():
    """What is served: a training=False call is not rematerialized (the op list is the plain
    backbone's), with the same outputs."""
    plain, remat = zoo.remat_pair(dropout=0.1)
    inputs = random_inputs()

    def operations(model):
        function = tf.function(lambda x: model(x, training=False))
        graph = function.get_concrete_function(inputs).graph
        return [operation.type for operation in graph.get_operations()]

    assert operations(remat) == operations(plain)
    np.testing.assert_array_equal(
        remat(inputs)["sequence_output"], plain(inputs)["sequence_output"]
    )


@pytest.mark.slow
def test_fit_trains_as_without_remat(without_fusions):
    """A classifier on each backbone of `remat_pair` (dropout on, the same seeds): the same
    losses over `fit`'s steps."""
    losses = []
    for backbone in zoo.remat_pair(dropout=0.1):
        keras.utils.set_random_seed(1)
        model = AlbertClassifier(backbone, num_classes=3, dropout=0.1)
        losses.append(zoo.fit_losses("classifier", model))
    assert len(losses[0]) == zoo.NUM_BATCHES
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)


@pytest.fixture(scope="module")
def backend_runs(tmp_path_factory):
    """The backends' gradients (float32 and mixed_bfloat16, dropout on) and JAX's residual
    bytes, from `remat_run.py`, both backends at once."""
    work_dir = tmp_path_factory.mktemp("remat")
    cases = ("float32", "mixed_bfloat16")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        futures = {
            backend: pool.submit(run_on_backend, "remat_run.py", backend, str(work_dir), *cases)
            for backend in ("jax", "torch")
        }
        return {backend: future.result() for backend, future in futures.items()}


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_gradients_are_those_without_remat_on_jax_and_torch(backend_runs, backend):
    differences = backend_runs[backend]["differences"]
    assert set(differences) == {"float32", "mixed_bfloat16"}
    assert max(differences.values()) <= GRADIENT_RTOL, differences


@pytest.mark.slow
def test_the_backward_pass_keeps_a_fraction_of_the_activations_on_jax(backend_runs):
    """12 passes, batch 8 × 128 tokens, hidden 64: 181.6 MiB without remat, 3.3 MiB with
    (the blocks' inputs, the weights and the seeds; benchmarks/results/memory.json)."""
    residual_bytes = backend_runs["jax"]["residual_bytes"]
    plain, remat = residual_bytes["residual_bytes_plain"], residual_bytes["residual_bytes_remat"]
    assert remat * 10 < plain, residual_bytes
