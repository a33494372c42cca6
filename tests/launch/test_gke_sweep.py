"""`tpubench-launch sweep --executor=gke`: exact commands, and real runs against TEST DOUBLES.

No cluster is reachable here.  tests/launch/bin/kubectl and
tests/launch/bin/gcloud are test doubles (they record each call; kubectl can
be told to fail, to report a Failed condition or to stay pending); they are
put first on PATH so the launcher runs its real code path against them:
the manifest it writes, the waiter process, the record copy, the delete.
"""

import json
import os
import pathlib
import shlex
import subprocess
import sys

import sweep_records
import yaml
from conftest import sigint_when

from tpubench_launch.sweep import file as sweep_file

BIN = pathlib.Path(__file__).resolve().parent / "bin"
# cloud.image chooses the code every pod runs: the sweeps here are trusted (test_package.py
# holds the refusal without --trust-code).
LAUNCH = [sys.executable, "-m", "tpubench_launch.main", "sweep", "--trust-code"]
SWEEP = """
name: gk
runs:
  - {label: mlp-t4, machine: "gcp:n1-standard-8+1xgcp:t4", flags: {model: mnist_mlp, tiny: true}}
  - {label: rn-v5e, machine: "gcp:tpu-v5e-8", command: infer, flags: {model: resnet50}}
cloud: {bucket: gs://bkt/tb, image: "img:1", namespace: ml, queue: team-a}
"""
T4 = "tpubench-gk-8ff4d0e8"  # the hash of the label: Kubernetes names take no "_" or "."
V5E = "tpubench-gk-44147a80"


def _env(tmp_path, **extra):
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    env["GCLOUD_DOUBLE_LOG"] = str(tmp_path / "gcloud.jsonl")
    env["KUBECTL_DOUBLE_LOG"] = str(tmp_path / "kubectl.jsonl")
    env.update(extra)
    return env


def _launch(tmp_path, *args, text=SWEEP, **env):
    path = tmp_path / "gk.yaml"
    path.write_text(text)
    return subprocess.run(
        [*LAUNCH, str(path), "--executor=gke", *args],
        capture_output=True,
        text=True,
        env=_env(tmp_path, **env),
        cwd=tmp_path,
        timeout=120,
    )


def _calls(tmp_path, tool):
    path = tmp_path / f"{tool}.jsonl"
    if not path.exists():
        return []
    return [shlex.join(json.loads(x)) for x in path.read_text().splitlines()]


def _commands(label, name, kind):
    here = f"runs/sweeps/gk/logs/{label}"
    return [
        f"kubectl --namespace=ml apply -f {here}/{name}.yaml",
        f"{sys.executable} -P -m tpubench_launch.k8s.wait --kind={kind} --name={name} "
        f"--namespace=ml --logs={here}/{name}.pods.log",
        "gcloud storage rsync gs://bkt/tb/records runs/sweeps/gk",
        f"kubectl --namespace=ml delete -f {here}/{name}.yaml --ignore-not-found",
    ]


def test_dry_run_prints_the_exact_commands(tmp_path):
    out = _launch(tmp_path, "--dry-run")
    assert out.returncode == 0, out.stderr
    body = out.stdout.split("dry run: these commands would run, in this order:\n")[1]
    assert [x for x in body.splitlines() if not x.startswith("#")] == [
        *_commands("mlp-t4", T4, "job"),
        *_commands("rn-v5e", V5E, "jobset"),
    ]
    assert (
        "# pod runs: python3 -I -m tpubench infer --model=resnet50 --machine=gcp:tpu-v5e-8 "
        "--results_dir=gs://bkt/tb/records --tpu=local --run_label=rn-v5e" in body
    )
    assert "# n1-standard-8: 1 x nvidia-tesla-t4 per pod" in body
    assert _calls(tmp_path, "kubectl") == [] and _calls(tmp_path, "gcloud") == []
    assert not (tmp_path / "runs").exists()  # a dry run writes no manifest


