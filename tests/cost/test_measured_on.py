"""A price only for the hardware that ran: --machine must carry the run's accelerators,
anything else is a what-if (--price_as) marked "not measured there" in every table."""

import json
import pathlib
import shutil

import pytest
from conftest import run_cli

from tpubench.core import errors
from tpubench.core.config import AdviseConfig, CostConfig
from tpubench.cost import catalog, detect, measured_on, runs
from tpubench.report import advise, load

T4_VM = "gcp:n1-standard-8+1xgcp:t4"
FIXTURES = pathlib.Path(__file__).parents[1] / "report" / "fixtures"


@pytest.fixture(scope="module")
def cat():
    return catalog.load()


def gpus(name, n=1):
    return [{"kind": "gpu", "name": name}] * n


@pytest.mark.parametrize(
    "spec, ran, why",
    [
        (T4_VM, None, "carries 1 x t4, but this run used no accelerator"),
        ("gcp:n1-standard-8", gpus("Tesla T4"), "carries no accelerators (CPU only), but this run"),
        ("gcp:n1-standard-8+1xgcp:v100", gpus("Tesla T4"), "but this run used 1 x Tesla T4 (t4)"),
        ("gcp:a3-highgpu-1g", gpus("NVIDIA H100 80GB HBM3", 2), "carries 1 x h100, but"),
        ("gcp:tpu-v5e-8", gpus("Tesla T4"), "carries 8 x tpu-v5e, but"),
    ],
)
def test_a_machine_without_the_runs_accelerators_is_refused(cat, spec, ran, why):
    line = measured_on.mismatch(spec, cat, detect.detect(ran or []))
    assert why in line and f"--price_as={spec}" in line and "\n" not in line
    with pytest.raises(errors.UsageError, match="a run is priced only as hardware like"):
        runs.prices(CostConfig(machine=(spec,)), ran or [])


@pytest.mark.parametrize(
    "spec, ran",
    [
        ("gcp:n1-standard-1", None),  # a CPU run as a CPU VM of another size: the documented rule
        ("gcp:n1-standard-8+4xgcp:v100", gpus("Tesla V100-SXM2-16GB", 4)),
        ("gcp:a3-highgpu-8g", gpus("NVIDIA H100 80GB HBM3", 2)),  # a whole machine, part used
    ],
)
def test_a_machine_carrying_what_ran_is_priced(cat, spec, ran):
    assert measured_on.mismatch(spec, cat, detect.detect(ran or [])) is None
    assert runs.prices(CostConfig(machine=(spec,)), ran or []).hourly


@pytest.mark.parametrize(
    "flags, says",
    [
        ([f"--machine={T4_VM}"], "will use no GPU: CUDA_VISIBLE_DEVICES='-1' hides every GPU"),
        (["--machine=gcp:tpu-v5e-8", "--accelerator=cpu"], "will use no TPU: --accelerator=cpu"),
        (["--machine=gcp:tpu-v5e-8"], "will use no TPU: no TPU here, no --tpu"),
    ],
)
def test_train_refuses_in_one_line_before_tensorflow_with_no_record(tmp_path, flags, says):
    results = tmp_path / "results"
    proc, record = run_cli(
        "train", *flags, "--train_steps=5", results_dir=results, env={"CUDA_VISIBLE_DEVICES": "-1"}
    )
    assert proc.returncode == 2 and record is None and not results.exists()
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "--price_as=" in lines[0], proc.stderr
    assert "tensorflow" not in proc.stderr.lower()


def test_a_what_if_is_priced_and_marked_not_measured_there(tmp_path):
    results = tmp_path / "results"
    proc, record = run_cli(
        "train",
        "--train_steps=12",
        f"--price_as={T4_VM}",
        f"--model_dir={tmp_path / 'm'}",
        results_dir=results,
        env={"COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    rows = record["cost"]["machines"]
    assert [bool(r.get("what_if")) for r in rows if r["pricing"] == "on_demand"] == [
        False,
        False,
        True,
    ]
    assert "gcp:n1-standard-8+gcp:t4 *" in proc.stdout
    assert measured_on.FOOTNOTE in proc.stdout
    run, _ = load.from_record(record, "r.json")
    assert run.not_measured == {"gcp:n1-standard-8+gcp:t4"}
    assert "*" not in run.dims["machine"]  # the configuration is what ran


def _fixtures(tmp_path, what_if: bool, accelerators=None):
    """The advise fixtures, the TPU v5e-4 runs' rows a what-if (or from a CPU run)."""
    for d in ("gpus", "tpus"):
        shutil.copytree(FIXTURES / d, tmp_path / d)
    for p in (tmp_path / "tpus").glob("resnet-tpu4-*.json"):
        rec = json.loads(p.read_text())
        for row in rec["cost"]["machines"]:
            row["what_if"] = what_if
            row["num_accelerators"] = 4
        if accelerators is not None:
            rec["hardware"]["accelerators"] = accelerators
        p.write_text(json.dumps(rec))
    return AdviseConfig(
        inputs=(str(tmp_path / "gpus"), str(tmp_path / "tpus")),
        model="resnet50",
        tf_version="2.21.0",
        price_catalog=str(FIXTURES / "prices" / "advise.csv"),
        deadline_seconds=3600,
    )


def _answer(text):
    return next(x.strip() for x in text.splitlines() if x.strip().startswith("on-demand:"))


@pytest.mark.parametrize("what_if, accelerators", [(True, None), (False, [])])
def test_advise_says_when_it_recommends_from_other_hardware(
    tmp_path, monkeypatch, what_if, accelerators
):
    monkeypatch.setenv("COLUMNS", "200")
    text = advise.advise(_fixtures(tmp_path, what_if, accelerators))
    t4 = "resnet50 · gcp:tpu-v5e-4 * · accelerator=tpu · replicas=4"
    assert _answer(text).startswith(
        f"on-demand: {t4} (not measured there: priced from runs on other hardware): 13.8 min"
    )
    assert measured_on.FOOTNOTE in text
    # measured there (TPU chips recorded): no mark
    quiet = advise.advise(_fixtures(tmp_path / "q", False, [{"kind": "tpu", "name": "TPU v5"}]))
    assert "*" not in _answer(quiet) and "not measured there" not in quiet
