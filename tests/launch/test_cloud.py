"""GCE and TPU-VM executors: exact dry-run commands, and real runs against a gcloud TEST DOUBLE.

The real cloud is out of reach here.  tests/launch/bin/gcloud is a test
double (it records each call and can be told to fail or stall); it is put
first on PATH so the launcher runs its real code path against it.
"""

import hashlib
import importlib.metadata
import json
import os
import pathlib
import re
import shlex
import signal
import subprocess
import sys
import time

import pytest

from tpubench_launch import wheel

BIN = pathlib.Path(__file__).resolve().parent / "bin"
LAUNCH = [sys.executable, "-m", "tpubench_launch.main"]

CPU_SWEEP = """
name: cpu
grid:
  machines: [gcp:c2-standard-8]
flags: {train_steps: 50, tiny: true}
estimate: {seconds: 60}
cloud:
  project: proj-42
  zone: us-central1-a
  bucket: gs://bkt/tb
  spot: true
"""
CPU_ID = "cfg-3cee2bfcb0"
VM = "tpubench-cpu-3cee2bfc"
WHERE = "--zone=us-central1-a --project=proj-42"
TRAIN = (
    "tpubench-venv/bin/python -I -m tpubench train --machine=gcp:c2-standard-8 --train_steps=50 "
    "--tiny --pricing=spot --results_dir=gs://bkt/tb/records "
    f"--model_dir=gs://bkt/tb/model_dirs/{CPU_ID} --run_label={CPU_ID}"
)
WHEEL = f"tpubench-{importlib.metadata.version('tpubench')}-py3-none-any.whl"


def install_script(sha256: str, extra: str = "cpu") -> str:
    """What each VM runs: the wheel built here installed alone by its hash, then its deps."""
    return (
        "set -e; cd ~; if ! python3 -I -c 'import ensurepip' 2>/dev/null; then sudo apt-get -qq "
        "update && sudo apt-get -qq install -y python3-venv >/dev/null; fi; python3 -I -m venv "
        "tpubench-venv; tpubench-venv/bin/pip install -q --upgrade pip; "
        f"printf '%s\\n' './{WHEEL} --hash=sha256:{sha256}' > tpubench-requirements.txt; "
        "tpubench-venv/bin/pip install -q --no-deps --require-hashes -r tpubench-requirements.txt; "
        f"tpubench-venv/bin/pip install -q './{WHEEL}[{extra}]'"
    )


def built_wheel(tmp_path, sweep="cpu") -> tuple[pathlib.Path, str]:
    """Where the launcher puts its wheel for SWEEP, and the sha256 of a build of the same files
    (the build is reproducible: a dry run's hash is the real run's)."""
    path = tmp_path / "runs" / "sweeps" / sweep / "package" / WHEEL
    return path, wheel.build(str(tmp_path / "expected-wheel")).sha256


