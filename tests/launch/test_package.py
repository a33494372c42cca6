"""The exact package on every VM (issue 42, class C).

By default each VM installs the tpubench that runs here: a wheel built
here, offline, once per sweep run, copied to the VM and installed by its
sha256 (pip --require-hashes checks it before anything of it runs).  The
package index is used only for a release named with package_index_version.

The real-run tests use the gcloud TEST DOUBLE's stand-in VM home
(tests/launch/bin/gcloud): its `tpubench-venv/bin/pip` runs the real pip
for the hash-checked install (offline, into a folder of that home) and only
records the rest, so a tampered wheel is refused by pip itself.
"""

import hashlib
import importlib.metadata
import json
import os
import pathlib
import subprocess
import sys
import zipfile

import pytest
from conftest import one_line_error

from tpubench_launch import wheel
from tpubench_launch.sweep import run as sweep_run

BIN = pathlib.Path(__file__).resolve().parent / "bin"
LAUNCH = [sys.executable, "-m", "tpubench_launch.main", "sweep"]
VERSION = importlib.metadata.version("tpubench")
WHEEL = f"tpubench-{VERSION}-py3-none-any.whl"
SWEEP = """
name: pkg
grid:
  machines: [gcp:c2-standard-8]
flags: {train_steps: 5, tiny: true}
estimate: {seconds: 60}
cloud:
  project: proj-42
  zone: us-central1-a
  bucket: gs://bkt/tb
"""
RECORDER = """#!{python}
import json, os, sys
with open(os.path.expanduser("~/argv.jsonl"), "a") as f:
    f.write(json.dumps([os.path.basename(sys.argv[0])] + sys.argv[1:]) + "\\n")
"""
# The VM's pip: the hash-checked install is real (offline, into ~/site); the rest recorded.
PIP = """#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
with open(os.path.expanduser("~/argv.jsonl"), "a") as f:
    f.write(json.dumps(["pip"] + args) + "\\n")
if "--require-hashes" in args:
    real = [{python!r}, "-m", "pip", *args, "--no-index", "--disable-pip-version-check",
            "--no-cache-dir", "--target", os.path.expanduser("~/site")]
    sys.exit(subprocess.run(real).returncode)
"""


def _vm_home(tmp_path) -> pathlib.Path:
    home = tmp_path / "vm-home"
    for rel, text in (
        ("bin/python3", RECORDER),
        ("tpubench-venv/bin/python", RECORDER),
        ("tpubench-venv/bin/pip", PIP),
    ):
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(python=sys.executable))
        path.chmod(0o755)
    return home


def _launch(tmp_path, text=SWEEP, *args, **env):
    (tmp_path / "s.yaml").write_text(text)
    full = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    full["GCLOUD_DOUBLE_LOG"] = str(tmp_path / "gcloud.jsonl")
    full.update(env)
    return subprocess.run(
        [*LAUNCH, "s.yaml", "--executor=gce", *args],
        capture_output=True,
        text=True,
        env=full,
        cwd=tmp_path,
        timeout=180,
    )


