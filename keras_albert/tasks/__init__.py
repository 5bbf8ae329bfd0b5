"""Task types, one folder each (`classification`, `question_answering`, `multiple_choice`,
`token_classification`, `fill_mask`), each described by one `TaskType` record and listed once
in `keras_albert.tasks.registry.TASK_TYPES`."""
