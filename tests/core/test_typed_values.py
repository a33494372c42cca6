"""The typed values that cross layers: the run record's view, Precision, RunDir, one batch name."""

import json
import pathlib

import pytest

from tpubench.core import config, errors, precision
from tpubench.report import load
from tpubench.storage import records
from tpubench.storage.run_dir import RunDir

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "report" / "fixtures"


def _fixture_records():
    for path in sorted(FIXTURES.glob("*/*.json")):
        raw = json.loads(path.read_text())
        if "run_id" in raw:
            yield path, raw


def test_every_fixture_record_reads_as_a_typed_record_with_its_json_values():
    seen = 0
    for path, raw in _fixture_records():
        rec = records.typed(raw, str(path))
        assert rec.run_id == raw["run_id"] and rec.kind == raw.get("kind", "train")
        assert rec.global_batch_size == raw.get("global_batch_size")
        assert rec.per_replica_batch_size == raw.get("per_replica_batch_size")
        assert rec.results.examples_per_sec == raw.get("results", {}).get("examples_per_sec")
        assert rec.config.precision == raw.get("config", {}).get("precision")
        assert rec.placement.num_replicas == raw.get("placement", {}).get("num_replicas")
        machines = raw.get("cost", {}).get("machines") or []
        assert len(rec.cost.machines) == len(machines)
        for row, typed in zip(machines, rec.cost.machines, strict=True):
            assert typed.usd_per_hour == row["usd_per_hour"] and typed.raw is row
            assert [x.as_of for x in typed.rows] == [x["as_of"] for x in row.get("rows", [])]
        assert rec.raw == records.migrate(raw)  # the mapping as read (schema 2)
        assert raw == json.loads(path.read_text())  # the JSON itself is untouched
        seen += 1
    assert seen >= 20


def test_a_minimal_old_record_reads_with_empty_sections_and_none_values():
    rec = records.typed({"schema_version": 1, "run_id": "old", "status": "failed"})
    assert rec.kind == "train" and rec.status == "failed"
    assert rec.results.examples_per_sec is None and rec.results.eval is None
    assert rec.cost.machines == () and rec.model.name is None
    assert rec.model_name == ""


def test_a_section_of_the_wrong_shape_is_a_type_error_naming_the_field():
    bad = {"schema_version": 1, "run_id": "x", "results": [1, 2]}
    with pytest.raises(TypeError, match="field 'results' is list, not a mapping"):
        records.typed(bad)
    with pytest.raises(TypeError):  # load.load lists it as "fields of the wrong type"
        load.from_record(bad, "x.json")


def test_the_report_reads_the_same_dims_through_the_typed_record():
    path = FIXTURES / "batches" / "mlp-bf16-b256-0.json"
    run, reason = load.from_record(json.loads(path.read_text()), str(path))
    assert reason == ""
    assert run.dims["batch"] == 256 and run.dims["per_replica_batch"] == 256
    assert run.dims["precision"] == "bf16" and run.dims["machine"] == "gcp:n1-standard-1"
    assert run.machines[0].machine == "gcp:n1-standard-1"
    assert run.accuracy == 0.95 and run.target_seconds == 33


@pytest.mark.parametrize(
    "name, policy, compute, scaled",
    [
        ("fp32", "float32", "float32", False),
        ("bf16", "mixed_bfloat16", "bfloat16", False),
        ("fp16", "mixed_float16", "float16", True),
    ],
)
def test_each_precision_knows_its_policy_dtypes_loss_scaling_and_peak_row(
    name, policy, compute, scaled
):
    p = precision.parse(name)
    assert (p.policy, p.compute_dtype, p.variable_dtype) == (policy, compute, "float32")
    assert p.loss_scaling is scaled and p == name and p.value == name
    assert precision.parse(p) is p
    assert tuple(precision.Precision) == precision.ALL and precision.ALL == ("fp32", "bf16", "fp16")


def test_an_unknown_precision_is_one_line_naming_what_is_accepted():
    with pytest.raises(errors.UsageError) as e:
        precision.parse("fp8")
    assert str(e.value) == "--precision=fp8: not a precision; accepted: fp32, bf16, fp16"


@pytest.mark.parametrize("base", ["runs/abc", "runs/abc/", "gs://bucket/runs/abc"])
def test_a_run_dir_names_every_file_a_run_keeps(base):
    d = RunDir.of(base)
    root = base.rstrip("/")
    assert d.path == base  # the record keeps the spelling the user gave
    assert d.checkpoints == f"{root}/checkpoints"
    assert d.tensorboard == f"{root}/tensorboard"
    assert d.metrics == f"{root}/metrics.jsonl"
    assert d.worker_scratch(12) == f"{root}/.worker-12"
    assert d.compare_synthetic.checkpoints == f"{root}/compare-synthetic/checkpoints"
    assert d.is_gcs is base.startswith("gs://")
    assert d.same(root) and d.same(root + "/") and not d.same(root + "x")


def test_a_run_without_model_dir_keeps_its_files_beside_its_record():
    assert RunDir.for_run(None, "runs/", "r1").path == "runs/r1"
    assert RunDir.for_run("md", "runs", "r1").path == "md"


def test_a_records_config_leaves_the_batch_to_the_top_level():
    # Schema 2: a record says its batch once, as it ran (global_batch_size and
    # per_replica_batch_size at the top); the flags as given stay in `flags`.
    batch = {"batch_size", "global_batch_size", "per_replica_batch_size", "batch_sizes"}
    train = config.TrainConfig(global_batch_size=64, per_replica_batch_size=None).to_dict()
    infer = config.InferConfig(global_batch_sizes=(1, 8)).to_dict()
    bench = config.DataBenchConfig(batch_size=32).to_dict()
    for section in (train, infer, bench):
        assert not batch & set(section), section
    assert train["model"] == "mnist_mlp" and infer["num_batches"] == 100
