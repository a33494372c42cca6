"""`tpubench-launch sweep --executor=aws_batch`: a second cloud's executor, end to end.

No AWS account is reachable here.  tests/launch/bin/aws is a test double (it
records each call, and `batch submit-job` runs the job's own command line
here, in a folder standing for its container, so a real `tpubench train`
writes a real record and syncs it to a folder standing for the s3:// bucket);
it is put first on PATH so the launcher runs its real code path: the waiter
process, the job id it keeps, `describe-jobs`, `s3 sync` back, and
`terminate-job` when the job did not succeed.
"""

import glob
import json
import os
import pathlib
import shlex
import subprocess
import sys

from conftest import one_line_error, sigint_when

BIN = pathlib.Path(__file__).resolve().parent / "bin"
# cloud.job_definition chooses the code every job runs: trusted here (refused without below).
LAUNCH = [sys.executable, "-m", "tpubench_launch.main", "sweep"]
CLOUD = "cloud: {bucket: s3://bkt/tb, job_queue: q1, job_definition: 'tb:3', region: us-east-1}"
SWEEP = f"""
name: ab
runs:
  - {{label: mlp-cpu, machine: "aws:c5.xlarge", flags: {{model: mnist_mlp, tiny: true,
      train_steps: 2}}}}
{CLOUD}
"""
JOB = "tpubench-ab-dd95d02a"  # rented.vm_name of the label
RECORDS = "s3://bkt/tb/records runs/sweeps/ab --region=us-east-1"


def _launch(tmp_path, *args, text=SWEEP, path=None, popen=False, **env):
    sweep = tmp_path / "ab.yaml"
    sweep.write_text(text)
    full = dict(os.environ, PATH=path or f"{BIN}:{os.environ['PATH']}")
    full.update(
        AWS_DOUBLE_LOG=str(tmp_path / "aws.jsonl"),
        AWS_DOUBLE_STATE=str(tmp_path / "batch"),
        AWS_DOUBLE_BUCKETS=str(tmp_path / "buckets"),
        AWS_DOUBLE_PATH=f"{BIN}:{os.path.dirname(sys.executable)}:/usr/bin:/bin",
        **env,
    )
    argv = [*LAUNCH, str(sweep), "--executor=aws_batch", *args]
    if popen:
        return subprocess.Popen(argv, env=full, cwd=tmp_path, text=True, stderr=subprocess.PIPE)
    return subprocess.run(argv, capture_output=True, text=True, env=full, cwd=tmp_path, timeout=300)


def _calls(tmp_path):
    path = tmp_path / "aws.jsonl"
    if not path.exists():
        return []
    return [shlex.join(json.loads(x)) for x in path.read_text().splitlines()]


def test_a_sweep_runs_a_real_job_and_copies_its_record_back(tmp_path):
    out = _launch(tmp_path, "--trust-code")
    assert out.returncode == 0, out.stdout + out.stderr
    records = glob.glob(str(tmp_path / "runs/sweeps/ab/*.json"))
    assert len(records) == 1, out.stdout
    with open(records[0]) as f:
        record = json.load(f)
    assert (
        record["run_label"] == "mlp-cpu"
        and record["cost"]["machines"][0]["machine"] == "aws:c5.xlarge"
    )
    calls = _calls(tmp_path)
    verbs = [" ".join(c.split()[:2]) for c in calls]
    # Earlier records first, then the job (it syncs its records up), its status, records back.
    assert verbs == ["s3 sync", "batch submit-job", "s3 sync", "batch describe-jobs", "s3 sync"]
    assert calls[0] == calls[-1] == f"s3 sync --only-show-errors {RECORDS}"
    assert f"--job-name={JOB} --job-queue=q1 --job-definition=tb:3" in calls[1]
    assert calls[2].endswith("records s3://bkt/tb/records")  # run in the job's own folder
    assert calls[3] == "batch describe-jobs --jobs job-1 --region=us-east-1"
    assert "job-1: SUCCEEDED" in out.stdout
    again = _launch(tmp_path, "--trust-code")  # resumed: the record is the configuration's
    assert again.returncode == 0 and "1 already recorded" in again.stdout, again.stdout


def test_a_failed_job_is_terminated_and_its_records_still_come_back(tmp_path):
    out = _launch(tmp_path, "--trust-code", AWS_DOUBLE_STATUS="FAILED")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "job job-1 FAILED: Host EC2 (instance i-0abc) terminated." in out.stdout
    calls = _calls(tmp_path)
    assert [" ".join(c.split()[:2]) for c in calls[1:]] == [
        "batch submit-job",
        "batch describe-jobs",
        "s3 sync",
        "batch terminate-job",
    ]
    assert calls[-1].startswith("batch terminate-job --job-id job-1 --reason")


def test_an_interrupt_terminates_the_running_job(tmp_path):
    proc = _launch(tmp_path, "--trust-code", popen=True, AWS_DOUBLE_STATUS="RUNNING")
    stderr = sigint_when(proc, lambda: "describe-jobs" in " ".join(_calls(tmp_path)), 60)
    assert proc.returncode == 130, stderr
    assert "interrupted (SIGINT) during mlp-cpu" in stderr
    assert _calls(tmp_path)[-1].startswith("batch terminate-job --job-id job-1 ")
    with open(tmp_path / "batch/job-1.json") as f:
        assert json.load(f)["status"] == "FAILED"  # the stand-in's job was stopped


