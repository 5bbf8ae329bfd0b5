"""Task types, one folder each (`classification`, `question_answering`, `multiple_choice`,
`token_classification`, `fill_mask`, `text_embedding`), each described by one `TaskType` record
and listed once in `keras_albert.tasks.registry.TASK_TYPES`; each folder holds its head model
(`model.py`), its preprocessor and its serving module."""
