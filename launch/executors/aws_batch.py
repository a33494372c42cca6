"""AWS Batch through the aws CLI: each configuration is one Batch job on a job queue.

A renting executor of a second cloud, in one module: it owns its `cloud:`
keys (the job queue, the job definition, the region), its storage scheme
(an s3:// bucket), its tool (`aws` on PATH) and its copy-back (`aws s3
sync`).  What it hosts is declared below and checked by the one hosting
check (tpubench/core/hosting.py) before anything is submitted: AWS machines
(`aws:g4dn.xlarge`, `aws:c5.xlarge`), CPU or GPU, one job per configuration
(no TPU, no cluster: a Batch job here is one container).

A run is a cloud.Plan: the waiter (this module run as a program) submits the
job with `aws batch submit-job`, keeps its id in a file under the sweep's
logs and polls `aws batch describe-jobs` until it SUCCEEDED or FAILED; the
records come back with `aws s3 sync`; teardown runs `aws batch
terminate-job` unless the job succeeded (a failure, a lost job, Ctrl-C or
SIGTERM).  The job definition names the container image (tpubench and the
`aws` CLI installed): it chooses the code, so it needs --trust-code
(launch/trust.py).  tpubench writes no s3:// itself: the job runs in a folder
of its container and syncs its records (and an s3:// --data_dir) itself.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time

from tpubench.children import command
from tpubench.core import errors as core_errors
from tpubench.core import safe_files
from tpubench_launch import errors, executors
from tpubench_launch.executors import base, cloud, rented, shared

SETTINGS = (
    "bucket",
    "spot",
    "overhead_seconds",
    "name_prefix",
    "region",
    "job_queue",
    "job_definition",
)
_NAME = r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}"
_ARN = r"arn:aws[a-z-]*:batch:[a-z0-9-]+:[0-9]{12}:"
RULES = {
    "region": (re.compile(r"[a-z]{2}(-gov)?-[a-z]+-[0-9]"), "an AWS region such as us-east-1"),
    "job_queue": (
        re.compile(rf"{_NAME}|{_ARN}job-queue/{_NAME}"),
        "a Batch job queue's name (1-128 letters, digits, '-' or '_') or its ARN",
    ),
    "job_definition": (
        re.compile(rf"({_NAME}|{_ARN}job-definition/{_NAME})(:[0-9]{{1,9}})?"),
        "a Batch job definition's name, name:revision or ARN",
    ),
}
CODE_SETTINGS = {
    "job_definition": "the AWS Batch job definition (its container image) every job runs"
}
POLL_SECONDS = 15.0
WORK = "tpubench-job"  # the job's folder in its container: records/, model_dirs/, data/


def check_aws() -> None:
    if shutil.which("aws") is None:
        raise errors.CloudError(
            "aws not found on PATH: install the AWS CLI and run `aws configure`, or add "
            "--dry-run to print the commands"
        )


def aws(s: rented.Settings, *args: str) -> list[str]:
    region = s.own.get("region")
    return ["aws", *args, *([f"--region={region}"] if region else [])]


def job_script(config, s: rented.Settings) -> str:
    """The job's shell: tpubench in a folder of its own, then its records to the bucket."""
    local = dataclasses.replace(s, bucket=".")  # records/ and model_dirs/ in the job's folder
    data_dir = str(config.train_flags().get("data_dir") or "")
    fetch = ""
    extra = None
    if data_dir.startswith("s3://"):  # tpubench reads no s3://: the job copies it in first
        fetch = (
            command.shell(["aws", "s3", "sync", "--only-show-errors", data_dir, "data"]) + " && "
        )
        extra = {"data_dir": "data"}
    run = command.shell(["tpubench", config.command, *shared.remote_flags(config, local, extra)])
    up = command.shell(["aws", "s3", "sync", "--only-show-errors", "records", s.records])
    return (
        f"mkdir -p {WORK} && cd {WORK} && {fetch}{run}; rc=$?; "
        f"{up} || {{ [ $rc -ne 0 ] || rc=1; }}; exit $rc"
    )


def plan(config, sweep, s: rented.Settings, log_dir: str) -> cloud.Plan:
    # AWS machines, CPU or GPU, one container: what aws_batch declares, checked in base.plans.
    name = rented.vm_name(s, sweep.name, config.id)
    job_file = os.path.join(log_dir, config.id, f"{name}.job.json")
    overrides = {"command": ["bash", "-c", job_script(config, s)]}
    submit = aws(
        s,
        "batch",
        "submit-job",
        f"--job-name={name}",
        f"--job-queue={s.own['job_queue']}",
        f"--job-definition={s.own['job_definition']}",
        f"--container-overrides={json.dumps(overrides, separators=(',', ':'))}",
    )
    here = ["--job-file", job_file, "--region", s.own.get("region") or ""]
    waiter = command.python_argv(__name__, "wait", *here, "--", *submit)
    stop = command.python_argv(__name__, "terminate", *here)
    machine = config.settings["machine"]
    notes = [
        f"job queue {s.own['job_queue']} must offer {machine.split('+')[0]}"
        + (" as Spot capacity (cloud.spot)" if s.spot else ""),
        "waits: " + command.shell(aws(s, "batch", "describe-jobs", "--jobs", "JOB_ID")),
        "unless it succeeded: "
        + command.shell(aws(s, "batch", "terminate-job", "--job-id", "JOB_ID", "--reason", "...")),
    ]
    return cloud.Plan(
        config.id,
        setup=[],
        tasks=[(name, waiter)],
        trainers=[name],
        collect=[copy_back(config, s, sweep.results_dir)],
        teardown=[stop],
        notes=notes,
    )


