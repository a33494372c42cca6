"""storage/record_match: a record is a run's result only when it measured what the run asks.

The records are ones tpubench wrote (fixtures/v1, see test_record_migrations.py), read as a
colleague's results folder would hand them over: relabelled, and changed where noted.
"""

from __future__ import annotations

import copy
import json
import os
import pathlib

import pytest

from tpubench.storage import record_match, records

V1 = pathlib.Path(__file__).parent / "fixtures" / "v1"


def _record(name: str) -> dict:
    path = V1 / f"{name}.json"
    return records.migrate(json.loads(path.read_text()), str(path))


TRAIN = "train-2-replicas-batch_size-16"
# What the run that wrote TRAIN was asked: its own command line, less where it wrote.
ASKS = record_match.Asks(
    "cell-1",
    {
        "model": "mnist_mlp",
        "tiny": True,
        "train_steps": 4,
        "batch_size": 16,
        "num_cpu_devices": 2,
        "machine": "gcp:n1-standard-2",
    },
    others=frozenset({"model_dir"}),
)


def test_a_record_matches_what_its_own_command_line_asked():
    assert record_match.differs(_record(TRAIN), ASKS) is None
    per_replica = dict(ASKS.flags, per_replica_batch_size=8)
    del per_replica["batch_size"]
    mine = record_match.Asks("x", per_replica, others=frozenset({"model_dir"}))
    assert record_match.differs(_record("train-2-replicas-per_replica-8"), mine) is None


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"batch_size": 32}, "batch 16 != 32"),
        ({"model": "resnet50"}, "model mnist_mlp != resnet50"),
        ({"precision": "bf16"}, "precision fp32 != bf16"),
        ({"num_cpu_devices": 1}, "num_cpu_devices 2 != 1"),
        ({"train_steps": 40}, "train_steps 4 != 40"),
        ({"tiny": False}, "tiny true != false"),
        ({"use_synthetic_data": True}, "use_synthetic_data false != true"),
        ({"xla": True}, "xla false != true"),
        ({"params": ["hidden_units=64"]}, "params (none) != hidden_units=64"),
        ({"strategy": "one_device"}, "strategy auto != one_device"),
        ({"machine": "gcp:n1-standard-8"}, "machine gcp:n1-standard-2 != gcp:n1-standard-8"),
        ({"accelerator": "gpu"}, "accelerator auto != gpu"),
        ({"not_a_flag": 1}, "records no not_a_flag (asks 1)"),
    ],
)
def test_a_record_of_another_run_names_the_first_difference(change, said):
    asks = record_match.Asks("cell-1", {**ASKS.flags, **change}, others=ASKS.others)
    assert record_match.differs(_record(TRAIN), asks) == said


def test_what_the_record_measured_counts_not_only_its_flags():
    """A colleague who edits the flags to fit the cell still leaves what the run measured."""
    rec = _record(TRAIN)
    rec["flags"]["batch_size"] = 32  # the flags now say 32; the steps ran 16
    asks = record_match.Asks("c", {**ASKS.flags, "batch_size": 32}, others=ASKS.others)
    assert record_match.differs(rec, asks) == "batch 16 != 32"
    rec = _record(TRAIN)
    rec["flags"]["model"] = "resnet50"
    asks = record_match.Asks("c", {**ASKS.flags, "model": "resnet50"}, others=ASKS.others)
    assert record_match.differs(rec, asks) == "model mnist_mlp != resnet50"
    rec = _record(TRAIN)
    rec["flags"]["precision"] = "bf16"
    asks = record_match.Asks("c", {**ASKS.flags, "precision": "bf16"}, others=ASKS.others)
    assert record_match.differs(rec, asks) == "precision fp32 != bf16"
    rec = _record(TRAIN)
    rec["flags"]["strategy"] = "central_storage"
    asks = record_match.Asks("c", {**ASKS.flags, "strategy": "central_storage"}, others=ASKS.others)
    assert record_match.differs(rec, asks) == "strategy mirrored != central_storage"


def test_a_flag_the_run_does_not_pass_on_the_records_command_line_is_another_run():
    rec = _record(TRAIN)
    rec["argv"].append("--xla")  # the cell's command, plus --xla
    rec["flags"]["xla"] = True
    assert record_match.differs(rec, ASKS) == "sets --xla, which it does not ask"
    rec["argv"][-1] = "--flagfile=colleague.flags"  # whatever it held
    assert (
        record_match.differs(rec, ASKS) == "sets --flagfile=colleague.flags, which it does not ask"
    )
    rec["argv"][-1] = "--noxla"  # absl's spelling of a false boolean, asked
    rec["flags"]["xla"] = False
    assert record_match.differs(rec, dataclass_with(ASKS, xla=False)) is None
    rec["argv"][-1] = "--model_dir=elsewhere"  # OTHERS: where the launcher put it
    assert record_match.differs(rec, ASKS) is None


