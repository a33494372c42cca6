"""The tutorials run word for word in an empty directory (doc_shell.py beside it says which).

Each runs under a fresh $TPUBENCH_CACHE, so nothing a tutorial needs can
come from an earlier run, and each leaves no state behind: no local GCS
server state and no staging directory once its commands are done.
"""

import csv
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import doc_shell  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TUTORIALS = ["data.md", "cost.md", "launch.md", "reports.md", "inference.md"]


def _run(tmp_path, name, timeout):
    work = tmp_path / "work"
    work.mkdir()
    cache = tmp_path / "cache"
    env = dict(os.environ)
    env["TPUBENCH_CACHE"] = str(cache)
    env["PATH"] = f"{pathlib.Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["COLUMNS"] = "100"
    out = subprocess.run(
        ["bash", "-c", doc_shell.script((DOCS / name).read_text())],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    # Kept beside the work directory: the tutorial's sample outputs are copied from here.
    (tmp_path / "stdout.txt").write_text(out.stdout)
    (tmp_path / "stderr.txt").write_text(out.stderr)
    assert out.returncode == 0, f"{name} failed:\n{out.stdout[-3000:]}\n{out.stderr[-6000:]}"
    assert "+++ tutorial done" in out.stderr
    return work, cache, out


def _left_behind(cache: pathlib.Path) -> list[str]:
    state = cache / "local-gcs"
    staging = cache / "staging"
    left = [str(p) for p in state.iterdir()] if state.exists() else []
    return left + ([str(p) for p in staging.iterdir()] if staging.exists() else [])


def test_cost_tutorial_runs(tmp_path):
    """The cheap one, in the default suite: `tpubench prices` needs no TensorFlow."""
    work, cache, out = _run(tmp_path, "cost.md", 120)
    assert out.stderr.count("+++ [") == len(doc_shell.commands((DOCS / "cost.md").read_text()))
    assert "gcp:v100" in out.stdout


@pytest.mark.slow
def test_data_tutorial_runs_and_leaves_nothing(tmp_path):
    work, cache, out = _run(tmp_path, "data.md", 1200)
    assert (work / "photos_jpeg" / "manifest.json").exists()
    assert "DAMAGED corrupted TFRecord shard damaged/train-00001-of-00004.tfrecord" in out.stdout
    assert "exit code 3" in out.stdout
    deadline = time.monotonic() + 15  # `kill %1` returns before the server has cleaned up
    while _left_behind(cache) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _left_behind(cache) == []
    assert not list(work.glob("gcs.env"))


# Paths a command reads, and the flags and keys that make them.
_READS = re.compile(
    r"(?:--data_dir=|tpubench (?:report|advise|runs|rerun) |tpubench-launch sweep )([\w./-]+)"
)
_MAKES = re.compile(r"(?:--output=|--results_dir=|mkdir -p |results_dir: |cat > )([\w./-]+)")


@pytest.mark.parametrize("name", TUTORIALS)
def test_tutorial_makes_what_it_uses(name):
    """Every local path a command reads was made by an earlier command (or heredoc)."""
    made: list[str] = []
    missing = []
    for cmd in doc_shell.commands((DOCS / name).read_text()):
        for path in _READS.findall(cmd.text):
            if path.startswith(("$", "gs:")) or cmd.fails:
                continue
            if not any(path == m or path.startswith(m.rstrip("/") + "/") for m in made):
                missing.append(f"{path} (in: {cmd.text.splitlines()[0]})")
        made += _MAKES.findall(cmd.text)
        if re.search(r"tpubench (train|infer)\b", cmd.text) and "--results_dir" not in cmd.text:
            made.append("runs")  # the default results directory
    assert not missing, f"docs/{name} uses what it never makes: {missing}"


def test_reports_and_launch_write_their_own_runs():
    def dirs(name):
        return {
            m for c in doc_shell.commands((DOCS / name).read_text()) for m in _MAKES.findall(c.text)
        }

    shared = {d for d in dirs("reports.md") & dirs("launch.md") if d.startswith("runs")}
    assert not shared, f"reports.md and launch.md both write {shared}"


@pytest.mark.slow
def test_launch_tutorial_runs(tmp_path):
    """A local sweep (grown by one batch size) and a local 2-worker cluster: minutes."""
    work, _, out = _run(tmp_path, "launch.md", 1800)
    records = sorted((work / "runs" / "threads").glob("*.json"))
    assert len(records) == 4  # 2 configurations, then 2 more once the grid grew
    assert "4 configuration(s), 2 already recorded in runs/threads, 2 to run" in out.stdout
    assert "tpubench-launch: cluster of 2 task(s) (multi_worker) finished" in out.stdout
    assert '"role": "worker"' in out.stdout


@pytest.mark.slow
def test_reports_tutorial_runs(tmp_path):
    """The vCPU sweep (18 runs) and the batch sweep (8): about 8 minutes on 2 busy vCPUs."""
    work, _, out = _run(tmp_path, "reports.md", 1800)
    assert len(list((work / "runs" / "vcpus").glob("*.json"))) == 6 * 2 + 3 * 2
    assert len(list((work / "runs" / "batches").glob("*.json"))) == 2 * 4
    charts = {"throughput.png", "relative.png", "cost_time.png"}
    made = {
        "report": charts | {"scaling.png"},
        "report_published": charts | {"scaling.png", "published.csv"},
        "report_batches": charts | {"batch.png", "batch.csv"},  # one thread count: no scaling
    }
    for name, files in made.items():
        assert files | {"report.html"} <= {p.name for p in (work / name).iterdir()}, name
    # The summary from the records themselves: the median over trials, and as its interval the
    # range, at 75% confidence for 3 trials and 1 - 2/64 = 96.9% for 6.
    rates: dict[tuple, list[float]] = {}
    for path in (work / "runs" / "vcpus").glob("*.json"):
        r = json.loads(path.read_text())
        key = (r["model"]["name"], int(r["flags"]["num_intra_threads"]))
        rates.setdefault(key, []).append(r["results"]["examples_per_sec"])
    with open(work / "report" / "summary.csv", newline="") as f:
        rows = {(row["model"], int(row["threads"])): row for row in csv.DictReader(f)}
    assert (
        rows.keys()
        == rates.keys()
        == {(m, t) for m in ("mnist_mlp", "cifar10_cnn") for t in (1, 2)}
    )
    for key, xs in rates.items():
        row = rows[key]
        assert float(row["examples_per_sec_median"]) == pytest.approx(statistics.median(xs))
        assert float(row["examples_per_sec_low"]) == pytest.approx(min(xs))
        assert float(row["examples_per_sec_high"]) == pytest.approx(max(xs))
        confidence = {3: 0.75, 6: 1 - 2 / 64}[len(xs)]
        assert float(row["interval_confidence"]) == pytest.approx(confidence, abs=1e-4), key
    assert "(96.9%)" in out.stdout and "(range," in out.stdout
    assert "Published figures (not measured by this report)" in out.stdout
    assert re.search(r"│ +ResNet-50 │ DGX-1 P100 │ +1 │(?: .*│)? +219 │", out.stdout)
    assert "Throughput and cost over batch size" in out.stdout
    for batch in (32, 128, 512):
        assert re.search(rf"│ +{batch} │ +[\d,]+ │", out.stdout), batch
    assert "(hidden_units=512 in 12 runs, hidden_units=32 in 1 run;" in out.stderr
    assert "cifar10_cnn: configurations for 50 epoch(s)" in out.stdout
    # a pick within the hour, or (on a machine much busier than this one) the closest miss
    pick = r"cifar10_cnn · gcp:n1-standard-\d · threads=\d: |no configuration can finish within 1"
    assert re.search(rf"^  on-demand: ({pick})", out.stdout, re.M)
    assert "Advice, on on-demand prices (--pricing=on_demand):" in out.stdout
