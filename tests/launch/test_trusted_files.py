"""Files that others share choose no code and no special file (issue 42, class B).

A sweep file's `cloud:` mapping (and a study's --cloud file, which becomes
one) may name the package each VM installs, the index release it installs,
the container image each GKE pod runs or the boot image each VM starts
from: each is refused in one line without --trust-code (tpubench study:
--trust_code), for every executor, and printed before the runs with it.
A path the file names that is read (a package, a price catalog, a
user.conf) must be a regular file of bounded size: /dev/zero, a FIFO and a
directory are refused at once (every subprocess here has a timeout, so a
hang fails the test instead of the suite).
"""

import os
import pathlib
import subprocess
import sys

import pytest
from conftest import one_line_error, run_cli

from tpubench_launch import executors, trust

BIN = pathlib.Path(__file__).resolve().parent / "bin"
LAUNCH = [sys.executable, "-m", "tpubench_launch.main", "sweep"]
SWEEP = """
name: shared
grid:
  machines: [gcp:c2-standard-8]
flags: {train_steps: 5, tiny: true}
estimate: {seconds: 60}
cloud:
  project: proj-42
  zone: us-central1-a
  bucket: gs://bkt/tb
"""
VALUES = {
    "package": "tpubench-9.9-py3-none-any.whl",
    "package_index_version": "'1.2.3'",
    "image": "evil.example/img:1",
    "image_family": "my-family",
    "image_project": "other-project",
}