def dataclass_with(asks, **flags):
    return record_match.Asks(asks.label, {**asks.flags, **flags}, others=asks.others)


def test_a_record_that_does_not_say_what_it_ran_is_nobodys():
    rec = _record(TRAIN)
    del rec["flags"]
    assert record_match.differs(rec, ASKS) == "records no flags (what it ran is unknown)"
    rec = _record(TRAIN)
    del rec["argv"]
    assert record_match.differs(rec, ASKS) == "records no command line (what it ran is unknown)"


def test_an_infer_sweeps_records_each_match_the_list_of_batches():
    asks = record_match.Asks(
        "serve",
        {
            "model": "mnist_mlp",
            "tiny": True,
            "batch_size": [2, 8],
            "num_batches": 3,
            "num_cpu_devices": 2,
            "machine": "gcp:n1-standard-2",
        },
    )
    for name in ("infer-sweep-batch-2", "infer-sweep-batch-8"):
        assert record_match.differs(_record(name), asks) is None
    one = record_match.Asks("serve", {**asks.flags, "batch_size": 2})
    assert record_match.differs(_record("infer-sweep-batch-8"), one) == "batch 2,8 != 2"
    rec = _record("infer-sweep-batch-8")
    rec["flags"]["batch_size"] = ["2"]
    rec["argv"][4] = "--batch_size=2"
    assert record_match.differs(rec, one) == "batch 8 != 2"  # what its steps ran


def test_a_data_directory_known_only_where_it_ran_matches_by_kind():
    rec = _record("data-bench-batch-32")
    flags = {"model": "mnist_mlp", "batches": 3, "warmup_batches": 1, "batch_size": 32}
    local = record_match.Asks("d", {**flags, "data_dir": record_match.Given()})
    assert record_match.differs(rec, local) is None
    on_gcs = record_match.Asks("d", {**flags, "data_dir": record_match.Given("gs://")})
    assert record_match.differs(rec, on_gcs) == "data_dir datasets/digits != a gs:// path"


def test_a_clusters_tasks_per_role():
    rec = _record(TRAIN)
    rec["placement"].update(
        strategy="parameter_server", cluster={"chief": ["a"], "worker": ["b", "c"], "ps": ["d"]}
    )
    asks = record_match.Asks(
        "ps", ASKS.flags, {"strategy": "parameter_server", "worker": 2, "ps": 1}, ASKS.others
    )
    assert record_match.differs(rec, asks) is None
    three = record_match.Asks("ps", ASKS.flags, {**asks.measured, "worker": 3}, ASKS.others)
    assert record_match.differs(rec, three) == "worker tasks 2 != 3"
    mw = record_match.Asks("ps", ASKS.flags, {"strategy": "multi_worker"}, ASKS.others)
    assert record_match.differs(rec, mw) == "strategy parameter_server != multi_worker"
    del rec["placement"]["cluster"]
    assert record_match.differs(rec, asks) == "records no cluster (a cluster run asks one)"


def test_the_line_names_the_record_the_label_and_the_difference():
    rec = _record(TRAIN)
    rec["run_label"] = "cnn_scaling-ab12"
    asks = record_match.Asks("cnn_scaling-ab12", {**ASKS.flags, "batch_size": 32}, what="b32")
    (left,) = record_match.split([records.Labelled("runs/x/r.json", rec, None)], asks).left_out
    assert left == "runs/x/r.json: labelled cnn_scaling-ab12 (b32) but batch 16 != 32; left out"
    # Text from a record reaches a console escaped.
    rec["model"]["name"] = "evil\x1b[2J"
    rec["flags"]["batch_size"] = 16
    asks = record_match.Asks("c", ASKS.flags, others=ASKS.others)
    assert record_match.differs(rec, asks) == "model evil\\x1b[2J != mnist_mlp"


def test_a_model_dir_is_the_same_only_as_itself(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    wanted = "runs/sweeps/s/model_dirs/cfg-1"
    assert record_match.same_dir("runs/sweeps/s/model_dirs/cfg-1/", wanted)
    assert record_match.same_dir(os.path.abspath(wanted), wanted)
    assert record_match.same_dir("runs/sweeps/s/../s/model_dirs/cfg-1", wanted)
    # Ends the same way: another directory.
    assert not record_match.same_dir("/tmp/elsewhere/model_dirs/cfg-1", wanted)
    assert not record_match.same_dir("other/runs/sweeps/s/model_dirs/cfg-1", wanted)
    assert not record_match.same_dir("gs://b/model_dirs/cfg-1", "gs://a/model_dirs/cfg-1")
    assert record_match.same_dir("gs://a/model_dirs/cfg-1/", "gs://a/model_dirs/cfg-1")
    assert not record_match.same_dir(None, wanted) and not record_match.same_dir("", wanted)
    rec = copy.deepcopy(_record(TRAIN))
    assert record_match.recorded_model_dir(rec) == "md"
