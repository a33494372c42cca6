"""Every value that enters a VM's shell arrives as one word and runs nothing (issue 11, item 12).

The gcloud TEST DOUBLE (tests/launch/bin/gcloud) runs each `ssh --command`
script with bash, as the VM would, in a stand-in home directory whose
`python3` and `tpubench-venv/bin/{pip,python}` only record their argv.
Hostile flag values must reach those programs verbatim and must not create
the marker files they try to create; a hostile package file name is
refused before anything starts (a name pip could not take either).
"""

import hashlib
import importlib.metadata
import json
import os
import pathlib
import subprocess
import sys

BIN = pathlib.Path(__file__).resolve().parent / "bin"
LAUNCH = [sys.executable, "-m", "tpubench_launch.main"]

# Each tries to create a file named PWNED* in the directory the shell runs in.
PACKAGE = "tpubench-1.0';touch PWNED1;'.whl"
PARAMS = "dropout=0.1$(touch PWNED2)"
DATA_DIR = "gs://bkt/data`touch PWNED3`;touch PWNED4"
LABEL_FREE_TEXT = "x'\"; touch PWNED5 #"

SWEEP = f"""
name: hostile
grid:
  machines: [gcp:c2-standard-8]
flags:
  train_steps: 5
  tiny: true
  params: {json.dumps(PARAMS)}
  data_dir: {json.dumps(DATA_DIR)}
  dataset: {json.dumps(LABEL_FREE_TEXT)}
estimate: {{seconds: 60}}
cloud:
  project: proj-42
  zone: us-central1-a
  bucket: gs://bkt/tb
"""
WHEEL = f"tpubench-{importlib.metadata.version('tpubench')}-py3-none-any.whl"

RECORDER = """#!{python}
import json, os, sys
with open(os.path.expanduser("~/argv.jsonl"), "a") as f:
    f.write(json.dumps([os.path.basename(sys.argv[0])] + sys.argv[1:]) + "\\n")
"""


def _vm_home(tmp_path) -> pathlib.Path:
    home = tmp_path / "vm-home"
    for rel in ("bin/python3", "tpubench-venv/bin/pip", "tpubench-venv/bin/python"):
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(RECORDER.format(python=sys.executable))
        path.chmod(0o755)
    return home


def _launch(tmp_path, home, *args):
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    env["GCLOUD_DOUBLE_LOG"] = str(tmp_path / "gcloud-calls.jsonl")
    env["GCLOUD_DOUBLE_SHELL_HOME"] = str(home)
    return subprocess.run(
        [*LAUNCH, "sweep", "sweep.yaml", "--executor=gce", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )


def test_hostile_values_reach_the_vm_as_one_word_and_run_nothing(tmp_path):
    (tmp_path / "sweep.yaml").write_text(SWEEP)
    home = _vm_home(tmp_path)
    proc = _launch(tmp_path, home)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    pwned = sorted(
        p.name for d in (tmp_path, home) for p in d.iterdir() if p.name.startswith("PWNED")
    )
    assert pwned == [], f"a hostile value ran a command on the VM: {pwned}"

    calls = [json.loads(x) for x in (home / "argv.jsonl").read_text().splitlines()]
    pip_install = [c for c in calls if c[0] == "pip" and "--upgrade" not in c]
    # The wheel built here alone, by its hash (pip checks it), then its dependencies.
    pinned = ["--no-deps", "--require-hashes", "-r", "tpubench-requirements.txt"]
    assert pip_install == [
        ["pip", "install", "-q", *pinned],
        ["pip", "install", "-q", f"./{WHEEL}[cpu]"],
    ]
    wheel = tmp_path / "runs" / "sweeps" / "hostile" / "package" / WHEEL
    sha256 = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert (home / "tpubench-requirements.txt").read_text() == f"./{WHEEL} --hash=sha256:{sha256}\n"
    train = [c for c in calls if c[0] == "python" and "train" in c]
    assert len(train) == 1
    argv = train[0]
    assert f"--params={PARAMS}" in argv
    assert f"--data_dir={DATA_DIR}" in argv
    assert f"--dataset={LABEL_FREE_TEXT}" in argv
    # The package is copied by its absolute path: no name can pass for an option.
    scp = [json.loads(x) for x in (tmp_path / "gcloud-calls.jsonl").read_text().splitlines()]
    copied = [c for c in scp if "scp" in c and str(wheel) in c]
    assert len(copied) == 1


def test_a_hostile_package_file_name_is_refused_in_one_line(tmp_path):
    (tmp_path / PACKAGE).write_bytes(b"not really a wheel")
    text = SWEEP + f"  package: {json.dumps(PACKAGE)}\n"
    (tmp_path / "sweep.yaml").write_text(text)
    home = _vm_home(tmp_path)
    proc = _launch(tmp_path, home, "--trust-code")
    assert proc.returncode == 2
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith(f"tpubench-launch sweep: error: sweep.yaml: cloud.package={PACKAGE!r}")
    assert "accepted: a wheel or sdist file name" in line
    assert not (tmp_path / "gcloud-calls.jsonl").exists() and not (home / "argv.jsonl").exists()
