"""`tpubench-launch sweep --executor=skypilot`: one managed-job task per configuration,
each task YAML accepted by SkyPilot's own task schema."""

import subprocess
import sys

import pytest
import yaml

from tpubench_launch import errors, sweep
from tpubench_launch.executors import skypilot

SWEEP = """
name: spot
grid:
  models: [resnet50]
  machines: [gcp:n1-standard-8+2xgcp:v100, gcp:c2-standard-8, gcp:tpu-v5e-8]
  batch_sizes: [256]
flags: {train_steps: 2000, use_synthetic_data: true}
estimate: {seconds: 600}
cloud: {bucket: gs://my-bucket/tb, spot: true}
"""


def _tasks(tmp_path, text=SWEEP):
    path = tmp_path / "spot.yaml"
    path.write_text(text)
    sw = sweep.load(str(path), "skypilot", str(tmp_path / "runs"))
    s = skypilot.settings(sw)
    return [skypilot.task(c, sw, s) for c in sw.configs]


def test_task_yamls_pass_skypilots_own_schema(tmp_path):
    schemas = pytest.importorskip("sky.utils.schemas", reason="pip install -e '.[launch-check]'")
    from sky.utils import common_utils

    tasks = _tasks(tmp_path)
    for t in tasks:
        common_utils.validate_schema(t, schemas.get_task_schema(), "Invalid task YAML: ")
        assert t["resources"]["use_spot"] is True
        assert "--results_dir=gs://my-bucket/tb/records" in t["run"]
        assert "--pricing=spot" in t["run"]
    gpu, cpu, tpu = (t["resources"] for t in tasks)
    assert gpu["instance_type"] == "n1-standard-8" and gpu["accelerators"] == {"V100": 2}
    assert "accelerators" not in cpu and "tpubench[cpu]" in tasks[1]["setup"]
    assert tpu["accelerators"] == "tpu-v5litepod-8" and tpu["accelerator_args"]["tpu_vm"]
    assert "--tpu=local" in tasks[2]["run"]
    bad = dict(tasks[0], resourcez={})
    with pytest.raises(Exception, match="resourcez"):
        common_utils.validate_schema(bad, schemas.get_task_schema(), "Invalid task YAML: ")


def test_dry_run_prints_the_tasks_and_managed_job_launches(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SWEEP.replace("spot: true", "spot: false").replace(", gcp:tpu-v5e-8", ""))
    out = subprocess.run(
        [sys.executable, "-m", "tpubench_launch.main", "sweep", str(path), "--dry-run",
         "--executor=skypilot", f"--results-dir={tmp_path / 'runs'}"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    launches = [x for x in out.stdout.splitlines() if x.startswith("sky jobs launch --yes")]
    assert len(launches) == 2
    first = out.stdout.split("# task file ")[1].split("\nsky jobs launch")[0]
    doc = yaml.safe_load("\n".join(x[2:] for x in first.splitlines()[1:]))
    assert doc["resources"]["accelerators"] == {"V100": 2}
    assert not (tmp_path / "runs" / "skypilot").exists()  # a dry run writes nothing


@pytest.mark.parametrize(
    "grid,expect",
    [
        ("machines: [gcp:tpu-v4-32]", "single-host slices"),
        (
            "machines: [gcp:n1-standard-8]\n  strategies: [{strategy: multi_worker, workers: 2}]",
            "spans several VMs",
        ),
    ],
)
def test_what_skypilot_does_not_run_is_one_line(tmp_path, grid, expect):
    text = SWEEP.replace(
        "machines: [gcp:n1-standard-8+2xgcp:v100, gcp:c2-standard-8, gcp:tpu-v5e-8]", grid
    )
    with pytest.raises(errors.UsageError, match=expect):
        _tasks(tmp_path, text)
