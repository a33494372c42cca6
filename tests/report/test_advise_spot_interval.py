"""Issue 61, item 1: `advise --pricing=spot` states the checkpoint interval it assumes.

A spot machine can be stopped at any time; what that costs depends on how
often the run checkpoints.  The advice names the interval its records ran
with (their --checkpoint_every), or train's default where the records
name none (older records, or the periodic checkpoint turned off).
"""

import json
import pathlib
import shutil

from test_report_advise import FIXTURES, NOW, _wide  # noqa: F401 - _wide: an autouse fixture

from tpubench.core.basis import Basis
from tpubench.core.config import AdviseConfig
from tpubench.report import advise


def _advice(inputs, pricing=Basis.SPOT) -> str:
    cfg = AdviseConfig(
        inputs=tuple(str(x) for x in inputs),
        model="resnet50",
        tf_version="2.21.0",
        price_catalog=str(FIXTURES / "prices" / "advise.csv"),
        deadline_seconds=3600,
        pricing=pricing,
    )
    return advise.advise(cfg, now=NOW)


def _with_interval(tmp_path, seconds) -> pathlib.Path:
    out = tmp_path / "tpus"
    shutil.copytree(FIXTURES / "tpus", out)
    for path in out.glob("*.json"):
        record = json.loads(path.read_text())
        record.setdefault("config", {})["checkpoint_every_secs"] = seconds
        path.write_text(json.dumps(record))
    return out


def test_spot_advice_names_the_interval_its_records_ran_with(tmp_path):
    text = _advice([_with_interval(tmp_path, 120.0)])
    assert "assumed: a checkpoint every 2.0 min (as these runs did, --checkpoint_every)" in text
    assert "a stop loses at most that much training and the same command resumes" in text


def test_spot_advice_without_an_interval_in_the_records_assumes_the_default():
    text = _advice([FIXTURES / "tpus"])  # records from before the default
    assert "assumed: a checkpoint every 10.0 min (train's default, --checkpoint_every)" in text


def test_on_demand_advice_says_nothing_of_checkpoints(tmp_path):
    assert "checkpoint every" not in _advice([_with_interval(tmp_path, 120.0)], Basis.ON_DEMAND)