def _sweep_file(tmp_path, text=CPU_SWEEP, name="sweep.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _launch(tmp_path, *args, env=None, **kw):
    full = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    full["GCLOUD_DOUBLE_LOG"] = str(tmp_path / "gcloud-calls.jsonl")
    full.update(env or {})
    return subprocess.run(
        [*LAUNCH, *map(str, args)],
        capture_output=True,
        text=True,
        env=full,
        cwd=tmp_path,
        timeout=120,
        **kw,
    )


def _calls(tmp_path):
    path = tmp_path / "gcloud-calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines()]


def _dry_run_commands(stdout):
    body = stdout.split("dry run: these commands would run, in this order:\n")[1]
    return [x for x in body.splitlines() if not x.startswith("#")]


def expected_cpu_commands(tmp_path):
    log = f"runs/sweeps/cpu/logs/{CPU_ID}/{VM}.log"
    wheel, sha256 = built_wheel(tmp_path)
    install = install_script(sha256)
    return [
        f"gcloud compute instances create {VM} {WHERE} --machine-type=c2-standard-8 "
        "--image-family=debian-12 --image-project=debian-cloud --boot-disk-size=100GB "
        "--scopes=cloud-platform --provisioning-model=SPOT --instance-termination-action=DELETE "
        f"--labels=tpubench-config={CPU_ID}",
        f"gcloud compute scp {wheel} '{VM}:~' {WHERE} --quiet",
        f"gcloud compute ssh {VM} {WHERE} --quiet {shlex.quote('--command=' + install)}",
        f"gcloud compute ssh {VM} {WHERE} --quiet "
        + shlex.quote(
            f"--command=set -o pipefail; cd ~; {TRAIN} 2>&1 | tee ~/tpubench-{CPU_ID}.log"
        ),
        f"gcloud compute scp '{VM}:~/tpubench-{CPU_ID}.log' {log} {WHERE} --quiet",
        "gcloud storage rsync gs://bkt/tb/records runs/sweeps/cpu",
        f"gcloud compute instances delete {VM} {WHERE} --quiet",
    ]


def test_gce_dry_run_prints_the_exact_commands_and_the_cost_preview(tmp_path):
    out = _launch(tmp_path, "sweep", _sweep_file(tmp_path), "--executor=gce", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert _dry_run_commands(out.stdout) == expected_cpu_commands(tmp_path)
    path, sha256 = built_wheel(tmp_path)
    said = f"# every VM installs tpubench {importlib.metadata.version('tpubench')}, built here"
    assert said in out.stdout and f"into {path}, by its sha256 {sha256}\n" in out.stdout
    assert not path.parent.exists()  # a dry run writes nothing: its wheel was built aside
    assert _calls(tmp_path) == []  # a dry run calls no gcloud
    # c2-standard-8 spot is $0.129/h (catalog); 60 s run + 300 s VM overhead.
    row = next(x for x in out.stdout.splitlines() if x.startswith(CPU_ID))
    assert row.split() == [CPU_ID, "$0.129", "0:06:00", "$0.0129", "estimate", "gcp:c2-standard-8"]
    assert (
        re.search(r"^total +0:06:00 +\$0\.0129 +1 to run$", out.stdout, re.M)
        and "\ndone " not in out.stdout
    )


def test_gce_runs_the_dry_run_commands_in_order(tmp_path):
    out = _launch(tmp_path, "sweep", _sweep_file(tmp_path), "--executor=gce")
    assert out.returncode == 0, out.stdout + out.stderr
    calls = [shlex.join(["gcloud", *c]) for c in _calls(tmp_path)]
    # First the records already in the bucket (resume), then exactly the dry run's commands.
    assert calls == [
        "gcloud storage rsync gs://bkt/tb/records runs/sweeps/cpu",
        *expected_cpu_commands(tmp_path),
    ]
    path, sha256 = built_wheel(tmp_path)  # the file copied is the one hashed
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256
    copied = tmp_path / f"runs/sweeps/cpu/logs/{CPU_ID}/{VM}.log"
    assert "copied by the gcloud TEST DOUBLE" in copied.read_text()


@pytest.mark.parametrize("fail_on", ["instances create", "tpubench train"])
def test_gce_deletes_the_vm_after_a_failure(tmp_path, fail_on):
    out = _launch(
        tmp_path,
        "sweep",
        _sweep_file(tmp_path),
        "--executor=gce",
        env={"GCLOUD_DOUBLE_FAIL": fail_on},
    )
    assert out.returncode == 1
    # gcloud's own complaint is shown as it came; the launcher adds one line.
    lines = [x for x in out.stderr.splitlines() if x.startswith("tpubench-launch")]
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.splitlines()[-1] == lines[0]
    assert lines[0].startswith(
        f"tpubench-launch sweep: error: 1 of 1 configuration(s) failed ({CPU_ID})"
    )
    calls = [" ".join(c) for c in _calls(tmp_path)]
    failed_at = next(i for i, c in enumerate(calls) if fail_on in c)
    assert calls[-1] == f"compute instances delete {VM} {WHERE} --quiet"
    if fail_on == "tpubench train":  # the run had started: logs and records come home first
        assert calls[failed_at + 1 :] == [
            f"compute scp {VM}:~/tpubench-{CPU_ID}.log runs/sweeps/cpu/logs/{CPU_ID}/{VM}.log "
            + WHERE
            + " --quiet",
            "storage rsync gs://bkt/tb/records runs/sweeps/cpu",
            f"compute instances delete {VM} {WHERE} --quiet",
        ]
    else:
        assert calls[failed_at + 1 :] == [f"compute instances delete {VM} {WHERE} --quiet"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_gce_deletes_the_vm_after_an_interrupt(tmp_path, sig):
    full = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    full.update(
        GCLOUD_DOUBLE_LOG=str(tmp_path / "gcloud-calls.jsonl"),
        GCLOUD_DOUBLE_SLEEP="tpubench train",
        GCLOUD_DOUBLE_SLEEP_SECONDS="60",
    )
    proc = subprocess.Popen(
        [*LAUNCH, "sweep", str(_sweep_file(tmp_path)), "--executor=gce"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 60
        while not any("tpubench train" in " ".join(c) for c in _calls(tmp_path)):
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert "interrupted" in stderr and "its VMs were deleted" in stderr
    calls = [" ".join(c) for c in _calls(tmp_path)]
    assert calls[-1] == f"compute instances delete {VM} {WHERE} --quiet"


def test_gce_multi_vm_cluster_gets_tf_config_right(tmp_path):
    text = CPU_SWEEP.replace(
        "machines: [gcp:c2-standard-8]",
        "machines: [gcp:n1-standard-8+2xgcp:v100]\n"
        "  strategies: [{strategy: parameter_server, workers: 2, ps: 1}]",
    ).replace("spot: true", "spot: false")
    out = _launch(tmp_path, "sweep", _sweep_file(tmp_path, text), "--executor=gce", "--dry-run")
    assert out.returncode == 0, out.stderr
    cmds = [shlex.split(c) for c in _dry_run_commands(out.stdout)]
    create = cmds[0]
    vms = [a for a in create[4:] if not a.startswith("--")]
    assert [v.rsplit("-", 1)[1] for v in vms] == ["c0", "w0", "w1", "p0"]
    assert "--accelerator=type=nvidia-tesla-v100,count=2" in create
    runs = [c for c in cmds if c[2] == "ssh" and "tpubench train" in c[-1]]
    assert [c[3] for c in runs] == vms
    dns = [f"{v}.us-central1-a.c.proj-42.internal:2222" for v in vms]
    for (role, index), run in zip(
        [("chief", 0), ("worker", 0), ("worker", 1), ("ps", 0)], runs, strict=True
    ):
        script = run[-1].removeprefix("--command=")
        tf_config = json.loads(shlex.split(script.split("export TF_CONFIG=")[1])[0].rstrip(";"))
        assert tf_config == {
            "cluster": {"chief": dns[:1], "worker": dns[1:3], "ps": dns[3:]},
            "task": {"type": role, "index": index},
        }
        assert "--strategy=parameter_server" in script
    # Four VMs priced: 4 x (n1-standard-8 0.379998 + 2 x V100 2.48).
    assert "$21.36" in out.stdout


def test_tpu_vm_single_host_and_pod_dry_run(tmp_path):
    text = """
name: tpu
grid:
  machines: [gcp:tpu-v5e-8, gcp:tpu-v4-32]
flags: {model: resnet50, use_synthetic_data: true, train_steps: 100}
cloud: {project: proj-42, zone: us-central2-b, bucket: gs://bkt/tb}
"""
    out = _launch(tmp_path, "sweep", _sweep_file(tmp_path, text), "--executor=tpu-vm", "--dry-run")
    assert out.returncode == 0, out.stderr
    cmds = [shlex.split(c) for c in _dry_run_commands(out.stdout)]
    creates = [c for c in cmds if c[4] == "create"]
    assert [c[-3:-1] for c in creates] == [
        ["--accelerator-type=v5litepod-8", "--version=v2-alpha-tpuv5-lite"],
        ["--accelerator-type=v4-32", "--version=tpu-ubuntu2204-base"],
    ]
    small, pod = creates[0][5], creates[1][5]
    runs = [c for c in cmds if c[4] == "ssh" and "tpubench train" in c[-1]]
    assert all("--worker=all" in c for c in runs)
    assert "--tpu=local" in runs[0][-1]  # one host: no API calls
    assert f"--tpu={pod}" in runs[1][-1]  # a pod: every host resolves the slice by name
    copies = [c for c in cmds if c[4] == "scp"]
    assert [c[-4] for c in copies if pod in c[5]] == [f"--worker={i}" for i in range(4)]
    assert cmds[-1] == [
        "gcloud",
        "compute",
        "tpus",
        "tpu-vm",
        "delete",
        pod,
        "--zone=us-central2-b",
        "--project=proj-42",
        "--quiet",
    ]
    assert sum(1 for c in cmds if c[4] == "delete" and c[5] == small) == 1
    assert "n/a" in out.stdout  # no estimate given: the preview says so


def test_cloud_settings_errors(tmp_path):
    bad = CPU_SWEEP.replace("bucket: gs://bkt/tb", "bucket: /local/dir")
    out = _launch(tmp_path, "sweep", _sweep_file(tmp_path, bad), "--executor=gce", "--dry-run")
    assert out.returncode == 2 and "cloud.bucket=/local/dir must be a gs:// path" in out.stderr
    # A key only the GKE executor reads (its own_settings) is refused for a VM one.
    gke_key = CPU_SWEEP.replace("bucket: gs://bkt/tb", "bucket: gs://bkt/tb\n  namespace: ml")
    out = _launch(tmp_path, "sweep", _sweep_file(tmp_path, gke_key), "--executor=gce", "--dry-run")
    assert out.returncode == 2
    assert "cloud.namespace is a GKE setting; it needs --executor=gke" in out.stderr
    tpu_on_gce = CPU_SWEEP.replace("gcp:c2-standard-8", "gcp:tpu-v5e-8")
    out = _launch(
        tmp_path, "sweep", _sweep_file(tmp_path, tpu_on_gce), "--executor=gce", "--dry-run"
    )
    assert out.returncode == 2
    assert out.stderr.strip().endswith(
        "--executor=gce runs on cpu, gpu, not tpu (gcp:tpu-v5e-8); --executor=gke, "
        "--executor=skypilot or --executor=tpu-vm does"
    )
    out = _launch(
        tmp_path, "sweep", _sweep_file(tmp_path), "--executor=gce", env={"PATH": str(tmp_path)}
    )
    assert out.returncode == 1 and "gcloud not found on PATH" in out.stderr
    out = _launch(tmp_path, "sweep", _sweep_file(tmp_path), "--executor=gce", "--max-cost=0.001")
    assert out.returncode == 2 and "over --max-cost=0.001; nothing was launched" in out.stderr
    assert _calls(tmp_path) == [["storage", "rsync", "gs://bkt/tb/records", "runs/sweeps/cpu"]]


@pytest.mark.parametrize("dry", [True, False])
def test_misspelt_flag_is_refused_before_any_vm(tmp_path, dry):
    """`flags: {train_step: ...}` fails at --dry-run, and a real run creates no VM."""
    path = _sweep_file(tmp_path, CPU_SWEEP.replace("train_steps: 50", "train_step: 50"))
    out = _launch(tmp_path, "sweep", path, "--executor=gce", *(["--dry-run"] if dry else []))
    assert out.returncode == 2
    assert out.stderr.strip() == (
        f"tpubench-launch sweep: error: {path}: flags.train_step is not a `tpubench train` "
        "flag; did you mean train_steps? (`tpubench train --helpfull` lists them); "
        "nothing was launched"
    )
    assert out.stdout == ""
    assert _calls(tmp_path) == []  # no gcloud call at all: no VM, no rsync


def test_one_slash_gs_url_gets_a_hint(tmp_path):
    path = _sweep_file(tmp_path, CPU_SWEEP.replace("gs://bkt/tb", "gs:/bkt/tb"))
    out = _launch(tmp_path, "sweep", path, "--executor=gce", "--dry-run")
    assert out.returncode == 2
    assert out.stderr.strip() == (
        f"tpubench-launch sweep: error: {path}: cloud.bucket=gs:/bkt/tb is not a gs:// URL "
        "(two slashes after gs:); did you mean gs://bkt/tb?"
    )
    out = _launch(tmp_path, "local-cluster", "--workers=2", "--", "--results_dir=gs:/bkt/r")
    assert out.returncode == 2
    assert out.stderr.strip().endswith(
        "error: --results_dir=gs:/bkt/r is not a gs:// URL (two slashes after gs:); "
        "did you mean gs://bkt/r?"
    )
    assert _calls(tmp_path) == []
