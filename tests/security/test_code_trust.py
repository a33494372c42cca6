"""Class A of issue 34: code runs only where the user asked for it.

A study file or a sweep file becomes command lines; a `model_module` or a
`flagfile` among its flags would make every command import and run code.
Such a file is refused unless the user passes --trust_code (tpubench) or
--trust-code (tpubench-launch); the refusal names the file, the key and the
code path, escaped, and nothing runs.
"""

import subprocess
import sys

import pytest
from conftest import one_line_error, run_cli
from hostile import raw_controls

LAUNCH = [sys.executable, "-m", "tpubench_launch.main", "sweep"]


def _evil(tmp_path, name="evil.py"):
    marker = tmp_path / "ran"
    code = tmp_path / name
    code.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    return code, marker


def _study(tmp_path, flags: str, scale: str = "{tiny: true, train_steps: 2}"):
    path = tmp_path / "colleague.yaml"
    path.write_text(
        "title: t\nform: {kind: knee}\nparts:\n  - name: p\n    models: [mnist_mlp]\n"
        f"    setups: [{{label: one, vcpus: 1}}]\n    flags: {flags}\n"
        f"    scale: {{smoke: {scale}}}\n"
    )
    return path


@pytest.mark.parametrize("key", ["model_module", "flagfile"])
def test_a_study_file_naming_code_is_refused_and_runs_nothing(tmp_path, key):
    code, marker = _evil(tmp_path)
    path = _study(tmp_path, f"{{{key}: {code}}}")
    proc, _ = run_cli("study", "run", path, "--scale=smoke", f"--results_dir={tmp_path / 'r'}")
    line = one_line_error(proc)
    assert proc.returncode == 2
    assert str(path) in line and key in line  # flagfile: not a train flag either
    if key == "model_module":
        assert f"{key}={code}" in line and "--trust_code" in line
    assert not marker.exists() and not (tmp_path / "r").exists()


def test_code_in_a_study_scale_is_refused_naming_the_part_and_scale(tmp_path):
    path = _study(tmp_path, "{}", '{tiny: true, model_module: "/tmp/x y;$(id).py"}')
    proc, _ = run_cli("study", "run", path, "--scale=smoke", "--dry-run")
    line = one_line_error(proc)
    assert "parts (p): scale.smoke.model_module=/tmp/x y;$(id).py" in line
    assert raw_controls(proc.stderr) == []


def test_trust_code_lets_a_study_name_code_with_a_warning(tmp_path):
    code, _ = _evil(tmp_path)
    path = _study(tmp_path, f"{{model_module: {code}}}")
    results = tmp_path / "r"
    proc, _ = run_cli(
        "study",
        "run",
        path,
        "--scale=smoke",
        "--dry-run",
        "--trust_code",
        f"--results_dir={results}",
    )
    assert proc.returncode == 0, proc.stderr
    assert f"--trust_code given: {path} makes the runs import and run --model_module={code}" in (
        proc.stderr
    )
    assert f"--model_module={code}" in proc.stdout  # the dry run's command lines


def _sweep(tmp_path, body):
    path = tmp_path / "colleague-sweep.yaml"
    path.write_text(body)
    return str(path)


@pytest.mark.parametrize(
    "body, where",
    [
        ("grid: {models: [mnist_mlp]}\nflags: {model_module: CODE}\n", "flags.model_module="),
        (
            "runs:\n  - {label: a, flags: {model: mnist_mlp, flagfile: CODE}}\n",
            "runs (a): flags.flagfile=",
        ),
        ("command: tune\ngrid: {models: [mnist_mlp]}\nflags: {model_module: [CODE]}\n", "flags."),
    ],
)
def test_a_sweep_file_naming_code_is_refused_by_the_launcher(tmp_path, body, where):
    code, marker = _evil(tmp_path)
    path = _sweep(tmp_path, body.replace("CODE", str(code)))
    proc = subprocess.run([*LAUNCH, path, "--dry-run"], capture_output=True, text=True)
    line = one_line_error(proc)
    assert proc.returncode == 2
    assert path in line and f"{where}" in line and str(code) in line and "--trust-code" in line
    assert "preview" not in proc.stdout and not marker.exists()


def test_trust_code_lets_a_sweep_name_code_with_a_warning(tmp_path):
    code, _ = _evil(tmp_path)
    path = _sweep(tmp_path, f"grid: {{models: [mnist_mlp]}}\nflags: {{model_module: {code}}}\n")
    proc = subprocess.run(
        [*LAUNCH, path, "--dry-run", "--trust-code", f"--results-dir={tmp_path / 'r'}"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"makes the runs import and run --model_module={code}" in proc.stderr
    assert f"--model_module={code}" in proc.stdout