def test_what_it_does_not_host_is_refused_in_one_line_before_any_call(tmp_path):
    cases = {
        'machine: "gcp:tpu-v5e-8"': "--executor=aws_batch rents aws machines, not gcp:tpu-v5e-8 "
        "(gcp); --executor=gke, --executor=skypilot or --executor=tpu-vm does",
        'machine: "aws:c5.xlarge", strategy: multi_worker, workers: 2': "--executor=aws_batch "
        "runs no clusters across machines, not multi_worker",
        'machine: "aws:c5.xlarge", strategy: multi_worker, workers: 2, one_machine: true': "--ex"
        "ecutor=aws_batch runs no clusters on one machine (one_machine: true), not multi_worker",
    }
    for run, said in cases.items():
        text = f"name: ab\nruns:\n  - {{label: x, {run}}}\n{CLOUD}\n"
        out = _launch(tmp_path, "--trust-code", text=text)
        assert out.returncode == 2, out.stderr
        assert one_line_error(out).endswith(said), out.stderr
        assert _calls(tmp_path) == []  # nothing submitted, nothing copied


def test_its_settings_are_its_own_and_refused_in_one_line(tmp_path):
    run = 'runs: [{label: x, machine: "aws:g4dn.xlarge"}]'
    cases = {
        "{bucket: gs://bkt/tb, job_queue: q1, job_definition: d}": "cloud.bucket=gs://bkt/tb "
        "must be a s3:// path (--executor=aws_batch's machines write there)",
        "{bucket: s3://b/tb, job_queue: q1}": "--executor=aws_batch needs cloud.job_definition",
        "{bucket: s3://b/tb, job_queue: 'a b', job_definition: d}": "cloud.job_queue='a b' is "
        "refused; accepted: a Batch job queue's name",
        "{bucket: s3://b/tb, job_queue: q, job_definition: d, project: proj-42}": "--executor="
        "aws_batch does not read cloud.project; it reads bucket, spot",
        "{bucket: s3://b/tb, job_queue: q, job_definition: d, region: mars}": "cloud.region="
        "'mars' is refused; accepted: an AWS region such as us-east-1",
    }
    for cloud, said in cases.items():
        out = _launch(tmp_path, "--trust-code", text=f"name: ab\n{run}\ncloud: {cloud}\n")
        assert out.returncode == 2, out.stderr
        assert said in one_line_error(out), out.stderr
    out = _launch(tmp_path)  # the job definition chooses the image: code
    assert "cloud.job_definition=tb:3 chooses the AWS Batch job definition" in one_line_error(out)
    assert _calls(tmp_path) == []


def test_a_missing_aws_tool_is_one_line_and_a_dry_run_needs_none(tmp_path):
    bare = "/usr/bin:/bin"
    out = _launch(tmp_path, "--trust-code", path=bare)
    assert out.returncode == 1
    assert one_line_error(out).endswith(
        "aws not found on PATH: install the AWS CLI and run `aws configure`, or add --dry-run "
        "to print the commands"
    )
    out = _launch(tmp_path, "--trust-code", "--dry-run", path=bare)
    assert out.returncode == 0, out.stderr
    assert "$0.170" in out.stdout  # the catalog's aws:c5.xlarge row prices the preview
    assert f"aws_batch wait --job-file runs/sweeps/ab/logs/mlp-cpu/{JOB}.job.json" in out.stdout


def test_check_cloud_asks_the_one_hosting_check_of_each_machine(tmp_path):
    cloud = tmp_path / "c.yaml"
    machines = '{"1 GPU": "aws:g4dn.xlarge", TPU: "gcp:tpu-v4-32", CPU: "gcp:n1-standard-8"}'
    cloud.write_text(f"bucket: s3://b/tb\nmachines: {machines}\n")
    argv = [sys.executable, "-m", "tpubench_launch.main", "executors", f"--check-cloud={cloud}"]
    out = subprocess.run([*argv, "--json"], capture_output=True, text=True, check=True)
    found = {e["name"]: e["machines"] for e in json.loads(out.stdout)}
    assert found["aws_batch"]["1 GPU"] is None and found["gce"]["CPU"] is None
    assert found["aws_batch"]["TPU"] == (
        "--executor=aws_batch rents aws machines, not gcp:tpu-v4-32 (gcp); --executor=tpu-vm does"
    )
    assert found["gke"]["TPU"] == (
        "--executor=gke runs single-host TPU slices, not gcp:tpu-v4-32 (4 hosts); "
        "--executor=tpu-vm does"
    )
    assert set(found["local"].values()) == {None}  # this host: nothing rented
    lines = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.splitlines()
    at = lines.index(next(x for x in lines if x.startswith("gce: ")))
    assert lines[at + 1] == (
        "  1 GPU: --executor=gce rents gcp machines, not aws:g4dn.xlarge (aws); "
        "--executor=aws_batch does"
    )
