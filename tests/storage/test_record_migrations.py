"""Records of every earlier schema read as the current one (storage/record_migrations.py).

fixtures/v1/ holds records that tpubench wrote at schema 1 (two-replica train
runs given --batch_size and --per_replica_batch_size, a two-replica infer
sweep, a data bench), with machine paths and the host name blanked.
"""

import copy
import json
import pathlib

import pytest

from tpubench.core import errors
from tpubench.storage import record_migrations, records
from tpubench.storage.record_results import LoadGenTraits

TESTS = pathlib.Path(__file__).resolve().parent.parent
V1 = pathlib.Path(__file__).resolve().parent / "fixtures" / "v1"
BATCH_IN_CONFIG = {"batch_size", "per_replica_batch_size", "batch_sizes"}
BATCH_IN_PARAMS = {"batch_size", "global_batch_size", "per_replica_batch_size"}


def _record_files():
    for path in sorted(TESTS.rglob("*.json")):
        text = path.read_text()
        if '"schema_version"' in text:
            yield path


def _has_no_batch_copies(rec: dict) -> bool:
    params = (rec.get("model") or {}).get("params") or {}
    return not BATCH_IN_CONFIG & set(rec.get("config") or {}) and not BATCH_IN_PARAMS & set(params)


def test_every_record_file_of_the_tests_reads_as_the_current_schema():
    paths = list(_record_files())
    assert len(paths) >= 50 and any(p.parent == V1 for p in paths)
    for path in paths:
        rec = records.read(str(path))
        assert rec["schema_version"] == records.SCHEMA_VERSION == 2, path
        assert _has_no_batch_copies(rec), path
        records.typed(rec, str(path))  # and every one has a typed view


# (fixture, global batch, per-replica batch, replicas)
REAL_V1 = [
    ("train-2-replicas-batch_size-16", 16, 8, 2),
    ("train-2-replicas-per_replica-8", 16, 8, 2),
    ("infer-sweep-batch-2", 2, 1, 2),
    ("infer-sweep-batch-8", 8, 4, 2),  # its model.params are the sweep's first batch's
    ("data-bench-batch-32", 32, 32, None),
]


@pytest.mark.parametrize(("name", "global_batch", "per_replica", "replicas"), REAL_V1)
def test_real_v1_records_give_the_batch_once_per_meaning(name, global_batch, per_replica, replicas):
    path = V1 / f"{name}.json"
    old = json.loads(path.read_text())
    assert old["schema_version"] == 1
    rec = records.read(str(path))
    assert (rec["global_batch_size"], rec["per_replica_batch_size"]) == (global_batch, per_replica)
    assert rec.get("placement", {}).get("num_replicas") == replicas
    assert _has_no_batch_copies(rec)
    # Everything else is as written: the model's own params, config, flags, results.
    params = old["model"]["params"]
    assert rec["model"]["params"] == {k: v for k, v in params.items() if k not in BATCH_IN_PARAMS}
    assert rec["model"]["params"]["hidden_units"] > 0 and rec["model"]["params"]["seed"] >= 0
    assert rec["config"] == {k: v for k, v in old["config"].items() if k not in BATCH_IN_CONFIG}
    assert rec["flags"] == old["flags"] and rec["results"] == old["results"]
    unchanged = set(old) - {"schema_version", "config", "model"}
    assert all(rec[k] == old[k] for k in unchanged)
    typed = records.typed(rec)
    assert (typed.global_batch_size, typed.per_replica_batch_size) == (global_batch, per_replica)


def test_the_stale_params_of_an_infer_sweep_are_not_its_batch():
    old = json.loads((V1 / "infer-sweep-batch-8.json").read_text())
    assert old["model"]["params"]["global_batch_size"] == 2  # what schema 1 wrote
    assert records.read(str(V1 / "infer-sweep-batch-8.json"))["global_batch_size"] == 8


def _v1(**fields) -> dict:
    return {"schema_version": 1, "run_id": "old", "kind": "train", "status": "ok"} | fields


def test_a_v1_record_without_top_level_batches_takes_them_from_its_params():
    # Multi-replica: the global batch is not the per-replica one.
    rec = records.migrate(
        _v1(
            config={"model": "resnet50", "batch_size": None},
            model={"name": "resnet50", "params": {"batch_size": 64, "global_batch_size": 256}},
            placement={"num_replicas": 4},
        )
    )
    assert (rec["global_batch_size"], rec["per_replica_batch_size"]) == (256, 64)
    assert rec["model"]["params"] == {} and rec["config"] == {"model": "resnet50"}