def _calls(tmp_path) -> list[list[str]]:
    path = tmp_path / "gcloud.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_the_wheel_is_built_here_offline_reproducibly_and_pip_installs_it(tmp_path):
    first = wheel.build(str(tmp_path / "a"))
    second = wheel.build(str(tmp_path / "b"))
    assert os.path.basename(first.path) == WHEEL and first.version == VERSION
    digest = hashlib.sha256(pathlib.Path(first.path).read_bytes()).hexdigest()
    assert first.sha256 == second.sha256 == digest  # the same files, the same bytes
    names = set(zipfile.ZipFile(first.path).namelist())
    info = f"tpubench-{VERSION}.dist-info"
    assert {f"{info}/METADATA", f"{info}/RECORD", f"{info}/WHEEL"} <= names
    assert {
        "tpubench/cost/prices.csv",
        "tpubench_launch/wheel.py",
        "tpubench_models/__init__.py",
    } <= names
    assert not [n for n in names if n.endswith(".pyc") or "__pycache__" in n]
    import tpubench

    here = pathlib.Path(tpubench.__file__).parent / "core" / "safe_files.py"
    packed = zipfile.ZipFile(first.path).read("tpubench/core/safe_files.py")
    assert packed == here.read_bytes()  # the very files that run here
    req = tmp_path / "req.txt"
    req.write_text(f"{first.path} --hash=sha256:{first.sha256}\n")
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index"]
    pip += ["--disable-pip-version-check", "--require-hashes", "-r", str(req)]
    pip += ["--target", str(tmp_path / "site")]
    done = subprocess.run(pip, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    meta = (tmp_path / "site" / info / "METADATA").read_text()
    assert f"Version: {VERSION}" in meta and 'extra == "cpu"' in meta  # extras carry their deps
    assert (tmp_path / "site" / "tpubench_launch" / "package.py").is_file()


def test_a_real_run_copies_the_wheel_and_pip_installs_it_by_its_hash(tmp_path):
    home = _vm_home(tmp_path)
    out = _launch(tmp_path, GCLOUD_DOUBLE_SHELL_HOME=str(home))
    assert out.returncode == 0, out.stdout + out.stderr
    built = tmp_path / "runs" / "sweeps" / "pkg" / "package" / WHEEL
    sha256 = hashlib.sha256(built.read_bytes()).hexdigest()
    assert f"# every VM installs tpubench {VERSION}, built here from " in out.stdout
    assert f"into {built}, by its sha256 {sha256}\n" in out.stdout
    scp = [c for c in _calls(tmp_path) if "scp" in c and str(built) in c]
    assert len(scp) == 1
    requirement = (home / "tpubench-requirements.txt").read_text()
    assert requirement == f"./{WHEEL} --hash=sha256:{sha256}\n"
    assert (home / "site" / "tpubench" / "__init__.py").is_file()  # pip installed that file
    calls = [json.loads(x) for x in (home / "argv.jsonl").read_text().splitlines()]
    assert ["pip", "install", "-q", f"./{WHEEL}[cpu]"] in calls  # then its dependencies
    assert any(c[0] == "python" and "train" in c for c in calls)


def test_a_tampered_wheel_is_refused_by_pip_and_the_vm_deleted(tmp_path):
    home = _vm_home(tmp_path)
    out = _launch(tmp_path, GCLOUD_DOUBLE_SHELL_HOME=str(home), GCLOUD_DOUBLE_TAMPER="1")
    assert out.returncode == 1
    assert "DO NOT MATCH THE HASHES" in out.stdout + out.stderr
    assert _launcher_error(out).startswith(
        "tpubench-launch sweep: error: 1 of 1 configuration(s) failed"
    )
    assert not (home / "site").exists()
    calls = [json.loads(x) for x in (home / "argv.jsonl").read_text().splitlines()]
    assert not any(c[0] == "python" for c in calls)  # nothing of it ran
    assert not any(c == ["pip", "install", "-q", f"./{WHEEL}[cpu]"] for c in calls)
    assert _calls(tmp_path)[-1][:3] == ["compute", "instances", "delete"]


def _launcher_error(out) -> str:
    """The launcher's one line (pip and the gcloud double say theirs too)."""
    lines = [x for x in out.stderr.splitlines() if x.startswith("tpubench-launch")]
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    return lines[0]


def test_the_wheel_is_built_once_per_sweep_run_for_all_its_vms(tmp_path, monkeypatch, capsys):
    builds = []
    real = wheel.build
    monkeypatch.setattr(wheel, "build", lambda out: builds.append(out) or real(out))
    text = SWEEP.replace(
        "machines: [gcp:c2-standard-8]",
        "machines: [gcp:c2-standard-8, gcp:n1-standard-8]\n"
        "  strategies: [{strategy: parameter_server, workers: 2, ps: 1}]",
    )
    path = tmp_path / "s.yaml"
    path.write_text(text)
    sweep_run.run(str(path), "gce", True, str(tmp_path / "runs"), None, [])
    out = capsys.readouterr().out
    assert len(builds) == 1
    copies = [x for x in out.splitlines() if x.startswith("gcloud compute scp ") and WHEEL in x]
    assert len(copies) == 8 and len({x.split()[3] for x in copies}) == 1  # 2 x 4 VMs, one file


def test_an_index_release_only_when_named_and_its_hash_pinned(tmp_path):
    pinned = "ab" * 32
    text = SWEEP + f"  package_index_version: '1.2.3'\n  package_sha256: {pinned}\n"
    out = _launch(tmp_path, text, "--dry-run", "--trust-code")
    assert out.returncode == 0, out.stderr
    said = f"# every VM installs tpubench==1.2.3 from the package index, by its sha256 {pinned}"
    assert said + "\n" in out.stdout
    q = "'\"'\"'"  # a quote inside the quoted --command
    assert f"{q}tpubench==1.2.3 --hash=sha256:{pinned}{q} > tpubench-requirements.txt" in out.stdout
    assert "install -q --no-deps --require-hashes -r tpubench-requirements.txt" in out.stdout
    assert f"install -q {q}tpubench[cpu]==1.2.3{q}" in out.stdout
    assert ".whl" not in out.stdout  # nothing built, nothing copied
    # A number is not a version (YAML reads 1.10 as 1.1), and the hash has its form.
    out = _launch(tmp_path, SWEEP + "  package_index_version: 1.10\n", "--dry-run", "--trust-code")
    line = one_line_error(out)
    assert "cloud.package_index_version=1.1 is refused; accepted: a tpubench release" in line
    out = _launch(tmp_path, SWEEP + "  package_sha256: abc\n", "--dry-run")
    line = one_line_error(out)
    assert "cloud.package_sha256='abc' is refused; accepted: 64 lowercase hex" in line


def test_a_pinned_hash_the_wheel_does_not_have_launches_nothing(tmp_path):
    out = _launch(tmp_path, SWEEP + f"  package_sha256: {'f' * 64}\n")
    assert out.returncode == 2
    line = one_line_error(out)
    assert f"cloud.package_sha256={'f' * 64} but " in line and line.endswith("nothing was launched")
    assert _calls(tmp_path) == []


def test_a_users_package_is_copied_and_installed_by_its_hash(tmp_path):
    mine = tmp_path / "dist" / "tpubench-7.0-py3-none-any.whl"
    mine.parent.mkdir()
    mine.write_bytes(b"my own build")
    sha256 = hashlib.sha256(b"my own build").hexdigest()
    text = SWEEP + "  package: dist/tpubench-7.0-py3-none-any.whl\n"
    out = _launch(tmp_path, text, "--dry-run", "--trust-code")
    assert out.returncode == 0, out.stderr
    assert f"# every VM installs cloud.package {mine}, by its sha256 {sha256}\n" in out.stdout
    assert f"gcloud compute scp {mine} 'tpubench-pkg-" in out.stdout
    assert f"./tpubench-7.0-py3-none-any.whl --hash=sha256:{sha256}" in out.stdout


@pytest.mark.parametrize("executor", ["tpu-vm", "skypilot"])
def test_tpu_vms_and_skypilot_nodes_get_the_same_wheel_by_hash(tmp_path, executor):
    text = SWEEP.replace("gcp:c2-standard-8", "gcp:tpu-v5e-8")
    (tmp_path / "s.yaml").write_text(text)
    out = subprocess.run(
        [*LAUNCH, "s.yaml", f"--executor={executor}", "--dry-run"],
        capture_output=True, text=True, cwd=tmp_path, timeout=180,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    sha256 = wheel.build(str(tmp_path / "expected")).sha256
    assert f"by its sha256 {sha256}\n" in out.stdout
    assert f"./{WHEEL} --hash=sha256:{sha256}" in out.stdout
    assert f"./{WHEEL}[tpu]" in out.stdout
    built = tmp_path / "runs" / "sweeps" / "pkg" / "package" / WHEEL
    if executor == "tpu-vm":
        assert f"gcloud compute tpus tpu-vm scp {built} tpubench-pkg-" in out.stdout
    else:
        assert f"#   ~/{WHEEL}: {built}" in out.stdout  # the task's file_mounts