def _launch(tmp_path, text, *args, timeout=60):
    (tmp_path / "s.yaml").write_text(text)
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    env["GCLOUD_DOUBLE_LOG"] = str(tmp_path / "gcloud.jsonl")
    env["KUBECTL_DOUBLE_LOG"] = str(tmp_path / "kubectl.jsonl")
    return subprocess.run(
        [*LAUNCH, "s.yaml", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=timeout,
    )


def _with(key: str, value: str) -> str:
    return SWEEP + f"  {key}: {value}\n"


def test_every_code_key_is_listed_and_the_study_asks_for_the_same_list():
    assert set(trust.CODE_SETTINGS) == set(VALUES)
    from tpubench_launch.executors import base

    # `tpubench-launch executors --json`: each executor's code keys are those it reads
    published = {e["name"]: e for e in base.published()}
    assert published["gke"]["code_keys"] == trust.CODE_SETTINGS
    assert set(published["gce"]["code_keys"]) == set(trust.CODE_SETTINGS) - {"image"}


@pytest.mark.parametrize("key", sorted(VALUES))
def test_a_cloud_key_that_chooses_code_is_refused_in_one_line_without_trust_code(tmp_path, key):
    (tmp_path / VALUES["package"]).write_bytes(b"a wheel")
    out = _launch(tmp_path, _with(key, VALUES[key]), "--executor=gce", "--dry-run")
    assert out.returncode == 2 and out.stdout == ""
    value = VALUES[key].strip("'")
    assert one_line_error(out) == (
        f"tpubench-launch sweep: error: s.yaml: cloud.{key}={value} chooses "
        f"{trust.CODE_SETTINGS[key]}: code that would run on your machines; refused: check it, "
        "then pass --trust-code"
    )
    assert not (tmp_path / "gcloud.jsonl").exists()


@pytest.mark.parametrize("executor", executors.REGISTRY.names())
def test_no_executor_skips_the_check(tmp_path, executor):
    """local, gce, tpu-vm, gke and skypilot alike: refused before any executor reads the file."""
    out = _launch(tmp_path, _with("package_index_version", "'1.2.3'"), f"--executor={executor}")
    assert out.returncode == 2
    assert "cloud.package_index_version=1.2.3 chooses" in one_line_error(out)


def test_with_trust_code_the_dry_run_prints_what_each_chooses(tmp_path):
    text = _with("image_family", "my-family") + "  image_project: other-project\n"
    text += "  package_index_version: '1.2.3'\n"
    out = _launch(tmp_path, text, "--executor=gce", "--dry-run", "--trust-code")
    assert out.returncode == 0, out.stderr
    assert (
        "# every VM installs tpubench==1.2.3 from the package index, hash not pinned "
        "(package_sha256)\n"
        "# boot image: family my-family of project other-project, chosen by the sweep file's "
        "cloud:\n"
    ) in out.stdout
    assert "--image-family=my-family --image-project=other-project" in out.stdout
    gke = SWEEP.replace("gcp:c2-standard-8", "gcp:n1-standard-8+1xgcp:t4") + (
        "  image: evil.example/img:1\n"
    )
    out = _launch(tmp_path, gke, "--executor=gke", "--dry-run", "--trust-code")
    assert out.returncode == 0, out.stderr
    assert "# every pod runs the container image evil.example/img:1 (cloud.image)\n" in out.stdout


def _fifo(tmp_path) -> str:
    path = tmp_path / "pipe.whl"
    os.mkfifo(path)
    return str(path)


def _device(tmp_path) -> str:  # a wheel's name for /dev/zero
    path = tmp_path / "zero.whl"
    path.symlink_to("/dev/zero")
    return str(path)


def _directory(tmp_path) -> str:
    path = tmp_path / "dir.whl"
    path.mkdir()
    return str(path)


SPECIAL = {
    "device": (_device, "is a device, not a regular file"),
    "fifo": (_fifo, "is a FIFO (named pipe), not a regular file"),
    "directory": (_directory, "is a directory, not a regular file"),
}


@pytest.mark.parametrize("case", sorted(SPECIAL))
def test_a_special_file_as_the_package_is_refused_at_once(tmp_path, case):
    make, said = SPECIAL[case]
    path = make(tmp_path)
    out = _launch(tmp_path, _with("package", path), "--executor=gce", "--dry-run", "--trust-code")
    assert out.returncode == 2
    assert one_line_error(out) == (
        f"tpubench-launch sweep: error: s.yaml: cloud.package={path} {said}; accepted: a "
        f"regular file of at most {512 << 20:,} bytes (a wheel or sdist)"
    )


def test_a_package_that_is_a_requirement_or_no_file_name_is_refused(tmp_path):
    out = _launch(tmp_path, _with("package", "tpubench==1.2.3"), "--executor=gce", "--trust-code")
    assert "is a requirement, not a file; name the version with package_index_version" in (
        one_line_error(out)
    )
    out = _launch(tmp_path, _with("package", "/dev/zero"), "--executor=gce", "--trust-code")
    assert "cloud.package='/dev/zero': accepted: a wheel or sdist file name" in one_line_error(out)


@pytest.mark.parametrize("case", sorted(SPECIAL))
def test_a_special_file_as_a_flag_file_path_is_refused_at_once(tmp_path, case):
    make, said = SPECIAL[case]
    path = make(tmp_path)  # a price catalog of any name: the file's kind decides
    text = SWEEP.replace("flags: {", f"flags: {{price_catalog: '{path}', ").split("cloud:")[0]
    out = _launch(tmp_path, text, "--dry-run")
    assert out.returncode == 2
    line = one_line_error(out)
    assert line.startswith(f"tpubench-launch sweep: error: s.yaml: flags.price_catalog={path} ")
    assert said in line and line.endswith("(a price catalog CSV)")


def test_a_fifo_as_the_sweep_file_is_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "f.yaml")
    proc = subprocess.run(
        [*LAUNCH, "f.yaml", "--dry-run"], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert proc.returncode == 2
    assert "f.yaml is a FIFO (named pipe), not a regular file" in one_line_error(proc)


STUDY_CLOUD = """
project: proj-42
zone: us-central1-a
bucket: gs://bkt/tb
machines:
  Cloud TPU: gcp:tpu-v5e-8
"""


@pytest.mark.parametrize("executor,study", [("gce", "cpu_vs_gpu"), ("tpu-vm", "tpu_vs_gpu")])
def test_study_run_refuses_a_cloud_file_naming_code_without_trust_code(tmp_path, executor, study):
    cloud = tmp_path / "cloud.yaml"
    cloud.write_text(STUDY_CLOUD + "package_index_version: '1.2.3'\n")
    args = ("study", "run", study, "--scale=smoke", f"--executor={executor}", f"--cloud={cloud}")
    env = {"PATH": f"{BIN}:{os.environ['PATH']}", "GCLOUD_DOUBLE_LOG": str(tmp_path / "g.jsonl")}
    proc, _ = run_cli(*args, "--dry-run", f"--results_dir={tmp_path / 'r'}", env=env)
    assert proc.returncode == 2
    assert one_line_error(proc) == (
        f"tpubench study: error: --cloud={cloud}: package_index_version=1.2.3 chooses the "
        "tpubench release every VM installs from the package index: code that would run on "
        "your machines; refused: check it, then pass --trust_code"
    )
    proc, _ = run_cli(
        *args, "--dry-run", "--trust_code", f"--results_dir={tmp_path / 'r'}", env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert "# every VM installs tpubench==1.2.3 from the package index" in proc.stdout
    extra = "tpu" if executor == "tpu-vm" else "cpu"
    assert f"install -q '\"'\"'tpubench[{extra}]==1.2.3'\"'\"'" in proc.stdout
    assert ".whl" not in proc.stdout  # nothing copied: the index's release is installed
    assert not (tmp_path / "g.jsonl").exists()


def test_study_run_on_gce_installs_the_wheel_built_here_by_its_hash(tmp_path):
    """No package key: the dry run names the wheel of the tpubench that runs here and its hash."""
    from tpubench_launch import wheel

    cloud = tmp_path / "cloud.yaml"
    cloud.write_text(STUDY_CLOUD)
    r = tmp_path / "r"
    env = {"PATH": f"{BIN}:{os.environ['PATH']}", "GCLOUD_DOUBLE_LOG": str(tmp_path / "g")}
    proc, _ = run_cli(
        "study", "run", "cpu_vs_gpu", "--scale=smoke", "--executor=gce", f"--cloud={cloud}",
        "--dry-run", f"--results_dir={r}", env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # The wheel a fresh process builds here (as the dry run's did): this test process's
    # imports, after the suite's other tests in it, are not a fresh installation's.
    code = "import sys; from tpubench_launch import wheel; w = wheel.build(sys.argv[1]); "
    code += "print(w.path); print(w.sha256)"
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "expected")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )
    assert out.returncode == 0, out.stderr
    path, sha256 = out.stdout.split()
    built = wheel.Wheel(path, "", sha256, "")
    name = pathlib.Path(built.path).name
    assert f"into {r}/package/{name}, by its sha256 {built.sha256}\n" in proc.stdout
    vms = proc.stdout.count("gcloud compute instances create ")
    assert vms and proc.stdout.count(f"./{name} --hash=sha256:{built.sha256}") == vms
    assert not (r / "package").exists()  # a dry run: built aside, nothing written
