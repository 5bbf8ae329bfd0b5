"""`FunctionalModel`: the base of ALBERT's functional models (the backbone and the task
models), which create their layers as attributes before `keras.Model.__init__` builds the
graph from them, as keras-hub's `Backbone` and `Task` do."""

import keras


class FunctionalModel(keras.Model):
    """A functional `keras.Model` whose constructor may set attributes before calling
    `super().__init__(inputs=..., outputs=...)`, on every backend."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialized = True

    def __setattr__(self, name, value):
        # On PyTorch a Keras layer is a `torch.nn.Module`, which refuses a sublayer attribute
        # before its own `__init__` ran; the functional graph tracks every layer anyway
        # (keras-hub's `Backbone.__setattr__` routes around it the same way).
        if keras.backend.backend() == "torch" and not hasattr(self, "_initialized"):
            return object.__setattr__(self, name, value)
        return super().__setattr__(name, value)
