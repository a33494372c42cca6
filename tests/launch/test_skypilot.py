"""`tpubench-launch sweep --executor=skypilot`: one managed-job task per configuration,
each task YAML accepted by SkyPilot's own task schema."""

import dataclasses
import json
import re
import subprocess
import sys

import pytest
import yaml

from tpubench_launch import errors, executors
from tpubench_launch.executors import skypilot
from tpubench_launch.sweep import file as sweep_file

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


def _sweep(tmp_path, text=SWEEP):
    path = tmp_path / "spot.yaml"
    path.write_text(text)
    return sweep_file.load(str(path), "skypilot", str(tmp_path / "runs"))


def _tasks(tmp_path, text=SWEEP):
    path = tmp_path / "spot.yaml"
    path.write_text(text)
    sw = sweep_file.load(str(path), "skypilot", str(tmp_path / "runs"))
    s = executors.REGISTRY.get("skypilot").settings(sw, dry_run=True)
    return [skypilot.task(c, sw, s) for c in sw.configs]


def test_task_yamls_pass_skypilots_own_schema(tmp_path):
    schemas = pytest.importorskip("sky.utils.schemas", reason="pip install -e '.[launch-check]'")
    from sky.utils import common_utils

    tasks = _tasks(tmp_path)
    for t in tasks:
        common_utils.validate_schema(t, schemas.get_task_schema(), "Invalid task YAML: ")
        common_utils.validate_schema(
            t["resources"], schemas.get_resources_schema(), "Invalid resources: "
        )
        assert t["resources"]["use_spot"] is True
        assert "--results_dir=gs://my-bucket/tb/records" in t["run"]
        assert "--pricing=spot" in t["run"]
    gpu, cpu, tpu = (t["resources"] for t in tasks)
    assert gpu["instance_type"] == "n1-standard-8" and gpu["accelerators"] == {"V100": 2}
    assert "accelerators" not in cpu and "-py3-none-any.whl[cpu]" in tasks[1]["setup"]
    assert all("--require-hashes" in t["setup"] and t["file_mounts"] for t in tasks)
    assert tpu["accelerators"] == "tpu-v5litepod-8" and tpu["accelerator_args"]["tpu_vm"]
    assert "--tpu=local" in tasks[2]["run"]
    bad = dict(tasks[0], resourcez={})
    with pytest.raises(Exception, match="resourcez"):
        common_utils.validate_schema(bad, schemas.get_task_schema(), "Invalid task YAML: ")
    bad = dict(tasks[0]["resources"], instance_typ="n1-standard-8")
    with pytest.raises(Exception, match="instance_typ"):
        common_utils.validate_schema(bad, schemas.get_resources_schema(), "Invalid resources: ")


MULTI = SWEEP.replace(
    "machines: [gcp:n1-standard-8+2xgcp:v100, gcp:c2-standard-8, gcp:tpu-v5e-8]",
    "machines: [gcp:n1-standard-8+1xgcp:t4]\n  strategies: [{strategy: multi_worker, workers: 3}]",
)


