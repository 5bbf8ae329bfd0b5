"""What every serving module is built of: the string-in `AlbertServingModule` (classifiers,
regressors, backbones, pretrainers), the task modules' base (`task_serving`), request
parsing (`requests`) and the served precision and depth (`precision`). Each task type's own
module is in its folder (`keras_albert.tasks.<name>.serving`); `keras_albert.export` writes them."""
