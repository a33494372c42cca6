"""`command: tune` in a sweep file: tpubench-launch runs `tpubench tune` where `train` would run."""

import shlex
import subprocess
import sys

from test_cloud import BIN, _dry_run_commands, _sweep_file

LAUNCH = [sys.executable, "-m", "tpubench_launch.main", "sweep"]

TUNE_SWEEP = """
name: tunecpu
command: tune
grid:
  machines: [gcp:c2-standard-8]
flags: {model: resnet50, tiny: true, budget: 20m}
estimate: {seconds: 1200}
cloud:
  project: proj-42
  zone: us-central1-a
  bucket: gs://bkt/tb
"""


def _launch(tmp_path, *args):
    import os

    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    env["GCLOUD_DOUBLE_LOG"] = str(tmp_path / "gcloud-calls.jsonl")
    return subprocess.run(
        [*LAUNCH, *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )


def test_gce_tune_runs_tpubench_tune_on_the_vm_and_copies_its_trials_back(tmp_path):
    out = _launch(tmp_path, _sweep_file(tmp_path, TUNE_SWEEP), "--executor=gce", "--dry-run")
    assert out.returncode == 0, out.stderr
    cmds = _dry_run_commands(out.stdout)
    run = next(c for c in cmds if "tpubench tune" in c)
    remote = shlex.split(run)[-1]
    assert (
        "tpubench-venv/bin/python -I -m tpubench tune --model=resnet50 --machine=gcp:c2-standard-8 "
        "--tiny --budget=20m --results_dir=gs://bkt/tb/records 2>&1" in remote
    ), remote
    # tune names, places and resumes its own trials: no --model_dir, no --run_label.
    assert "--model_dir" not in remote and "--run_label" not in remote
    assert "gcloud storage rsync --recursive gs://bkt/tb/records runs/sweeps/tunecpu" in cmds


def test_local_tune_sweep_dry_run_and_flags_checked_against_tune(tmp_path):
    text = "command: tune\ngrid: {models: [mnist_mlp]}\nflags: {budget: 5m, trial_steps: 50}\n"
    out = _launch(tmp_path, _sweep_file(tmp_path, text), "--dry-run")
    assert out.returncode == 0, out.stderr
    assert (
        "tpubench tune --model=mnist_mlp --budget=5m --trial_steps=50 --results_dir=" in out.stdout
    )
    # --budget is tune's, not train's: the same flags under command train are refused.
    bad = _launch(tmp_path, _sweep_file(tmp_path, text.replace("command: tune\n", ""), "t.yaml"))
    assert bad.returncode == 2
    assert "flags.budget is not a `tpubench train` flag" in bad.stderr
    typo = _launch(tmp_path, _sweep_file(tmp_path, text.replace("budget", "budgit"), "u.yaml"))
    assert typo.returncode == 2
    assert "flags.budgit is not a `tpubench tune` flag; did you mean budget?" in typo.stderr


def test_tune_sweep_refuses_clusters_and_unknown_commands(tmp_path):
    text = "command: tune\ngrid: {strategies: [multi_worker]}\n"
    out = _launch(tmp_path, _sweep_file(tmp_path, text), "--dry-run")
    assert out.returncode == 2 and "command tune runs on one machine" in out.stderr
    out = _launch(tmp_path, _sweep_file(tmp_path, "command: serve\ngrid: {}\n", "v.yaml"))
    assert out.returncode == 2 and "unknown command" in out.stderr and "tune" in out.stderr