def test_a_run_applies_waits_copies_records_and_deletes(tmp_path):
    bucket = tmp_path / "buckets/bkt/tb/records"
    bucket.mkdir(parents=True)
    text = SWEEP.replace("  - {label: rn-v5e", "  # - {label: rn-v5e")
    (tmp_path / "gk.yaml").write_text(text)
    (mlp,) = sweep_file.load(str(tmp_path / "gk.yaml"), "gke", trust_code=True).configs
    sweep_records.write(bucket, mlp, "r1", "gs://bkt/tb/model_dirs/mlp-t4")  # a run of it
    out = _launch(tmp_path, text=text, GCLOUD_DOUBLE_BUCKETS=str(tmp_path / "buckets"))
    # The record is in the bucket before the run: resume copies it first and skips it.
    assert out.returncode == 0, out.stderr
    assert "1 configuration(s), 1 already recorded" in out.stdout
    assert _calls(tmp_path, "kubectl") == []
    (tmp_path / "runs/sweeps/gk/r1.json").unlink()
    (bucket / "r1.json").unlink()

    out = _launch(tmp_path, text=text)
    assert out.returncode == 0, out.stderr
    here = f"runs/sweeps/gk/logs/mlp-t4/{T4}"
    assert _calls(tmp_path, "kubectl") == [
        f"--namespace=ml apply -f {here}.yaml",
        f"--namespace=ml get job {T4} -o json",
        f"--namespace=ml logs -l tpubench/run={T4} --all-containers=true --prefix=true --tail=-1",
        f"--namespace=ml delete -f {here}.yaml --ignore-not-found",
    ]
    job = yaml.safe_load((tmp_path / f"{here}.yaml").read_text())
    pod = job["spec"]["template"]["spec"]
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
    assert pod["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-tesla-t4"}
    want = {"cpu": 7, "memory": "25Gi", "nvidia.com/gpu": 1}  # one n1-standard-8 node's
    assert pod["containers"][0]["resources"] == {"requests": want, "limits": want}
    assert pod["containers"][0]["args"] == [
        "--model=mnist_mlp",
        "--machine=gcp:n1-standard-8+1xgcp:t4",
        "--tiny",
        "--results_dir=gs://bkt/tb/records",
        "--model_dir=gs://bkt/tb/model_dirs/mlp-t4",
        "--run_label=mlp-t4",
    ]
    logs = (tmp_path / f"{here}.pods.log").read_text()
    assert "pod output line 2 (kubectl TEST DOUBLE)" in logs
    assert f"job {T4} completed (Complete)" in out.stdout


