"""Classes B and E of issue 34: a name never becomes a path outside its place, and only
real model names are imported.

Every name that becomes part of a path (study and part names, sweep names,
VM name prefixes) is checked where it is read and refused in one line naming
the rule; gs:// paths with '.', '..' or empty segments, or object names over
1,024 bytes, are refused before any call; cloud settings are checked against
their formats; a model name is an identifier before any import, and a cache
entry of the wrong shape is measured again rather than used.
"""

import json
import subprocess
import sys

import pytest
from conftest import one_line_error, run_cli

from tpubench.core import names
from tpubench.storage import cache


def _in(cwd, *args):
    """`tpubench ARGS` run in CWD (so a relative path it writes lands under CWD)."""
    cmd = [sys.executable, "-m", "tpubench", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=300)


LAUNCH = [sys.executable, "-m", "tpubench_launch.main"]
STUDY = """
name: {name}
title: t
form: {{kind: knee}}
parts:
  - name: {part}
    models: [{model}]
    setups: [{{label: one, vcpus: 1}}]
    scale: {{smoke: {{tiny: true, train_steps: 2}}}}
"""


@pytest.mark.parametrize(
    "name, part, model, refused",
    [
        ("../../escaped", "p", "mnist_mlp", "name='../../escaped'"),
        ("/tmp/abs", "p", "mnist_mlp", "name='/tmp/abs'"),
        ("ok", "../p", "mnist_mlp", ".name='../p'"),
        ("ok", "p", "os.path", "unknown model 'os.path'"),
    ],
)
def test_a_study_name_that_leaves_its_place_is_refused(tmp_path, name, part, model, refused):
    path = tmp_path / "s" / "colleague.yaml"
    path.parent.mkdir()
    path.write_text(STUDY.format(name=name, part=part, model=model))
    proc = _in(tmp_path / "s", "study", "report", path, "--scale=smoke")
    line = one_line_error(proc)
    assert proc.returncode == 2 and refused in line
    assert "accepted:" in line
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["colleague.yaml", "s"]


@pytest.mark.parametrize(
    "url, why",
    [
        ("gs://b/../x", "'..' segments"),
        ("gs://b/runs/./x", "'.' and '..' segments"),
        ("gs://b/a//c", "empty segment"),
        ("gs://b/" + "x" * 1025, "1,025 bytes; Cloud Storage accepts at most 1,024"),
    ],
)
def test_a_gs_path_that_cannot_name_an_object_is_refused_up_front(tmp_path, url, why):
    proc, record = run_cli("train", "--tiny", f"--model_dir={url}", results_dir=tmp_path)
    line = one_line_error(proc)
    assert proc.returncode == 2 and why in line and "--model_dir=" in line
    assert record is None
    assert names.gcs_problem(url) and names.gcs_problem("gs://b/runs/") is None


