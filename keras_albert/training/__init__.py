"""The training engine: one loop for every strategy (`loop`), the objective, the strategy and
its precision policy, LAMB, AdamW clipping, loss scaling, the schedule, the run directory,
checkpoints, interruption, logs and progress. The drivers (`keras_albert.pretraining`,
`keras_albert.finetuning`) stand on it; it imports neither of them, nor the export."""
