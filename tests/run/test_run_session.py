"""The run session's rules, shared by train, infer, --compare_synthetic and data bench."""

from __future__ import annotations

import dataclasses

import pytest

from tpubench.core import errors
from tpubench.core.config import DataConfig
from tpubench.hardware import placement
from tpubench.run import interrupts, session


@dataclasses.dataclass
class Manifest:
    classes: int | None = 7
    vocab: int | None = 77

    def fitted_params(self):
        out = {}
        if self.classes:
            out["num_classes"] = self.classes
        if self.vocab:
            out["vocab_size"] = self.vocab
        return out


FEED = session.Feed(global_batch_size=8, replicas=2, seed=3, data=DataConfig(cache=True))


def test_head_and_vocabulary_come_from_the_data():
    ref = session.ModelRef("m")
    params = {"num_classes": 10, "vocab_size": 57, "hidden": 4}
    fitted = session.fit_params(params, ref, Manifest(), FEED, "/data")
    assert fitted["num_classes"] == 7 and fitted["vocab_size"] == 77
    assert fitted["per_replica_batch_size"] == 4 and fitted["global_batch_size"] == 8
    assert fitted["seed"] == 3 and fitted["cache"] is True and fitted["data_dir"] == "/data"
    assert params["vocab_size"] == 57, "the spec's resolved params are not changed"
    assert session.fitted_from_data(fitted, Manifest()) == {"num_classes": 7, "vocab_size": 77}


def test_params_given_on_the_command_line_win_over_the_data():
    ref = session.ModelRef("m", params=(("vocab_size", 99),))
    fitted = session.fit_params({"num_classes": 10, "vocab_size": 99}, ref, Manifest(), FEED, "d")
    assert fitted["vocab_size"] == 99 and fitted["num_classes"] == 7


def test_a_model_without_a_head_gets_no_head():
    fitted = session.fit_params({"vocab_size": 5}, session.ModelRef("m"), Manifest(), FEED, "d")
    assert "num_classes" not in fitted and fitted["vocab_size"] == 77


def test_synthetic_data_fits_nothing():
    fitted = session.fit_params({"num_classes": 10}, session.ModelRef("m"), None, FEED, None)
    assert fitted["num_classes"] == 10 and session.fitted_from_data(fitted, None) == {}


def test_batch_checks_name_the_value_and_what_is_accepted():
    placement.check_batch(12, 4)
    with pytest.raises(errors.UsageError, match=r"--batch_size=10 .* 4 replicas.*e\.g\. 8"):
        placement.check_batch(10, 4)
    session.check_batches((4, 8), 2)
    with pytest.raises(errors.UsageError, match=r"--batch_size=1,8,3: 1, 3 not divisible"):
        session.check_batches((1, 8, 3), 2)


@pytest.mark.parametrize(
    "error, status, message",
    [
        (errors.RunInvalidError("loss became nan"), "invalid", "loss became nan"),
        (errors.DataError("bad shard"), "failed", "bad shard"),
        # Every line is kept (the cause is often on the second), joined into one with "; ".
        (ValueError("first line\nsecond"), "failed", "ValueError: first line; second"),
        (RuntimeError(""), "failed", "RuntimeError"),  # no dangling ": "
    ],
)
def test_exceptions_map_to_a_record_status(error, status, message):
    assert session.outcome(error) == (status, message)


def test_signals_raise_interrupted_and_are_restored():
    import os
    import signal

    before = signal.getsignal(signal.SIGTERM)
    with (
        pytest.raises(interrupts.Interrupted, match="SIGTERM"),
        interrupts.interruptible() as received,
    ):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # the handler runs between bytecodes
            pass
    assert received == ["SIGTERM"]
    assert signal.getsignal(signal.SIGTERM) is before


def _placement(strategy, workers):
    from tpubench.hardware import placement

    return placement.Placement("cpu", strategy, workers, ("cpu:0",), "auto", num_workers=workers)


def _deliver(sig):
    import os

    os.kill(os.getpid(), sig)
    for _ in range(1000):  # the handler runs between bytecodes
        pass


def test_a_handler_taken_over_by_a_strategy_is_reclaimed():
    import signal

    taken = []
    with (
        pytest.raises(interrupts.Interrupted, match="SIGTERM"),
        interrupts.interruptible() as received,
    ):
        signal.signal(signal.SIGTERM, lambda s, f: taken.append(s))  # as a strategy's start does
        interrupts.reclaim_signals(_placement("mirrored", 1))
        _deliver(signal.SIGTERM)
    assert received == ["SIGTERM"] and taken == []


def test_in_a_multi_worker_cluster_signals_are_noted_not_raised():
    import signal

    with interrupts.interruptible() as received:
        interrupts.reclaim_signals(_placement("multi_worker", 2))
        _deliver(signal.SIGTERM)
        _deliver(signal.SIGINT)
        with received.quiet():
            pass
        _deliver(signal.SIGHUP)  # still deferred after a quiet() block
    assert received == ["SIGTERM", "SIGINT", "SIGHUP"]


def test_the_synthetic_twin_has_the_real_runs_head_and_vocabulary():
    from tpubench.core.config import TrainConfig
    from tpubench.run.train import diagnosis

    cfg = TrainConfig(model="lstm_textgen", params=(("hidden", "8"),), profile_steps=(2, 3))
    twin = diagnosis.synthetic_config(cfg, "md", {"vocab_size": 77, "num_classes": 3})
    assert dict(twin.params) == {"hidden": "8", "vocab_size": "77", "num_classes": "3"}
    assert twin.data.use_synthetic_data and twin.profile_steps is None
    assert twin.model_dir == "md/compare-synthetic"


def test_params_batch_size_still_reads_the_per_replica_batch_and_says_once_it_is_deprecated(capfd):
    from tpubench.model import model_api

    warned_before = set(model_api._warned)  # noqa: SLF001 - other tests may have read it
    model_api._warned.clear()  # noqa: SLF001
    try:
        fitted = session.fit_params({"hidden": 4}, session.ModelRef("m"), None, FEED, "d")
        assert capfd.readouterr().err == ""  # fitting reads no deprecated key
        assert fitted["batch_size"] == fitted["per_replica_batch_size"] == 4
        assert fitted.get("batch_size") == 4 and dict(fitted)["batch_size"] == 4
        err = capfd.readouterr().err
        assert err.count("\n") == 1, err  # one line, however often a model reads it
        assert 'params["batch_size"] is deprecated' in err
        assert 'params["per_replica_batch_size"]' in err and 'params["global_batch_size"]' in err
    finally:
        model_api._warned.clear()  # noqa: SLF001
        model_api._warned.update(warned_before)  # noqa: SLF001


def test_a_records_model_params_hold_no_batch():
    # The record gives the batch once, at its top level (schema 2).
    fitted = session.fit_params({"hidden": 4}, session.ModelRef("m"), None, FEED, "d")
    recorded = session.recorded_params(fitted)
    assert list(recorded)[0] == "hidden" and recorded["seed"] == 3
    assert not {"batch_size", "global_batch_size", "per_replica_batch_size"} & set(recorded)
