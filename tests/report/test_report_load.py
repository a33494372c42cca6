"""Medians and intervals, reading records, migration, grouping and honest comparisons."""

import json
import pathlib

import pytest

from tpubench.core import errors
from tpubench.report import group, load, stats
from tpubench.storage import records

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


# ------------------------------------------------------------------ stats
@pytest.mark.parametrize(
    "n, k, confidence",
    [
        (1, 1, 0.0),
        (2, 1, 0.5),  # [min, max] of 2 covers the median half the time
        (5, 1, 1 - 2 / 32),  # the range of 5 only reaches 93.75%
        (6, 1, 1 - 2 / 64),  # first n whose range reaches 95%
        (10, 2, 1 - 2 * 11 / 1024),  # P(B<=1) = 11/1024 <= 2.5%; P(B<=2) = 56/1024 is not
        (20, 6, 1 - 2 * sum(__import__("math").comb(20, i) for i in range(6)) / 2**20),
    ],
)
def test_order_statistic_ranks(n, k, confidence):
    got_k, got_conf = stats.order_ranks(n)
    assert got_k == k
    assert got_conf == pytest.approx(confidence)
    assert n < 6 or got_conf >= 0.95


def test_median_interval_drops_missing_values():
    iv = stats.median_interval([1200, None, 900, 1000, float("nan"), 1050, 950, 1100])
    assert (iv.median, iv.low, iv.high, iv.n) == (1025, 900, 1200, 6)
    assert stats.median_interval([None]) is None
    one = stats.median_interval([7.0])
    assert not one.has_interval and one.describe() == "1 trial: no interval"


# ------------------------------------------------------------------ load
def test_load_keeps_ok_runs_and_lists_the_rest_with_reasons():
    loaded = load.load([str(FIXTURES / "threads")])
    assert len(loaded.runs) == 6 + 3 + 2 + 2
    why = {x.run_id or pathlib.Path(x.path).name: (x.status, x.reason) for x in loaded.excluded}
    assert why["mlp-failed"] == ("failed", "unknown price key 'gcp:n9'")
    assert why["mlp-interrupted"] == ("interrupted", "interrupted by SIGTERM at step 120")
    assert why["mlp-running"][0] == "running" and "killed" in why["mlp-running"][1]
    assert why["notes.json"][0] == "skipped" and "no schema_version" in why["notes.json"][1]
    run = next(r for r in loaded.runs if r.run_id == "mlp-t2-0")
    assert run.dims["threads"] == 2 and run.dims["machine"] == "gcp:n1-standard-2"
    assert run.usd_per_hour == 0.095 and run.price_dates == ("2025-01-01",)
    assert run.seconds_per_epoch == pytest.approx(1437 / 1800)
    assert "seed" not in run.params and run.params["hidden_units"] == 512


def test_overlapping_inputs_count_each_run_once():
    one = FIXTURES / "threads" / "mlp-t1-0.json"
    loaded = load.load([str(one), str(FIXTURES / "threads")])
    assert [r.run_id for r in loaded.runs].count("mlp-t1-0") == 1


def test_named_file_that_is_no_record_is_an_error(tmp_path):
    with pytest.raises(errors.UsageError, match="notes.json is not a tpubench run record"):
        load.load([str(FIXTURES / "threads" / "notes.json")])
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(errors.UsageError, match="invalid JSON"):
        load.load([str(bad)])
    with pytest.raises(
        errors.UsageError, match="nope/ does not exist; give a run record, a directory of them"
    ):
        load.load(["nope/"])
    with pytest.raises(errors.UsageError, match="give run records, directories or gs://"):
        load.load([])


def test_empty_directory_is_an_error(tmp_path):
    with pytest.raises(errors.UsageError, match="no run records"):
        load.load([str(tmp_path)])


# ------------------------------------------------------------- migration
def _record(version=1):
    return json.loads((FIXTURES / "threads" / "mlp-t1-0.json").read_text()) | {
        "schema_version": version
    }


def test_newer_schema_is_refused_with_upgrade_hint(tmp_path):
    with pytest.raises(errors.UsageError, match="schema_version 99; this tpubench reads up to 2"):
        records.migrate(_record(99), "r.json")
    with pytest.raises(errors.UsageError, match="'1'; accepted: an integer 1..2"):
        records.migrate(_record("1"), "r.json")
    (tmp_path / "new.json").write_text(json.dumps(_record(99)))
    with pytest.raises(errors.UsageError, match="upgrade tpubench"):
        records.read(str(tmp_path / "new.json"))


def test_older_records_migrate_forward_through_each_step(monkeypatch):
    # The hook as it will be used when the schema reaches version 3: a schema-1
    # record takes both steps and reads as the newest shape.
    monkeypatch.setattr(records, "SCHEMA_VERSION", 3)
    step = {2: lambda r: r | {"kind": r.get("kind", "?")}}
    monkeypatch.setattr(records, "MIGRATIONS", records.MIGRATIONS | step)
    old = _record(1)
    del old["kind"]
    new = records.migrate(old, "old.json")
    assert new["schema_version"] == 3 and new["kind"] == "?"
    assert "batch_size" not in new["model"]["params"]  # the 1 -> 2 step ran too
    monkeypatch.setattr(records, "MIGRATIONS", {1: records.MIGRATIONS[1]})
    with pytest.raises(errors.UsageError, match="version 2, which this tpubench cannot migrate"):
        records.migrate(_record(1), "old.json")


