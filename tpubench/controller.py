"""`tpubench train`, kept at its old import path.

The job lives in tpubench/run/: the session (run/session.py), the outer
loop (run/controller.py), its actions (run/actions.py) and the train job
(run/train.py, run/job.py).
"""

from tpubench.run.train import (  # noqa: F401 - re-exported
    DEFAULT_TRAIN_STEPS,
    Interrupted,
    check_prices,
    record_early_failure,
    train,
)
