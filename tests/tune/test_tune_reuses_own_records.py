"""A rerun of `tpubench tune` reuses a trial's record only if it is a record of that trial.

docs/security.md, "A result only from a record of that run": tune finds a trial's earlier
record by its label; it counts only when it ran the trial's flags (precision, xla, batch,
threads, steps, model) in the trial's own model_dir.  Any other is named in one line on the
console and the trial runs again.  The records are one tpubench wrote
(tests/storage/fixtures/v1), rewritten as the trial's, in a real records directory.
"""

from __future__ import annotations

import io
import json

import pytest
from conftest import WRITTEN_RECORD

from tpubench.children import command
from tpubench.tune import space, trials

BASE = {"model": "mnist_mlp", "tiny": True, "use_synthetic_data": True}
SETTING = space.Setting(precision="fp32", xla=False, steps_per_loop=2)


def _runner(tmp_path, out):
    return trials.Runner("tune-t", BASE, str(tmp_path / "records"), str(tmp_path / "w"), out)


def _write(tmp_path, name: str, run_label: str, flags: dict, rate: float) -> str:
    """A record that ran FLAGS (its command line and parsed flags) at RATE examples/s."""
    rec = json.loads(WRITTEN_RECORD.read_text())
    rec.update(
        run_id=name,
        run_label=run_label,
        argv=["tpubench", "train", *command.flags_argv(flags)],
        flags={**rec["flags"], **flags},
        results={**rec["results"], "examples_per_sec": rate},
    )
    rec["config"]["model_dir"] = flags["model_dir"]
    rec["config"]["precision"] = flags["precision"]
    path = tmp_path / "records" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec))
    return str(path)


def test_the_trials_own_record_is_reused(tmp_path):
    runner = _runner(tmp_path, io.StringIO())
    label = trials.label("tune-t", SETTING, 10, 0)
    _write(tmp_path, "own", label, runner.flags(SETTING, 10, label), 1234.0)
    got = _runner(tmp_path, io.StringIO()).recorded(SETTING, 10, 0)
    assert got is not None and got.reused and got.rate == 1234.0


@pytest.mark.parametrize(
    ("changed", "why"),
    [
        ({"xla": True}, "xla true != false"),
        ({"precision": "bf16"}, "precision bf16 != fp32"),
        ({"train_steps": 100}, "train_steps 100 != 10"),
        ({"steps_per_loop": 10}, "steps_per_loop 10 != 2"),
        ({"model": "mnist_cnn"}, "model mnist_cnn != mnist_mlp"),
        ({"model_dir": "elsewhere/model_dirs/LABEL"}, "model_dir elsewhere/model_dirs/LABEL"),
        ({"batch_size": 64}, "sets --batch_size=64, which it does not ask"),
    ],
)
def test_another_runs_record_under_a_trials_label_is_named_and_the_trial_runs(
    tmp_path, changed, why
):
    out = io.StringIO()
    runner = _runner(tmp_path, out)
    label = trials.label("tune-t", SETTING, 10, 0)
    changed = {k: v.replace("LABEL", label) if k == "model_dir" else v for k, v in changed.items()}
    path = _write(tmp_path, "other", label, {**runner.flags(SETTING, 10, label), **changed}, 9e9)
    runner = _runner(tmp_path, out)
    assert runner.recorded(SETTING, 10, 0) is None  # not reused: the trial runs
    assert runner.recorded(SETTING, 10, 0) is None
    (line,) = out.getvalue().splitlines()  # named once
    assert line.startswith(f"  {path}: labelled {label} but {why.replace('LABEL', label)}")
    assert line.endswith("; left out")
