"""Class D of issue 34: work bounded by the size of the input.

Flag files that name each other many times, a study or sweep file that
expands to a million cells, a results folder of thousands of other files:
each is refused (or rolled up) before the work grows, in one line with the
count, and a flag raises a cap where a bigger run is meant.
"""

import pathlib
import subprocess
import sys
import time

from conftest import one_line_error, run_cli
from hostile import write_records

LAUNCH = [sys.executable, "-m", "tpubench_launch.main", "sweep"]


def test_flag_files_that_fan_out_are_refused_quickly(tmp_path):
    # Five 200-byte files, each naming the next ten times: 10**5 reads if expanded.
    for i in range(5):
        body = "--tiny\n" if i == 4 else f"--flagfile={tmp_path / f'f{i + 1}'}\n" * 10
        (tmp_path / f"f{i}").write_text(body)
    start = time.monotonic()
    proc, _ = run_cli("train", f"--flagfile={tmp_path / 'f0'}", timeout=60)
    line = one_line_error(proc)
    assert proc.returncode == 2 and "more than 100 times" in line
    assert "at most 100 flag files read per command" in line
    assert time.monotonic() - start < 30


STUDY = """
title: big
form: {{kind: knee}}
parts:
  - name: p
    models: [{models}]
    data: [synthetic, real]
    setups: [{setups}]
    scale: {{smoke: {{tiny: true, train_steps: 2}}}}
"""


def _study(tmp_path, setups: int, models: int):
    path = tmp_path / "big.yaml"
    labels = ", ".join(f"{{label: s{i}, vcpus: 1}}" for i in range(setups))
    path.write_text(STUDY.format(models=", ".join(["mnist_mlp"] * models), setups=labels))
    return path


def test_a_study_that_expands_past_the_cap_is_refused_with_its_count(tmp_path):
    path = _study(tmp_path, 100, 60)  # 100 x 60 x 2 = 12,000 cells
    start = time.monotonic()
    proc, _ = run_cli("study", "run", path, "--dry-run", f"--results_dir={tmp_path / 'r'}")
    line = one_line_error(proc)
    assert proc.returncode == 2 and "expands to up to 12,000 cells" in line
    assert "--max_cells=10,000" in line and time.monotonic() - start < 60
    small = _study(tmp_path, 2, 1)  # 4 cells: refused under a cap of 3, run under 4
    proc, _ = run_cli("study", "run", small, "--dry-run", "--max_cells=3")
    assert proc.returncode == 2 and "up to 4 cells" in one_line_error(proc)
    proc, _ = run_cli(
        "study", "run", small, "--dry-run", "--max_cells=4", f"--results_dir={tmp_path / 'r'}"
    )
    assert proc.returncode == 0, proc.stderr


def test_a_sweep_grid_past_the_cap_is_refused_before_expanding(tmp_path):
    path = tmp_path / "grid.yaml"
    sizes = ", ".join(str(b) for b in range(1, 201))
    path.write_text(
        f"grid:\n  models: [{', '.join(['mnist_mlp'] * 100)}]\n  batch_sizes: [{sizes}]\n"
    )
    proc = subprocess.run([*LAUNCH, str(path), "--dry-run"], capture_output=True, text=True)
    line = one_line_error(proc)
    assert proc.returncode == 2 and "expands to 20,000 configurations" in line
    assert "--max-configs=10,000" in line
    proc = subprocess.run(
        [*LAUNCH, str(path), "--dry-run", "--max-configs=5"], capture_output=True, text=True
    )
    assert "expands to 20,000 configurations, over --max-configs=5" in one_line_error(proc)


def test_many_files_that_are_not_records_are_rolled_up_with_the_list_in_a_file(tmp_path):
    results = write_records(tmp_path / "runs", "mnist_mlp", n=2)
    for i in range(300):
        (results / f"meta-{i}.json").write_text("not json")
    for i in range(20):
        (results / f"list-{i}.json").write_text("[1, 2]")
    proc, _ = run_cli("report", results, env={"COLUMNS": "200"})  # the reason column too
    assert proc.returncode == 0, proc.stderr
    assert "meta-1" not in proc.stdout and len(proc.stdout.splitlines()) < 60
    lines = [x for x in proc.stdout.splitlines() if "files" in x and "skipped" in x]
    assert len(lines) == 2, proc.stdout
    assert "300 files" in proc.stdout and "20 files" in proc.stdout
    listing = proc.stdout.split("(all 320: ")[1].split(")")[0]
    assert len(pathlib.Path(listing).read_text().splitlines()) == 320