def test_a_failed_job_is_one_line_and_still_deleted(tmp_path):
    out = _launch(tmp_path, KUBECTL_DOUBLE_STATUS="failed")
    assert out.returncode == 1
    lines = [x for x in out.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert lines[0].startswith(
        "tpubench-launch sweep: error: 2 of 2 configuration(s) failed (mlp-t4, rn-v5e); first: "
        f"mlp-t4: task {T4} exited with code 1"
    )
    assert f"(error: job {T4} failed: BackoffLimitExceeded: Job has reached" in lines[0]
    calls = _calls(tmp_path, "kubectl")
    assert sum("delete -f" in c for c in calls) == 2 and calls[-1].endswith("--ignore-not-found")


def test_a_failed_apply_still_deletes(tmp_path):
    out = _launch(tmp_path, KUBECTL_DOUBLE_FAIL="apply")
    assert out.returncode == 1
    calls = _calls(tmp_path, "kubectl")
    assert [c.split()[1] for c in calls] == ["apply", "delete", "apply", "delete"]


def test_sigint_while_waiting_deletes_the_job(tmp_path):
    path = tmp_path / "gk.yaml"
    path.write_text(SWEEP)
    proc = subprocess.Popen(
        [*LAUNCH, str(path), "--executor=gke"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path, KUBECTL_DOUBLE_STATUS="pending"),
        cwd=tmp_path,
    )
    stderr = sigint_when(
        proc, lambda: any(" get job " in c for c in _calls(tmp_path, "kubectl")), timeout=60
    )
    assert proc.returncode == 130, stderr
    assert "interrupted (SIGINT) during mlp-t4" in stderr
    calls = _calls(tmp_path, "kubectl")
    assert calls[-1] == (
        f"--namespace=ml delete -f runs/sweeps/gk/logs/mlp-t4/{T4}.yaml --ignore-not-found"
    )
    assert not any("rn-v5e" in c for c in calls)  # the sweep stopped there


def test_settings_and_kubectl_errors(tmp_path):
    out = _launch(tmp_path, "--dry-run", text=SWEEP.replace('image: "img:1", ', ""))
    assert out.returncode == 2
    assert "--executor=gke needs cloud.image (e.g. cloud: {bucket: gs://" in out.stderr
    multi = SWEEP.replace("flags: {model: mnist_mlp", "strategy: multi_worker, flags: {model: x")
    out = _launch(tmp_path, "--dry-run", text=multi)
    assert (
        out.returncode == 2
        and (
            "--executor=gke runs no clusters across machines, not multi_worker; --executor=gce or "
            "--executor=skypilot does"
        )
        in out.stderr.strip()
    )
    tune = SWEEP.replace("{label: mlp-t4, machine", "{label: mlp-t4, command: tune, machine")
    out = _launch(tmp_path, "--dry-run", text=tune)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "--executor=gke runs `train, infer`, not `tune`; --executor=gce" in out.stderr
    gcloud_only = tmp_path / "bin"
    gcloud_only.mkdir()
    (gcloud_only / "gcloud").symlink_to(BIN / "gcloud")
    out = _launch(tmp_path, PATH=str(gcloud_only))
    assert out.returncode == 1
    assert out.stderr.strip().startswith("tpubench-launch sweep: error: kubectl not found on PATH")


def test_the_written_manifests_pass_the_schemas(tmp_path):
    """The Job and the TPU JobSet as applied, against the CRD and Kubernetes schemas."""
    from manifest_checks import check

    text = SWEEP.replace("queue: team-a", "queue: team-a, spot: true")
    text = text.replace('"gcp:n1-standard-8+1xgcp:t4"', "gcp:c2-standard-8")  # has a spot price
    out = _launch(tmp_path, text=text)
    assert out.returncode == 0, out.stderr
    job = yaml.safe_load((tmp_path / f"runs/sweeps/gk/logs/mlp-t4/{T4}.yaml").read_text())
    jobset = yaml.safe_load((tmp_path / f"runs/sweeps/gk/logs/rn-v5e/{V5E}.yaml").read_text())
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"]["cloud.google.com/gke-spot"] == "true"
    assert pod["containers"][0]["command"] == ["python3", "-I", "-m", "tpubench", "infer"]
    check(job)
    check(jobset)


def test_a_threads_run_gets_whole_cores_a_node_can_give(tmp_path):
    """num_intra_threads sizes the pod's cores, capped at what one node offers pods."""
    text = SWEEP.replace(
        "flags: {model: mnist_mlp, tiny: true}}",
        "flags: {model: mnist_mlp, tiny: true, num_intra_threads: 4}}\n"
        '  - {label: hc8, machine: "gcp:n1-highcpu-8", flags: {model: mnist_mlp, '
        "num_intra_threads: 8}}",
    )
    out = _launch(tmp_path, "--dry-run", text=text)
    assert out.returncode == 0, out.stderr
    assert "1 x nvidia-tesla-t4 per pod, 4 cores and 25 GiB (requests = limits)" in out.stdout
    # 8 vCPUs less GKE's reservations and its own pods: 7 whole cores (8 would never schedule).
    assert (
        "CPU only per pod, 7 cores and 4 GiB (requests = limits) (8 threads; one n1-highcpu-8 "
        "node offers pods 7 cores)"
    ) in out.stdout
