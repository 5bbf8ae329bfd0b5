"""The fine-tuning progress headings: the time left counts the steps this process ran."""

from keras_albert.finetuning.progress import EvaluationProgress


def test_time_left_after_a_resume_counts_only_the_steps_run_since(capsys):
    now = [0.0]
    progress = EvaluationProgress(10, 40, verbose=2, clock=lambda: now[0])
    progress.on_train_begin(15)  # resumed at step 15, inside the second stretch
    progress.on_epoch_begin(1)
    assert capsys.readouterr().out == "evaluation 2/4: steps 11-20 of 40\n"
    now[0] = 10.0  # 5 steps (16-20) in 10 s: 2 s a step, 20 steps left
    progress.on_epoch_begin(2)
    assert capsys.readouterr().out == "evaluation 3/4: steps 21-30 of 40, about 40s left\n"
