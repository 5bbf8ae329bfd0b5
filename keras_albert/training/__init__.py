"""The training engine (one loop for every strategy, objective, LAMB, schedule, losses, run
directory, checkpoints, interruption, logs, progress) and the pretraining driver; it never
imports `keras_albert.finetuning`."""