def test_a_multi_worker_sweep_runs_on_several_skypilot_nodes(tmp_path):
    """num_nodes VMs; each node's TF_CONFIG from SkyPilot's node IPs and its rank."""
    schemas = pytest.importorskip("sky.utils.schemas", reason="pip install -e '.[launch-check]'")
    from sky.utils import common_utils

    (t,) = _tasks(tmp_path, MULTI)
    common_utils.validate_schema(t, schemas.get_task_schema(), "Invalid task YAML: ")
    common_utils.validate_schema(t["resources"], schemas.get_resources_schema(), "Invalid: ")
    assert t["num_nodes"] == 3 and t["resources"]["accelerators"] == {"T4": 1}
    assert "--strategy=multi_worker" in t["run"] and "--model_dir=gs://my-bucket/tb/" in t["run"]
    # The run's first line, as a node would run it (no tpubench: only TF_CONFIG is echoed).
    export = t["run"].split("set -o pipefail")[0]
    ips = "10.1.0.7\n10.1.0.3\n10.1.0.9\n"
    for rank in range(3):
        env = {"SKYPILOT_NODE_IPS": ips, "SKYPILOT_NODE_RANK": str(rank), "PATH": "/usr/bin:/bin"}
        out = subprocess.run(["bash", "-c", export + 'echo "$TF_CONFIG"'], env=env,
                             capture_output=True, text=True, check=True)  # fmt: skip
        assert json.loads(out.stdout) == {
            "cluster": {"worker": ["10.1.0.7:2222", "10.1.0.3:2222", "10.1.0.9:2222"]},
            "task": {"type": "worker", "index": rank},
        }


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
        (
            "machines: [gcp:tpu-v4-32]",
            r"--executor=skypilot runs single-host TPU slices, not gcp:tpu-v4-32 \(4 hosts\); "
            "--executor=tpu-vm does$",
        ),
        (
            "machines: [gcp:n1-standard-8]\n"
            "  strategies: [{strategy: parameter_server, workers: 2}]",
            "--executor=skypilot runs multi_worker clusters across machines, not "
            "parameter_server; --executor=gce does$",
        ),
        (
            "machines: [gcp:tpu-v5e-8]\n  strategies: [{strategy: multi_worker, workers: 2}]",
            "runs a TPU slice as one TPUStrategy run, not a multi_worker cluster$",
        ),
    ],
)
def test_what_skypilot_does_not_run_is_one_line(tmp_path, grid, expect):
    """What skypilot declares it does not host is refused by the one check (core/hosting.py),
    before any plan: one line naming the value, what it runs, and who does."""
    text = SWEEP.replace(
        "machines: [gcp:n1-standard-8+2xgcp:v100, gcp:c2-standard-8, gcp:tpu-v5e-8]", grid
    )
    path = tmp_path / "spot.yaml"
    path.write_text(text)
    sw = sweep_file.load(str(path), "skypilot", str(tmp_path / "runs"))
    ex = executors.REGISTRY.get("skypilot")
    with pytest.raises(errors.UsageError, match=expect) as e:
        ex.plans(sw, list(sw.configs), ex.settings(sw, dry_run=True), str(tmp_path / "logs"))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "cloud,expect",
    [
        (
            "{bucket: gs://my-bucket/tb, port: abc}",
            "cloud.port='abc' is refused; accepted: a whole",
        ),
        ("{bucket: gs:/my-bucket/tb}", "cloud.bucket="),
        ("{bucket: gs://my-bucket/tb, spot: 'yes'}", "cloud.spot='yes' must be true or false"),
        ("{bucket: gs://b/tb, name_prefix: Bad_Prefix}", "cloud.name_prefix='Bad_Prefix'"),
        ("{bucket: gs://b/tb, namespace: ml}", "cloud.namespace is a"),
        ("{zone: us-central1-a}", "--executor=skypilot needs cloud.bucket"),
    ],
)
def test_skypilot_gets_the_cloud_checks_every_executor_gets(tmp_path, cloud, expect):
    """The same checks as gce and tpu-vm (names, numbers, the bucket, keys of another
    executor): a string where the port belongs is one line, not a traceback."""
    text = SWEEP.replace("cloud: {bucket: gs://my-bucket/tb, spot: true}", f"cloud: {cloud}")
    with pytest.raises(errors.UsageError, match=re.escape(expect)):
        _tasks(tmp_path, text)


def test_data_off_gs_is_refused_for_skypilot_as_for_the_other_cloud_executors(tmp_path):
    text = SWEEP.replace("use_synthetic_data: true", "data_dir: /home/me/imagenet")
    with pytest.raises(errors.UsageError, match="must be on gs:// for --executor=skypilot"):
        _tasks(tmp_path, text)


def test_a_renting_executor_owns_its_settings_and_still_gets_the_shared_checks(tmp_path):
    """A renting executor may read its own settings (the closed GCP list is gone), and its
    bucket's scheme is its own: a gs:// bucket for an s3:// executor is refused in one line."""
    from tpubench_launch.executors import base, rented

    class Lax(base.CloudExecutor):
        name = "lax"
        scheme = "s3://"
        settings_keys = (*rented.COMMON, "site")
        required = ("bucket", "site")
        example = "cloud: {bucket: s3://b/tb, site: us-east-1}"

        def settings(self, sweep, dry_run=False):  # its own, on top of the shared checks
            return self.read_settings(sweep)

        def check_tools(self):
            pass

        def copy_back(self, config, settings, results_dir):
            return ["true"]

        def plan(self, config, sweep, settings, log_dir):
            raise AssertionError("not reached")

    sw = dataclasses.replace(_sweep(tmp_path), cloud={"bucket": "gs://b/tb", "site": "x"})
    with pytest.raises(errors.UsageError, match=r"cloud.bucket=gs://b/tb must be a s3:// path"):
        Lax().settings(sw)
    sw = dataclasses.replace(sw, cloud={"bucket": "s3://b/tb", "site": "us-east-1"})
    s = Lax().settings(sw)
    assert s.own == {"site": "us-east-1"} and s.records == "s3://b/tb/records"