# --------------------------------------------------------------- grouping
def _groups(*names):
    runs = load.load([str(FIXTURES / n) for n in names]).runs
    return group.group(runs)


def test_groups_are_model_machine_configuration_with_short_labels():
    labels = [(g.label, len(g.runs)) for g in _groups("threads")]
    assert labels == [
        ("cifar10_cnn · gcp:n1-standard-1 · threads=1", 2),
        ("cifar10_cnn · gcp:n1-standard-2 · threads=2", 2),
        ("mnist_mlp · gcp:n1-standard-1 · threads=1", 6),
        ("mnist_mlp · gcp:n1-standard-2 · threads=2", 3),
    ]


def _mixed(*names):
    return group.group(load.load([str(FIXTURES / "mixed" / f"{n}.json") for n in names]).runs)


def test_other_networks_are_refused_unless_asked():
    groups = _mixed("mlp-b128", "mlp-tiny")
    message = r"\(hidden_units=32 in 1 run, hidden_units=512 in 1 run; --tiny runs use smaller"
    with pytest.raises(errors.UsageError, match=message) as e:
        group.check_comparable(groups)
    assert "--allow_mixed=params" in str(e.value)
    notes = group.check_comparable(groups, ("params",))
    assert len(notes) == 1 and "compared as asked" in notes[0]
    with pytest.raises(errors.UsageError, match="unknown --allow_mixed value 'batch'"):
        group.check_comparable(groups, ("batch",))


@pytest.mark.parametrize(
    "other, label, note",
    [
        (
            "mlp-b256",
            "global batch=256",
            "differ in batch size (128 in 1 run, 256 in 1 run); compared",
        ),
        ("mlp-bf16", "precision=bf16", "differ in precision (bf16 in 1 run, fp32 in 1 run); com"),
    ],
)
def test_batch_and_precision_are_configurations_by_default(other, label, note):
    groups = _mixed("mlp-b128", other)
    notes = group.check_comparable(groups)
    assert len(notes) == 1 and note in notes[0]
    assert any(g.label == f"mnist_mlp · gcp:n1-standard-1 · {label}" for g in groups)
    # The old way of asking still works and says the same.
    assert group.check_comparable(groups, ("batch_size", "precision")) == notes


def test_batch_sweep_labels_show_batch_and_precision():
    labels = [g.label for g in _groups("batches")]
    assert labels == [
        "mnist_mlp · gcp:n1-standard-1 · global batch=64 · precision=fp32",
        "mnist_mlp · gcp:n1-standard-1 · global batch=128 · precision=fp32",
        "mnist_mlp · gcp:n1-standard-1 · global batch=256 · precision=bf16",
        "mnist_mlp · gcp:n1-standard-1 · global batch=256 · precision=fp32",
    ]


def test_weak_scaling_batches_are_comparable():
    # 64 per replica on 1, 2 and 4 GPUs: the global batch differs, per replica it does not.
    assert group.check_comparable(_groups("gpus")) == []


def test_baseline_selector():
    groups = _groups("threads")
    picked = group.select(groups, "threads=2")
    assert {m: g.label for m, g in picked.items()} == {
        "cifar10_cnn": "cifar10_cnn · gcp:n1-standard-2 · threads=2",
        "mnist_mlp": "mnist_mlp · gcp:n1-standard-2 · threads=2",
    }
    assert group.select(groups, "mnist_mlp · gcp:n1-standard-1 · threads=1")["mnist_mlp"]
    with pytest.raises(errors.UsageError, match="matches several mnist_mlp configurations"):
        group.select(groups, "model=mnist_mlp")
    with pytest.raises(errors.UsageError, match="matches no configuration"):
        group.select(groups, "threads=8")
    with pytest.raises(errors.UsageError, match="unknown --baseline dimension 'thread'"):
        group.select(groups, "thread=1")


def test_inference_records_never_mix_with_training(tmp_path, monkeypatch):
    from tpubench.report import compare, render, tables

    monkeypatch.setenv("COLUMNS", "200")  # each configuration on one line of the table
    train = json.loads((FIXTURES / "threads" / "mlp-t1-0.json").read_text())
    infer = train | {"run_id": "mlp-infer", "kind": "infer"}
    (tmp_path / "train.json").write_text(json.dumps(train))
    (tmp_path / "infer.json").write_text(json.dumps(infer))
    groups = group.group(load.load([str(tmp_path)]).runs)
    assert [g.label for g in groups] == [
        "mnist_mlp · gcp:n1-standard-1",
        "mnist_mlp [infer] · gcp:n1-standard-1",
    ]
    # two models of one configuration each: nothing to set against a baseline
    assert compare.default_baselines(groups).keys() == {"mnist_mlp", "mnist_mlp [infer]"}
    text = render.terminal(tables.summary([compare.summarize(g) for g in groups]))
    assert "mnist_mlp [infer] · gcp:n1-standard-1" in text


def test_skip_corrupt_counts_are_not_model_params():
    import json

    record = json.loads((FIXTURES / "threads" / "cnn-t1-0.json").read_text())
    record["model"]["params"]["readable_records"] = {"train-0.tfrecord": 1257}
    run, _ = load.from_record(record, "x.json")
    assert "readable_records" not in run.params
    assert "readable_records" not in run.dims.get("params", "")
