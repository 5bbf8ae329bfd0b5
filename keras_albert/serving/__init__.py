"""What every serving module is built of: the string-in `AlbertServingModule` (backbones and
pretrainers, and the base of the classifier's module), the task modules' base
(`task_serving`), request parsing (`requests`) and the served precision and depth
(`precision`). Each task type's own module is in its folder
(`keras_albert.tasks.<name>.serving`); `keras_albert.export` writes them."""