def test_the_launcher_refuses_a_dot_segment_in_a_gs_flag_and_a_path_like_sweep_name(tmp_path):
    proc = subprocess.run(
        [*LAUNCH, "local-cluster", "--workers=1", "--", "--model_dir=gs://b/x/../y"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "'..' segments" in one_line_error(proc)
    sweep = tmp_path / "s.yaml"
    sweep.write_text("name: ../../elsewhere\ngrid: {models: [mnist_mlp]}\n")
    proc = subprocess.run(
        [*LAUNCH, "sweep", str(sweep), "--dry-run"], capture_output=True, text=True
    )
    line = one_line_error(proc)
    assert proc.returncode == 2 and "name='../../elsewhere' is refused" in line
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.parametrize(
    "setting, refused",
    [
        ("project: Bad_Project", "cloud.project='Bad_Project' is refused; accepted: 6-30"),
        ("zone: us-central1", "cloud.zone='us-central1' is refused; accepted: a zone such as"),
        ("image_family: ../x", "cloud.image_family='../x' is refused"),
        ("name_prefix: ../x", "cloud.name_prefix='../x' is refused"),
        ("boot_disk_gb: 1000000000", "cloud.boot_disk_gb=1000000000 is refused; accepted: a whole"),
        ("bucket: gs://b/../x", "'..' segments"),
    ],
)
def test_cloud_settings_are_checked_against_their_formats(tmp_path, setting, refused):
    cloud = {"project": "my-project", "zone": "us-central1-a", "bucket": "gs://bkt/tb"}
    key = setting.split(":")[0]
    text = ", ".join(f"{k}: {v}" for k, v in cloud.items() if k != key)
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"grid: {{models: [mnist_mlp]}}\ncloud: {{{text}, {setting}}}\n")
    proc = subprocess.run(
        [*LAUNCH, "sweep", str(sweep), "--executor=gce", "--dry-run"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and refused in one_line_error(proc)


def test_a_study_cloud_file_is_checked_against_the_same_formats(tmp_path):
    study = tmp_path / "mine.yaml"
    study.write_text(STUDY.format(name="mine", part="p", model="mnist_mlp"))
    cloud = tmp_path / "cloud.yaml"
    cloud.write_text("project: my-project\nzone: nowhere\nbucket: gs://bkt/tb\n")
    proc = _in(tmp_path, "study", "run", study, "--executor=gce", f"--cloud={cloud}", "--dry-run")
    line = one_line_error(proc)
    assert proc.returncode == 2 and f"--cloud={cloud}: cloud.zone='nowhere' is refused" in line


@pytest.mark.parametrize("model", ["os.path", ".evil", "../x", "tpubench_models.mnist_mlp"])
@pytest.mark.parametrize("command", ["train", "infer"])
def test_a_path_like_model_name_is_unknown_before_any_import_and_writes_nothing(
    tmp_path, command, model
):
    proc, record = run_cli(command, f"--model={model}", "--tiny", results_dir=tmp_path)
    line = one_line_error(proc)
    assert proc.returncode == 2 and f"error: unknown model {model!r}" in line
    assert "accepted: alexnet," in line
    assert record is None and list(tmp_path.iterdir()) == []


def test_models_refuses_a_dotted_name():
    proc, _ = run_cli("models", "os.path")
    assert proc.returncode == 2 and "unknown model 'os.path'" in one_line_error(proc)


def test_cache_entries_of_the_wrong_shape_are_dropped(tmp_path, monkeypatch):
    monkeypatch.setenv("TPUBENCH_CACHE", str(tmp_path))
    (tmp_path / "peaks.json").write_text(
        json.dumps(
            {
                "good": {"flops": 1e11, "method": "m", "threads": 2},
                "text": {"flops": "1e11", "method": "m"},
                "nan": {"flops": float("nan"), "method": "m"},
                "bool": {"flops": 1e11, "method": "m", "quiet": "yes"},
                "list": [1, 2],
            }
        )
    )
    kept = cache.load_entries(
        "peaks.json",
        {"flops": cache.NUMBER, "method": cache.TEXT},
        {"threads": cache.COUNT, "quiet": cache.FLAG},
    )
    assert list(kept) == ["good"]


def test_a_flop_count_cache_holding_text_is_counted_again(tmp_path, monkeypatch):
    from tpubench.model import model_info

    monkeypatch.setenv("TPUBENCH_CACHE", str(tmp_path))
    good = {"forward_flops_per_example": 1.0, "train_flops_per_example": 3.0, "parameters": 7}
    (tmp_path / "model_info.json").write_text(
        json.dumps(
            {
                "a": good,
                "b": good | {"parameters": "7"},
                "c": good | {"forward_flops_per_example": None},
            }
        )
    )
    assert list(model_info._counts()) == ["a"]


def test_tune_and_data_refuse_a_dotted_model_naming_the_models(tmp_path):
    for argv in (["tune", "--budget=10m"], ["data", "bench", "--data_dir=" + str(tmp_path)]):
        proc, _ = run_cli(*argv, "--model=os.path", timeout=120)
        line = one_line_error(proc)
        assert proc.returncode == 2 and "unknown model 'os.path'; accepted: alexnet," in line
