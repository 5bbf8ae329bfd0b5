"""`training.interruption`: what a stopped run raises survives a trip between processes."""

import pickle
import signal

from keras_albert.training.interruption import EXIT_STATUS, Interrupted


def test_interrupted_keeps_its_message_and_exit_status_through_pickle():
    # A fine-tuning run in a worker process sends it back pickled (`parallel_runs`).
    interrupted = Interrupted("SIGTERM: stopped after step 3", EXIT_STATUS[signal.SIGTERM])
    copy = pickle.loads(pickle.dumps(interrupted))
    assert type(copy) is Interrupted
    assert str(copy) == "SIGTERM: stopped after step 3" and copy.exit_status == 143
