"""`tpubench infer`, kept at its old import path; the sweep lives in tpubench/run/infer.py."""

from tpubench.run.infer import (  # noqa: F401 - re-exported
    UNSUPPORTED_STRATEGIES,
    check_prices,
    record_early_failure,
    run,
)
