"""Lamb against a NumPy transcription of ALBERT's lamb_optimizer.py + clip_by_global_norm."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_albert.training.lamb import Lamb
from keras_albert.training.schedule import WarmupPolynomialDecay

NUM_STEPS = 5


def numpy_lamb(
    weights,
    gradient_steps,
    learning_rate,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-6,
    weight_decay_rate=0.01,
    decayed=(),
    adapted=(),
    bias_correction=False,
    global_clipnorm=1.0,
):
    """The reference rule in float64; `decayed`/`adapted` name the variables
    that get weight decay / the trust ratio."""
    weights = {name: value.astype(np.float64) for name, value in weights.items()}
    m = {name: np.zeros_like(value) for name, value in weights.items()}
    v = {name: np.zeros_like(value) for name, value in weights.items()}
    for step, gradients in enumerate(gradient_steps, start=1):
        gradients = {name: g.astype(np.float64) for name, g in gradients.items()}
        if global_clipnorm is not None:
            global_norm = np.sqrt(sum(np.sum(g**2) for g in gradients.values()))
            scale = global_clipnorm / max(global_norm, global_clipnorm)
            gradients = {name: g * scale for name, g in gradients.items()}
        for name, g in gradients.items():
            w = weights[name]
            m[name] = beta_1 * m[name] + (1 - beta_1) * g
            v[name] = beta_2 * v[name] + (1 - beta_2) * g**2
            m_used, v_used = m[name], v[name]
            if bias_correction:
                m_used = m_used / (1 - beta_1**step)
                v_used = v_used / (1 - beta_2**step)
            update = m_used / (np.sqrt(v_used) + epsilon)
            if name in decayed:
                update = update + weight_decay_rate * w
            ratio = 1.0
            if name in adapted:
                w_norm, u_norm = np.linalg.norm(w), np.linalg.norm(update)
                ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
            weights[name] = w - learning_rate * ratio * update
    return weights


def tiny_model():
    """Variables whose paths the default exclusions tell apart:
    net/dense/{kernel,bias}, net/LayerNorm/{gamma,beta}, net/output/{kernel,bias}."""
    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [
            keras.Input((3,)),
            keras.layers.Dense(4, name="dense", bias_initializer="zeros"),
            keras.layers.LayerNormalization(name="LayerNorm"),
            keras.layers.Dense(2, name="output", bias_initializer="random_normal"),
        ],
        name="net",
    )
    return model, {v.path: v for v in model.trainable_variables}


def random_gradient_steps(variables, scale, seed=0):
    rng = np.random.default_rng(seed)
    return [
        {
            path: (scale * rng.standard_normal(v.shape)).astype("float32")
            for path, v in variables.items()
        }
        for _ in range(NUM_STEPS)
    ]


def run_optimizer(optimizer, variables, gradient_steps, apply_fn=None):
    paths = list(variables)
    apply_fn = apply_fn or optimizer.apply
    for gradients in gradient_steps:
        apply_fn([tf.constant(gradients[p]) for p in paths], [variables[p] for p in paths])
    return {p: variables[p].numpy() for p in paths}


def initial_values(variables):
    return {p: v.numpy() for p, v in variables.items()}


def assert_weights_close(actual, expected, rtol=2e-5, atol=1e-6):
    assert actual.keys() == expected.keys()
    for path in actual:
        np.testing.assert_allclose(actual[path], expected[path], rtol=rtol, atol=atol, err_msg=path)


WITH_DECAY = ("net/dense/kernel", "net/output/kernel")


@pytest.mark.parametrize("bias_correction", [False, True])
@pytest.mark.parametrize("gradient_scale", [0.05, 3.0], ids=["unclipped", "clipped"])
def test_matches_numpy_reference_with_default_exclusions(bias_correction, gradient_scale):
    model, variables = tiny_model()
    steps = random_gradient_steps(variables, gradient_scale)
    global_norms = [np.sqrt(sum(np.sum(g**2) for g in s.values())) for s in steps]
    # The two cases really sit on either side of the clipping threshold.
    assert all(n > 1.0 for n in global_norms) == (gradient_scale > 1)
    assert all(n < 1.0 for n in global_norms) == (gradient_scale < 1)
    start = initial_values(variables)
    optimizer = Lamb(learning_rate=0.05, weight_decay_rate=0.1, bias_correction=bias_correction)

    actual = run_optimizer(optimizer, variables, steps)

    expected = numpy_lamb(
        start,
        steps,
        learning_rate=0.05,
        weight_decay_rate=0.1,
        decayed=WITH_DECAY,
        adapted=WITH_DECAY,
        bias_correction=bias_correction,
    )
    assert_weights_close(actual, expected)
    # Moved, and by more than the tolerance: the comparison is not vacuous.
    assert all(np.abs(actual[p] - start[p]).max() > 1e-3 for p in actual)


def test_matches_numpy_reference_with_separate_exclusions_and_objects():
    model, variables = tiny_model()
    steps = random_gradient_steps(variables, 3.0, seed=3)
    start = initial_values(variables)
    gamma = variables["net/LayerNorm/gamma"]
    optimizer = Lamb(
        learning_rate=0.02,
        beta_1=0.8,
        beta_2=0.99,
        epsilon=1e-4,
        weight_decay_rate=0.2,
        exclude_from_weight_decay=[r"/bias$", gamma],
        exclude_from_layer_adaptation=["output"],
        global_clipnorm=2.0,
    )

    actual = run_optimizer(optimizer, variables, steps)

    expected = numpy_lamb(
        start,
        steps,
        learning_rate=0.02,
        beta_1=0.8,
        beta_2=0.99,
        epsilon=1e-4,
        weight_decay_rate=0.2,
        decayed=("net/dense/kernel", "net/output/kernel", "net/LayerNorm/beta"),
        adapted=("net/dense/kernel", "net/dense/bias", "net/LayerNorm/gamma", "net/LayerNorm/beta"),
        global_clipnorm=2.0,
    )
    assert_weights_close(actual, expected)


def test_zero_weights_get_trust_ratio_one():
    # net/dense/bias starts at zero: ||w|| = 0 at step 1, so r = 1, not 0 or NaN.
    model, variables = tiny_model()
    assert not variables["net/dense/bias"].numpy().any()
    steps = random_gradient_steps(variables, 0.1, seed=5)
    start = initial_values(variables)
    optimizer = Lamb(learning_rate=0.01, exclude_from_layer_adaptation=[], global_clipnorm=None)

    actual = run_optimizer(optimizer, variables, steps)

    expected = numpy_lamb(
        start,
        steps,
        learning_rate=0.01,
        decayed=WITH_DECAY,
        adapted=tuple(variables),
        global_clipnorm=None,
    )
    assert_weights_close(actual, expected)


def test_equals_keras_lamb_where_the_rules_coincide():
    # Keras's Lamb: bias correction always, no decay inside the ratio, every
    # variable adapted. Ours matches it with exactly those settings.
    model, variables = tiny_model()
    steps = random_gradient_steps(variables, 0.5, seed=7)
    start = initial_values(variables)
    ours = run_optimizer(
        Lamb(
            learning_rate=0.01,
            epsilon=1e-7,
            weight_decay_rate=0.0,
            exclude_from_layer_adaptation=[],
            bias_correction=True,
            global_clipnorm=None,
        ),
        variables,
        steps,
    )
    for path, value in start.items():
        variables[path].assign(value)
    theirs = run_optimizer(
        keras.optimizers.Lamb(learning_rate=0.01, epsilon=1e-7), variables, steps
    )
    assert_weights_close(ours, theirs, rtol=1e-6, atol=1e-7)

    # And ALBERT's defaults are a different rule.
    for path, value in start.items():
        variables[path].assign(value)
    albert = run_optimizer(Lamb(learning_rate=0.01, global_clipnorm=None), variables, steps)
    assert any(np.abs(albert[p] - theirs[p]).max() > 1e-4 for p in albert)


@pytest.mark.parametrize("gradient_scale", [0.01, 1.0, 10.0])
def test_lamb_apply_clips_by_the_global_norm_before_the_rule(gradient_scale):
    # epsilon=1 makes the step depend on the gradient's size (with the usual 1e-6 Adam's
    # m/sqrt(v) hides it), so the clipped and the unclipped rule end apart.
    model, variables = tiny_model()
    steps = random_gradient_steps(variables, gradient_scale, seed=13)[:2]
    start = initial_values(variables)
    settings = dict(learning_rate=0.1, epsilon=1.0, weight_decay_rate=0.0)

    actual = run_optimizer(Lamb(**settings, global_clipnorm=1.0), variables, steps)

    expected = numpy_lamb(start, steps, **settings, adapted=WITH_DECAY, global_clipnorm=1.0)
    assert_weights_close(actual, expected, rtol=1e-5, atol=1e-7)
    unclipped = numpy_lamb(start, steps, **settings, adapted=WITH_DECAY, global_clipnorm=None)
    clipped = max(np.sqrt(sum(np.sum(g**2) for g in step.values())) for step in steps) > 1.0
    moved_apart = any(np.abs(actual[p] - unclipped[p]).max() > 1e-4 for p in actual)
    assert moved_apart == clipped


def test_jit_compiled_step_matches_eager():
    model, variables = tiny_model()
    steps = random_gradient_steps(variables, 3.0, seed=11)
    start = initial_values(variables)
    eager = run_optimizer(Lamb(learning_rate=0.05), variables, steps)
    for path, value in start.items():
        variables[path].assign(value)
    optimizer = Lamb(learning_rate=0.05)
    var_list = list(variables.values())
    optimizer.build(var_list)
    # Variables are captured, as in a Keras train step; only gradients are traced.
    compiled_apply = tf.function(lambda grads: optimizer.apply(grads, var_list), jit_compile=True)
    compiled = run_optimizer(
        optimizer, variables, steps, apply_fn=lambda grads, _: compiled_apply(grads)
    )
    assert_weights_close(compiled, eager, rtol=1e-6, atol=1e-7)


def test_sparse_embedding_gradient_matches_dense_reference():
    keras.utils.set_random_seed(2)
    embedding = keras.layers.Embedding(6, 3, name="token_embedding")
    embedding.build((None,))
    token_ids = tf.constant([[1, 2, 2, 5]])
    start = embedding.embeddings.numpy()
    optimizer = Lamb(learning_rate=0.1, weight_decay_rate=0.1)
    dense_steps = []
    for _ in range(3):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(embedding(token_ids) ** 2)
        (gradient,) = tape.gradient(loss, embedding.trainable_variables)
        assert isinstance(gradient, tf.IndexedSlices)
        dense_steps.append({"token_embedding/embeddings": tf.convert_to_tensor(gradient).numpy()})
        optimizer.apply([gradient], embedding.trainable_variables)
    # The reference replays the gradients recorded along our trajectory, densified:
    # each step is checked for the same gradient given as IndexedSlices vs dense.
    expected = numpy_lamb(
        {"token_embedding/embeddings": start},
        dense_steps,
        learning_rate=0.1,
        weight_decay_rate=0.1,
        decayed=("token_embedding/embeddings",),
        adapted=("token_embedding/embeddings",),
    )
    np.testing.assert_allclose(
        embedding.embeddings.numpy(), expected["token_embedding/embeddings"], rtol=2e-5, atol=1e-6
    )
    # Rows 0, 3, 4 get no gradient but still decay: the update is dense, as the original.
    assert not np.allclose(embedding.embeddings.numpy()[0], start[0])


def test_exclusion_flags_by_path_and_by_object():
    model, variables = tiny_model()
    kernel = variables["net/output/kernel"]
    optimizer = Lamb(exclude_from_weight_decay=["LayerNorm", "bias", kernel])
    optimizer.build(model.trainable_variables)
    decayed = {p for p, v in variables.items() if optimizer.uses_weight_decay(v)}
    adapted = {p for p, v in variables.items() if optimizer.uses_layer_adaptation(v)}
    assert decayed == {"net/dense/kernel"}
    assert adapted == decayed  # None: same exclusions as weight decay

    optimizer = Lamb(exclude_from_layer_adaptation=[])
    optimizer.build(model.trainable_variables)
    assert all(optimizer.uses_layer_adaptation(v) for v in variables.values())
    assert {p for p, v in variables.items() if optimizer.uses_weight_decay(v)} == set(WITH_DECAY)

    optimizer = Lamb(weight_decay_rate=0.0)
    optimizer.build(model.trainable_variables)
    assert not any(optimizer.uses_weight_decay(v) for v in variables.values())

    # Keras's own idiom reaches our exclusions.
    optimizer = Lamb()
    optimizer.exclude_from_weight_decay(var_list=[variables["net/dense/kernel"]])
    optimizer.build(model.trainable_variables)
    assert {p for p, v in variables.items() if optimizer.uses_weight_decay(v)} == {
        "net/output/kernel"
    }
    with pytest.raises(ValueError, match="before the optimizer is built"):
        optimizer.exclude_from_weight_decay(var_names=["dense"])


def test_exclusions_do_not_become_optimizer_variables():
    model, variables = tiny_model()
    optimizer = Lamb(exclude_from_weight_decay=[variables["net/dense/kernel"]])
    optimizer.build(model.trainable_variables)
    # iteration + learning_rate + 2 slots per model variable
    assert len(optimizer.variables) == 2 + 2 * len(variables)
    assert not any(v is variables["net/dense/kernel"] for v in optimizer.variables)


def test_config_round_trip_with_schedule():
    schedule = WarmupPolynomialDecay(1e-3, warmup_steps=10, total_steps=100)
    optimizer = Lamb(
        learning_rate=schedule,
        beta_1=0.8,
        epsilon=1e-5,
        weight_decay_rate=0.02,
        exclude_from_weight_decay=["norm"],
        exclude_from_layer_adaptation=[],
        bias_correction=True,
        global_clipnorm=None,
        clipnorm=0.5,
    )
    config = optimizer.get_config()
    assert "weight_decay" not in config
    assert config["exclude_from_weight_decay"] == ["norm"]
    assert config["exclude_from_layer_adaptation"] == []
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert isinstance(restored, Lamb)
    assert restored.get_config() == config
    assert isinstance(restored._learning_rate, WarmupPolynomialDecay)


def test_object_exclusions_are_reported_when_serialized():
    model, variables = tiny_model()
    optimizer = Lamb(exclude_from_weight_decay=["bias", variables["net/dense/kernel"]])
    with pytest.warns(UserWarning, match="1 exclusion"):
        config = optimizer.get_config()
    assert config["exclude_from_weight_decay"] == ["bias"]


def test_saved_slots_resume_the_same_trajectory(tmp_path):
    x = np.random.default_rng(0).standard_normal((16, 3)).astype("float32")
    y = np.random.default_rng(1).standard_normal((16, 2)).astype("float32")
    model, _ = tiny_model()
    model.compile(Lamb(learning_rate=0.01), "mse")
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    model.save(tmp_path / "model.keras")
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)

    restored = keras.models.load_model(tmp_path / "model.keras")
    assert isinstance(restored.optimizer, Lamb)
    restored.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(model.get_weights(), restored.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_loss_scale_optimizer_unscales_before_our_rule():
    model, variables = tiny_model()
    steps = random_gradient_steps(variables, 3.0, seed=13)
    start = initial_values(variables)
    plain = run_optimizer(Lamb(learning_rate=0.05), variables, steps)
    for path, value in start.items():
        variables[path].assign(value)
    wrapped = keras.optimizers.LossScaleOptimizer(Lamb(learning_rate=0.05), initial_scale=128.0)
    scaled_steps = [{p: g * 128.0 for p, g in s.items()} for s in steps]
    scaled = run_optimizer(wrapped, variables, scaled_steps)
    assert_weights_close(scaled, plain, rtol=1e-6, atol=1e-7)


def test_mixed_float16_training_wraps_lamb_in_loss_scaling():
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        model, variables = tiny_model()
        model.compile(Lamb(learning_rate=0.01), "mse")
        assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
        assert isinstance(model.optimizer.inner_optimizer, Lamb)
        x = np.random.default_rng(0).standard_normal((16, 3)).astype("float32")
        y = np.random.default_rng(1).standard_normal((16, 2)).astype("float32")
        start = [w.copy() for w in model.get_weights()]
        history = model.fit(x, y, batch_size=8, epochs=3, verbose=0)
    finally:
        keras.config.set_dtype_policy(previous)
    assert all(v.dtype == "float32" for v in model.trainable_variables)
    assert np.all(np.isfinite(history.history["loss"]))
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert all(not np.allclose(a, b) for a, b in zip(start, model.get_weights(), strict=True))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"weight_decay": 0.01}, "weight_decay_rate"),
        ({"beta_1": 1.0}, "beta_1"),
        ({"beta_2": -0.1}, "beta_2"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"weight_decay_rate": -0.1}, "weight_decay_rate"),
        ({"exclude_from_weight_decay": "bias"}, re.escape("exclude_from_weight_decay='bias'")),
        ({"exclude_from_layer_adaptation": [3]}, "type int"),
        ({"exclude_from_weight_decay": ["("]}, "invalid regular expression"),
    ],
)
def test_invalid_arguments_are_refused(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        Lamb(**kwargs)