def test_an_older_v1_record_takes_its_global_batch_from_the_flag():
    # params with only the per-replica batch (TPUEstimator's name), the flag the global one
    rec = records.migrate(
        _v1(config={"batch_size": 32}, model={"name": "m", "params": {"batch_size": 16, "w": 3}})
    )
    assert (rec["global_batch_size"], rec["per_replica_batch_size"]) == (32, 16)
    assert rec["model"]["params"] == {"w": 3} and rec["config"] == {}


def test_a_record_that_failed_before_running_has_only_the_batch_it_was_given():
    rec = records.migrate(_v1(status="failed", config={"model": "m", "batch_size": 7}))
    assert rec["global_batch_size"] == 7 and "per_replica_batch_size" not in rec
    rec = records.migrate(_v1(status="failed", config={"model": "m", "batch_size": None}))
    assert "global_batch_size" not in rec and "per_replica_batch_size" not in rec
    bare = records.migrate(_v1())  # the launcher's own record: no batch anywhere
    assert bare == _v1() | {"schema_version": 2}


def test_the_top_level_batch_wins_and_odd_values_stay_for_the_checks_to_name():
    rec = records.migrate(
        _v1(global_batch_size="lots", model={"params": {"global_batch_size": 8, "batch_size": 4}})
    )
    assert rec["global_batch_size"] == "lots" and rec["per_replica_batch_size"] == 4
    rec = records.migrate(_v1(config=[1], model={"params": {"batch_size": True}}))
    assert rec["config"] == [1] and "per_replica_batch_size" not in rec


def test_migrating_leaves_the_record_read_as_it_was():
    old = json.loads((V1 / "train-2-replicas-batch_size-16.json").read_text())
    kept = copy.deepcopy(old)
    once = records.migrate(old)
    assert old == kept  # the caller's mapping is not changed
    assert records.migrate(once) == once  # a v2 record passes through
    assert record_migrations.v1_to_v2(once) == once | {"schema_version": 2}


def test_a_v2_record_written_today_reads_back_unchanged(tmp_path):
    rec = records.migrate(json.loads((V1 / "train-2-replicas-batch_size-16.json").read_text()))
    back = records.read(records.write(rec, str(tmp_path)))
    assert back == rec


def test_a_schema_beyond_this_tpubench_is_still_refused():
    with pytest.raises(errors.UsageError, match="reads up to 2"):
        records.migrate(_v1(schema_version=3))


@pytest.mark.parametrize(
    ("scenario", "bounded", "one_query"),
    [("server", True, False), ("offline", False, True), ("single_stream", False, False)],
)
def test_a_scenario_record_from_before_traits_reads_as_its_scenario_was(
    scenario, bounded, one_query
):
    """Reports read loadgen.traits; a record written before them gets them here, by name."""
    old = {
        "schema_version": 2,
        "run_id": "20261128-000000-mnist_mlp-abcdef",
        "kind": "infer",
        "status": "ok",
        "scenario": scenario,
        "loadgen": {"settings": {"latency_bound_seconds": 0.02}, "summary": {}},
    }
    traits = records.typed(old).loadgen.traits
    assert (traits.bounded_by_latency, traits.one_query) == (bounded, one_query)
    # A record that carries its traits keeps them, whatever its name.
    mine = old | {"loadgen": old["loadgen"] | {"traits": {"bounded_by_latency": True}}}
    assert records.typed(mine).loadgen.traits.bounded_by_latency is True
    assert "traits" not in old["loadgen"]  # the record itself is left as it was


def test_records_of_no_scenario_run_read_with_no_traits_and_are_left_as_written():
    """The v1 fixtures (an infer sweep has a config.scenario section, named closed_loop)
    and every record of the tests: none is an `infer --scenario` record, so none gets a
    trait, and reading adds no loadgen section to the mapping."""
    for path in _record_files():
        rec = records.read(str(path))
        if isinstance(rec.get("scenario"), str):
            continue
        assert records.typed(rec, str(path)).loadgen.traits == LoadGenTraits(), path
        assert "traits" not in (rec.get("loadgen") or {}), path


@pytest.mark.parametrize(
    ("scenario", "bounded", "one_query"),
    [("server", True, False), ("offline", False, True), ("multi_stream", False, False)],
)
def test_a_v1_scenario_record_migrates_then_takes_the_traits_of_its_name(
    tmp_path, scenario, bounded, one_query
):
    """A schema-1 record (the real infer sweep fixture, made an `infer --scenario` run):
    v1 -> v2 as any other, then the traits its scenario had when it was written."""
    old = json.loads((V1 / "infer-sweep-batch-2.json").read_text())
    old |= {"scenario": scenario, "loadgen": {"settings": {"latency_bound_seconds": 0.05}}}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    rec = records.read(str(path))
    assert rec["schema_version"] == 2 and rec["loadgen"] == old["loadgen"]  # as written
    traits = records.typed(rec).loadgen.traits
    assert (traits.bounded_by_latency, traits.one_query) == (bounded, one_query)
