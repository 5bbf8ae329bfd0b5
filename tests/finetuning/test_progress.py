"""The fine-tuning progress: headings (the time left counts the steps this process ran), Keras's
bar on a terminal only, one line per interval elsewhere."""

import re

import pytest

from keras_albert.finetuning.progress import EvaluationProgress, line_interval

TERMINAL_CODES = re.compile(r"[\r\b\x1b]")  # a bar's redraws and ANSI escapes


def _run(progress, start, end, chunk=1):
    """The driver's calls for steps `start + 1 .. end`, `chunk` steps per call."""
    progress.on_train_begin(start)
    step = start
    while step < end:
        epoch = step // progress.steps_per_epoch
        progress.on_stretch_begin(epoch)
        last = min(progress.train_steps, (epoch + 1) * progress.steps_per_epoch)
        while step < last:
            step = min(step + chunk, last)
            progress.on_steps(step, lambda: {"loss": 0.5, "accuracy": 0.75})


@pytest.mark.parametrize(
    ("steps_per_epoch", "interval"),
    [(1, 1), (10, 1), (11, 2), (20, 2), (38, 5), (50, 5), (51, 10), (1000, 100), (1001, 200)],
)
def test_line_interval_is_round_and_gives_at_most_ten_lines_a_stretch(steps_per_epoch, interval):
    assert line_interval(steps_per_epoch) == interval


def test_without_a_terminal_one_line_per_interval_and_no_bar(capsys):
    # 150 steps, 4 evaluations: stretches of 38 (the last 36), a line every 5 steps.
    progress = EvaluationProgress(38, 150, verbose=1, names=("loss", "accuracy"), terminal=False)
    _run(progress, 0, 150)
    out = capsys.readouterr().out
    assert not TERMINAL_CODES.search(out)
    lines = out.splitlines()
    headings = [line for line in lines if line.startswith("evaluation ")]
    assert headings[0] == "evaluation 1/4: steps 1-38 of 150"
    assert [heading.split(",")[0] for heading in headings[1:]] == [
        "evaluation 2/4: steps 39-76 of 150",
        "evaluation 3/4: steps 77-114 of 150",
        "evaluation 4/4: steps 115-150 of 150",
    ]
    steps = [int(re.match(r"step (\d+)/150 · ", line).group(1)) for line in lines[1:]
             if not line.startswith("evaluation ")]  # fmt: skip
    # Every multiple of 5 but the stretches' last steps (the evaluations' lines follow).
    assert steps == [step for step in range(5, 150, 5) if step % 38]
    assert lines[1].endswith("loss 0.500 · accuracy 0.750")
    assert len(lines) == 4 + len(steps)

    # Several steps per call: a line when the steps pass a multiple of the interval.
    _run(EvaluationProgress(38, 150, verbose=1, terminal=False), 0, 150, chunk=3)
    steps = [int(line.split()[1].split("/")[0]) for line in capsys.readouterr().out.splitlines()
             if line.startswith("step ")]  # fmt: skip
    assert steps[:4] == [6, 12, 15, 21] and len(steps) <= 4 * 10


def test_verbose_2_prints_the_headings_only(capsys):
    _run(EvaluationProgress(38, 150, verbose=2, terminal=False), 0, 150)
    assert all(line.startswith("evaluation ") for line in capsys.readouterr().out.splitlines())
    _run(EvaluationProgress(38, 150, verbose=2, terminal=True), 0, 150)
    assert all(line.startswith("evaluation ") for line in capsys.readouterr().out.splitlines())


def test_on_a_terminal_a_bar_per_stretch(capsys):
    _run(EvaluationProgress(10, 20, verbose=1, terminal=True), 0, 20)
    out = capsys.readouterr().out
    assert "\r" in out and "10/10" in out and not re.search(r"^step \d", out, re.MULTILINE)
    assert out.count("\n") == 4  # two headings, two bars each ending its line


def test_time_left_after_a_resume_counts_only_the_steps_run_since(capsys):
    now = [0.0]
    progress = EvaluationProgress(10, 40, verbose=2, clock=lambda: now[0])
    progress.on_train_begin(15)  # resumed at step 15, inside the second stretch
    progress.on_stretch_begin(1)
    assert capsys.readouterr().out == "evaluation 2/4: steps 16-20 of 40\n"
    now[0] = 10.0  # 5 steps (16-20) in 10 s: 2 s a step, 20 steps left
    progress.on_stretch_begin(2)
    assert capsys.readouterr().out == "evaluation 3/4: steps 21-30 of 40, about 40s left\n"


def test_an_interrupted_bar_ends_its_line_before_what_follows(capsys):
    progress = EvaluationProgress(10, 20, verbose=1, terminal=True)
    progress.on_train_begin(0)
    with pytest.raises(KeyboardInterrupt), progress:
        progress.on_stretch_begin(0)
        for step in (1, 2, 3):
            progress.on_steps(step, lambda: {"loss": 0.5})
        raise KeyboardInterrupt
    print("interrupted: stopped after step 3 of 20")
    out = capsys.readouterr().out
    assert " 1/10" in out  # drawn (later steps may come too soon to redraw)
    assert out.splitlines()[-1] == "interrupted: stopped after step 3 of 20"
