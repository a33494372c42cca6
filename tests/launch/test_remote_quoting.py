"""Every value that enters a VM's shell arrives as one word and runs nothing (issue 11, item 12).

The gcloud TEST DOUBLE (tests/launch/bin/gcloud) runs each `ssh --command`
script with bash, as the VM would, in a stand-in home directory whose
`python3` and `tpubench-venv/bin/{pip,python}` only record their argv.  A
hostile package file name and hostile flag values must reach those
programs verbatim and must not create the marker files they try to create.
"""

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
  package: {json.dumps(PACKAGE)}
"""

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


def test_hostile_values_reach_the_vm_as_one_word_and_run_nothing(tmp_path):
    (tmp_path / PACKAGE).write_bytes(b"not really a wheel")
    (tmp_path / "sweep.yaml").write_text(SWEEP)
    home = _vm_home(tmp_path)
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    env["GCLOUD_DOUBLE_LOG"] = str(tmp_path / "gcloud-calls.jsonl")
    env["GCLOUD_DOUBLE_SHELL_HOME"] = str(home)
    proc = subprocess.run(
        [*LAUNCH, "sweep", "sweep.yaml", "--executor=gce"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr

    pwned = sorted(
        p.name for d in (tmp_path, home) for p in d.iterdir() if p.name.startswith("PWNED")
    )
    assert pwned == [], f"a hostile value ran a command on the VM: {pwned}"

    calls = [json.loads(x) for x in (home / "argv.jsonl").read_text().splitlines()]
    pip_install = [c for c in calls if c[0] == "pip" and "--upgrade" not in c]
    assert pip_install == [["pip", "install", "-q", f"./{PACKAGE}[cpu]"]]
    train = [c for c in calls if c[0] == "python" and "train" in c]
    assert len(train) == 1
    argv = train[0]
    assert f"--params={PARAMS}" in argv
    assert f"--data_dir={DATA_DIR}" in argv
    assert f"--dataset={LABEL_FREE_TEXT}" in argv
    # The package is copied by its absolute path: no name can pass for an option.
    scp = [json.loads(x) for x in (tmp_path / "gcloud-calls.jsonl").read_text().splitlines()]
    copied = [c for c in scp if "scp" in c and str(tmp_path / PACKAGE) in c]
    assert len(copied) == 1