def copy_back(config, s: rented.Settings, results_dir: str) -> list[str]:
    """The bucket's records here (tune's trials too: `s3 sync` copies every folder down)."""
    return aws(s, "s3", "sync", "--only-show-errors", s.records, results_dir)


def vms(config) -> int:
    return 1  # one job on one machine per configuration


@executors.REGISTRY.register
class AwsBatch(base.CloudExecutor):
    name = "aws_batch"
    title = "AWS Batch"
    providers = ("aws",)
    devices = ("cpu", "gpu")
    # No cluster: a job here is one container; AWS Batch's multi-node jobs are not driven.
    subcommands = ("train", "infer", "tune")
    settings_keys = SETTINGS
    own_settings = ("region", "job_queue", "job_definition")
    code_settings = CODE_SETTINGS
    setting_rules = RULES
    required = ("bucket", "job_queue", "job_definition")
    example = "cloud: {bucket: s3://my-bucket/tb, job_queue: gpu-queue, job_definition: tpubench}"
    scheme = "s3://"
    machine_example = "aws:g4dn.xlarge or aws:c5.xlarge"
    machines = "instance"
    setup = "queue, pull the image and stop"
    installs_package = False  # the job definition's image holds tpubench

    def code_lines(self, settings) -> list[str]:
        return [
            f"# every job runs job definition {settings.own['job_definition']}'s container image "
            "(cloud.job_definition)"
        ]

    def check_tools(self) -> None:
        check_aws()

    def copy_back(self, config, settings, results_dir: str) -> list[str]:
        return copy_back(config, settings, results_dir)

    plan = staticmethod(plan)
    vms = staticmethod(vms)


def _call(argv: list[str]) -> tuple[int, dict | None, str]:
    """(exit code, the JSON it printed or None, its last error line) of one aws call."""
    p = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    said = (p.stderr.strip().splitlines() or [""])[-1][:300]
    try:
        return p.returncode, json.loads(p.stdout or "null"), said
    except ValueError:
        return p.returncode, None, said


def _note(job_file: str, job_id: str, status: str) -> None:
    os.makedirs(os.path.dirname(job_file) or ".", exist_ok=True)
    with open(job_file + ".tmp", "w") as f:
        json.dump({"jobId": job_id, "status": status}, f)
    os.replace(job_file + ".tmp", job_file)  # the teardown reads it whole or not at all


def wait(job_file: str, region: str, submit: list[str], poll: float = POLL_SECONDS) -> int:
    """Submits the job, keeps its id in JOB_FILE, polls it to its end: 0 when it SUCCEEDED."""
    rc, out, said = _call(submit)
    job_id = (out or {}).get("jobId") if isinstance(out, dict) else None
    if rc or not job_id:
        print(f"aws batch submit-job failed (exit code {rc}): {said or 'no job id'}", flush=True)
        return rc or 1
    _note(job_file, job_id, "SUBMITTED")
    print(f"submitted AWS Batch job {job_id}", flush=True)
    where = [f"--region={region}"] if region else []
    misses, last = 0, ""
    while True:
        rc, out, said = _call(["aws", "batch", "describe-jobs", "--jobs", job_id, *where])
        jobs = (out or {}).get("jobs") if isinstance(out, dict) else None
        if rc or not jobs:
            misses += 1
            if misses >= 5:
                print(f"job {job_id}: describe-jobs failed 5 times: {said}", flush=True)
                return 1
        else:
            misses, status = 0, str(jobs[0].get("status"))
            _note(job_file, job_id, status)
            if status != last:
                print(f"job {job_id}: {status}", flush=True)
                last = status
            if status == "SUCCEEDED":
                return 0
            if status == "FAILED":
                why = jobs[0].get("statusReason") or "no reason given"
                print(f"job {job_id} FAILED: {why}", flush=True)
                return 1
        time.sleep(poll)


def terminate(job_file: str, region: str) -> int:
    """terminate-job for the job JOB_FILE names unless it succeeded (none submitted: nothing)."""
    try:
        job = json.loads(safe_files.read_text(job_file, "job file", 1 << 16, "a job id file"))
    except (OSError, ValueError, core_errors.TpubenchError):
        return 0  # nothing was submitted (or no readable job file: nothing to terminate)
    if job.get("status") == "SUCCEEDED":
        return 0
    where = [f"--region={region}"] if region else []
    reason = "tpubench-launch: the run failed or was stopped"
    argv = ["aws", "batch", "terminate-job", "--job-id", job["jobId"], "--reason", reason]
    return subprocess.run([*argv, *where], stdin=subprocess.DEVNULL).returncode


def main(argv: list[str] | None = None) -> int:
    """`wait ... -- SUBMIT-ARGV` or `terminate ...`: the plan's task and its teardown."""
    argv = sys.argv[1:] if argv is None else argv
    cut = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser(prog="aws_batch", description="tpubench-launch's Batch waiter")
    p.add_argument("action", choices=("wait", "terminate"))
    p.add_argument("--job-file", required=True)
    p.add_argument("--region", default="")
    p.add_argument("--poll", type=float, default=POLL_SECONDS)
    a = p.parse_args(argv[:cut])
    if a.action == "terminate":
        return terminate(a.job_file, a.region)
    return wait(a.job_file, a.region, argv[cut + 1 :], a.poll)


if __name__ == "__main__":
    sys.exit(main())
