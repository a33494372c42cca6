"""Class F of issue 58: a usage error costs nothing, and a cloud file is checked one way.

A usage error is refused in one line (exit 2) before TensorFlow loads and
before anything is written: no record, no folder.  Each command runs in a
fresh process through NO_TF_CLI, which exits 99 had anything imported
TensorFlow.  The cloud settings of a study's `--cloud` file, of a sweep
file's `cloud:` and of `tpubench-launch executors --check-cloud=FILE` go
through one checker (launch/cloud_file.py): the same file is refused in the
same words by all three, and what a line shows from a file or a flag is
escaped.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
from conftest import NO_TF_CLI, old_record, one_line_error, run_cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOUBLES = ROOT / "tests" / "launch" / "bin"  # gcloud and kubectl test doubles
LAUNCH = "from tpubench_launch import cli; import sys; raise SystemExit(cli.main(sys.argv[1:]))"


def _run(argv, cwd, **env):
    full = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    full.update(env)
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=full, timeout=300)


@pytest.mark.parametrize(
    "args,expected",
    [
        (
            ["train", "--model=mnist_mlp", "--params=seed=3"],
            "--params: seed=3 is not a hyperparameter: --seed seeds the run",
        ),
        (
            ["train", "--model=mnist_mlp", "--params=dropout=0.1,batch_size=8"],
            "--params: batch_size=8 is not a hyperparameter: --per_replica_batch_size sets it",
        ),
        (
            ["infer", "--model=mnist_mlp", "--params=global_batch_size=64"],
            "--params: global_batch_size=64 is not a hyperparameter: --batch_size sets it; "
            "use --batch_size=64",
        ),
        (
            ["tune", "--model=mnist_mlp", "--budget=1m", "--params=data_dir=/tmp/d"],
            "--params: data_dir=/tmp/d is not a hyperparameter: --data_dir sets it",
        ),
        (
            ["data", "bench", "--model=mnist_mlp", "--params=cache=1"],
            "--params: cache=1 is not a hyperparameter: --cache_input sets it",
        ),
        (["train", "--model=__init__"], "unknown model '__init__'; accepted: alexnet, "),
        (["infer", "--model=__init__"], "unknown model '__init__'; accepted: alexnet, "),
        (["train", "--model=_imagenet"], "unknown model '_imagenet' (did you mean"),
        (["train", "--model=__main__", "--tiny"], "unknown model '__main__'"),
        (["data", "bench", "--model=__init__"], "unknown model '__init__'"),
        (["data", "bench", "--model=../x"], "unknown model '../x'"),
    ],
)
def test_a_usage_error_loads_nothing_and_writes_nothing(tmp_path, args, expected):
    results = tmp_path / "r"
    proc = _run([sys.executable, "-c", NO_TF_CLI, *args, f"--results_dir={results}"], tmp_path)
    line = one_line_error(proc)  # NO_TF_CLI exits 99 had TensorFlow been imported
    assert proc.returncode == 2, proc.stderr
    assert expected in line, line
    assert list(tmp_path.iterdir()) == []  # no results folder, nothing in the working one


# Issue 61, item 7: what is decidable on this host is refused before TensorFlow loads, with
# no record and no folder.  (name, argv after the command, exit code, the line's words);
# {tmp} is the test's folder, where a file `afile` exists.
_NO_TPU_ENV = {"TPU_NAME": "", "COLAB_TPU_ADDR": "", "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS": ""}
_BEFORE_TF = [
    ("tpu", ["--accelerator=tpu"], 4, "--accelerator=tpu but this host has no TPU"),
    ("tpu-local", ["--tpu=local"], 4, "--tpu=local but this host has no TPU"),
    (
        "data_dir",
        ["--data_dir={tmp}/no-such-data"],
        2,
        "--data_dir={tmp}/no-such-data does not exist (expected a directory prepared by",
    ),
    (
        "results_dir-file",
        ["--results_dir={tmp}/afile"],
        2,
        "--results_dir={tmp}/afile is a file; accepted: a directory (created if missing) or gs://",
    ),
    (
        "results_dir-under-file",
        ["--results_dir={tmp}/afile/runs"],
        2,
        "--results_dir={tmp}/afile/runs lies under {tmp}/afile, which is a file; accepted:",
    ),
    ("model_dir-file", ["--model_dir={tmp}/afile"], 2, "--model_dir={tmp}/afile is a file"),
]


@pytest.mark.parametrize("command", ["train", "infer", "tune", "data bench"])
@pytest.mark.parametrize("name,args,code,expected", _BEFORE_TF, ids=[c[0] for c in _BEFORE_TF])
def test_what_this_host_decides_is_refused_before_tensorflow(
    tmp_path, command, name, args, code, expected
):
    if command != "train" and name.startswith("model_dir"):
        pytest.skip(f"{command}'s --model_dir is read, not written")
    if command == "data bench" and "tpu" in name:
        pytest.skip("data bench reads on this host's CPUs: it takes no TPU")
    if command == "data bench" and not any(a.startswith("--data_dir") for a in args):
        args = [*args, f"--data_dir={tmp_path}"]  # it needs one; the case is the other flag
    (tmp_path / "afile").write_text("not a directory\n")
    args = [a.format(tmp=tmp_path) for a in args]
    results = (
        [] if any(a.startswith("--results_dir") for a in args) else [f"--results_dir={tmp_path}/r"]
    )
    proc = _run(
        [sys.executable, "-c", NO_TF_CLI, *command.split(), *args, *results],
        tmp_path,
        **_NO_TPU_ENV,
    )
    line = one_line_error(proc)  # NO_TF_CLI exits 99 had TensorFlow been imported
    assert proc.returncode == code, proc.stderr
    assert expected.format(tmp=tmp_path) in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # no record, no folder


@pytest.mark.parametrize(
    "accelerator,tpu,env",
    [
        ("tpu", "my-tpu-pod", {}),  # a Cloud TPU named: TensorFlow's resolver decides
        ("auto", "grpc://10.0.0.2:8470", {}),
        ("tpu", None, {"TPU_NAME": "my-tpu"}),
        ("cpu", None, {}),  # no TPU asked for
        ("auto", None, {}),
    ],
)
def test_a_remote_tpu_or_none_asked_for_is_not_refused_here(monkeypatch, accelerator, tpu, env):
    """Only what this host can decide is refused early; a named TPU is left to TensorFlow."""
    from tpubench.hardware import placement

    for name in _NO_TPU_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    placement.check_tpu(accelerator, tpu)  # no HardwareError


def test_a_record_with_a_runtime_param_is_refused_by_rerun_before_anything_runs(tmp_path):
    """The same key in a record's flags: rerun's child refuses it in its one line, no record."""
    old = old_record(tmp_path, {"model": "mnist_mlp", "tiny": True, "params": ["seed=1"]})
    proc = _run([sys.executable, "-m", "tpubench", "rerun", old.name], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "--params: seed=1 is not a hyperparameter" in proc.stderr.splitlines()[-1]
    assert "Traceback" not in proc.stderr and not (tmp_path / "again").exists()


# -- one checker for every cloud file ---------------------------------------------------------

UNKNOWN = "unknown cloud setting 'projct' (did you mean project, image_project, spot?); "


def _launch(cwd, *args, **env):
    return _run([sys.executable, "-c", LAUNCH, *args], cwd, **env)


def test_an_unknown_cloud_key_is_refused_alike_by_check_cloud_study_and_sweep(tmp_path):
    settings = "projct: proj-42\nzone: us-central1-a\nbucket: gs://bkt/tb\nimage: img:1\n"
    (tmp_path / "c.yaml").write_text(settings + "machines: {1 GPU: gcp:n1-standard-8+1xgcp:t4}\n")
    check = _launch(tmp_path, "executors", "--check-cloud=c.yaml")
    assert check.returncode == 2
    line = one_line_error(check)
    assert line.startswith(f"tpubench-launch executors: error: c.yaml: {UNKNOWN}"), line
    answer = _launch(tmp_path, "executors", "--json", "--check-cloud=c.yaml", "--prefix=P: ")
    found = {e["name"]: e["problem"] for e in json.loads(answer.stdout)}
    assert found["gce"].startswith(f"P: {UNKNOWN}") and found["gke"] == found["gce"]

    env = {"PATH": f"{DOUBLES}:{os.environ['PATH']}", "GCLOUD_DOUBLE_LOG": str(tmp_path / "g")}
    study, _ = run_cli(
        "study", "run", "tpu_vs_gpu", "--scale=smoke", "--executor=gce",
        f"--cloud={tmp_path / 'c.yaml'}", "--dry-run", f"--results_dir={tmp_path / 'r'}", env=env,
    )  # fmt: skip
    assert study.returncode == 2
    assert one_line_error(study).endswith(f"--cloud={tmp_path / 'c.yaml'}: {UNKNOWN}" + (
        line.split(UNKNOWN, 1)[1]
    ))  # fmt: skip

    (tmp_path / "s.yaml").write_text(
        "runs:\n  - {label: a, flags: {model: mnist_mlp}}\ncloud:\n"
        + "".join(f"  {x}\n" for x in settings.splitlines())
    )
    sweep = _launch(tmp_path, "sweep", "s.yaml", "--executor=gce", "--dry-run", **env)
    assert sweep.returncode == 2
    rest = line.split(UNKNOWN, 1)[1].replace(" machines,", "")  # a --cloud file's own key
    assert one_line_error(sweep).endswith(f"s.yaml: {UNKNOWN}{rest}")
    assert not (tmp_path / "g").exists()  # no gcloud call from any of them
    assert not (tmp_path / "r").exists() and not (tmp_path / "runs").exists()


def test_check_cloud_escapes_what_it_shows_from_a_file_name_or_a_prefix(tmp_path):
    red = "c\x1b[31mred.yaml"
    (tmp_path / red).write_text("zone: nowhere\n")
    (tmp_path / "ok\x1b]0;title\x07.yaml").write_text("zone: us-central1-a\n")
    (tmp_path / "p.yaml").write_text("zone: nowhere\n")
    cases = [
        (["--check-cloud=" + red], "c\\x1b[31mred.yaml: cloud.zone='nowhere' is refused"),
        (["--check-cloud=p.yaml", "--prefix=\x1b[2J"], "\\x1b[2Jcloud.zone='nowhere' is refused"),
        (["--check-cloud=gone\x1b[1A.yaml"], "cannot read cloud file gone\\x1b[1A.yaml"),
        (["--check-cloud=ok\x1b]0;title\x07.yaml"], "ok\\x1b]0;title\\x07.yaml: every value"),
    ]
    for args, expected in cases:
        proc = _launch(tmp_path, "executors", *args)
        assert "\x1b" not in proc.stdout + proc.stderr and "\x07" not in proc.stdout + proc.stderr
        assert expected in proc.stdout + proc.stderr, proc.stdout + proc.stderr
        assert proc.returncode == (0 if "every value" in expected else 2)
