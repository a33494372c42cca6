"""`tpubench report` and `tpubench advise` as a user runs them: exit codes, files,
one-line errors, no TensorFlow, and the HTML page in a real headless browser."""

import datetime
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
from conftest import NO_TF_CLI, one_line_error
from PIL import Image

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def cli(*args, columns=200):
    return subprocess.run(
        [sys.executable, "-c", NO_TF_CLI, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": str(columns)},
    )


def test_report_cli_writes_files_without_tensorflow(tmp_path):
    out = tmp_path / "out"
    proc = cli("report", FIXTURES / "threads", f"--output={out}", "--baseline=threads=2")
    assert proc.returncode == 0, proc.stderr
    assert "Throughput and cost per configuration" in proc.stdout
    assert re.search(r"mnist_mlp · gcp:n1-standard-1 · threads=1 +│ +6 │ +1,025 │", proc.stdout)
    assert f"wrote {out}/report.html" in proc.stdout
    names = {p.name for p in out.iterdir()}
    assert {"summary.csv", "report.md", "report.html", "throughput.png", "relative.png"} <= names
    assert {"scaling.png", "cost_time.png", "excluded.csv", "pareto.csv"} <= names
    relative = (out / "relative.csv").read_text()
    assert (
        "mnist_mlp · gcp:n1-standard-1 · threads=1,mnist_mlp · gcp:n1-standard-2 · threads=2,"
        in relative
    )


def test_report_csv_on_stdout():
    proc = cli("report", FIXTURES / "gpus", "--format=csv")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("kind,configuration,model,machine,")
    assert len(lines) == 4 and all(x.startswith("measured,resnet50") for x in lines[1:])


@pytest.mark.parametrize(
    "args, message",
    [
        ((), "give run records, directories or gs:// prefixes"),
        ((FIXTURES / "mixed",), "--allow_mixed="),
        ((FIXTURES / "threads", "--baseline=threads=9"), "--baseline=threads=9 matches no"),
        ((FIXTURES / "threads", "--published=dgx"), "unknown --published set 'dgx'"),
        ((FIXTURES / "threads", "--format=pdf"), "--format"),
    ],
)
def test_report_errors_are_one_line(args, message):
    proc = cli("report", *args)
    assert proc.returncode == 2
    assert message in one_line_error(proc)


def test_advise_cli_without_tensorflow():
    prices = f"--price_catalog={FIXTURES / 'prices' / 'advise.csv'}"  # a refresh changes nothing
    proc = cli("advise", FIXTURES / "tpus", "--model=resnet50", "--deadline=15m", prices)
    assert proc.returncode == 0, proc.stderr
    assert "on-demand: resnet50 · gcp:tpu-v5e-4 · replicas=4: 13.8 min for $1.10" in proc.stdout
    assert "spot: resnet50" not in proc.stdout  # one basis per answer
    spot = cli(
        "advise", FIXTURES / "tpus", "--model=resnet50", "--deadline=15m", prices, "--pricing=spot"
    )
    assert "spot: resnet50 · gcp:tpu-v5e-4 · replicas=4: 13.8 min for $0.196" in spot.stdout
    assert "on-demand: resnet50" not in spot.stdout
    # The age of the prices, counted here from the fixtures' catalog date.
    today = datetime.date.today()
    months = (today.year - 2025) * 12 + today.month - 1
    assert f"prices as of 2025-01-01 ({months} months old)" in proc.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (("--deadline=soon",), "--deadline='soon' is not a positive duration"),
        (("--deadline=1h", "--budget=3"), "exactly one of --deadline"),
        (("--budget=-1",), "--budget=-1.0 is out of range; accepted: 0.01 to 1e+09 (USD)"),
        (("--model=", "--deadline=1h"), "--model is required"),
    ],
)
def test_advise_errors_are_one_line(args, message):
    proc = cli("advise", FIXTURES / "tpus", "--model=resnet50", *args)
    assert proc.returncode == 2
    assert message in one_line_error(proc)


# A probe appended to a copy of the page: after load it lists what the
# browser decoded (images) and laid out (tables).
_PROBE = """<script>
window.addEventListener("load", () => {
  const images = [...document.images].map(i =>
      [i.closest("figure").id, i.complete, i.naturalWidth, i.naturalHeight, i.width]);
  const tables = [...document.querySelectorAll("table")].map(t =>
      [t.id, t.rows.length, t.rows[1].cells[0].innerText, t.getBoundingClientRect().height]);
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify({images, tables});
  document.body.appendChild(pre);
});
</script>"""


def test_html_page_renders_in_headless_chromium(tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    out = tmp_path / "out"
    proc = cli("report", FIXTURES / "threads", f"--output={out}")
    assert proc.returncode == 0, proc.stderr
    page = (out / "report.html").read_text()
    assert "http://" not in page and "https://" not in page  # self-contained
    (tmp_path / "probe.html").write_text(page.replace("</body>", _PROBE + "</body>"))
    dom = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            (tmp_path / "probe.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    probe = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    images = {name: rest for name, *rest in probe["images"]}
    assert set(images) == {
        "figure-throughput",
        "figure-relative",
        "figure-scaling",
        "figure-cost_time",
    }
    for name, (complete, width, height, shown) in images.items():
        png = Image.open(out / f"{name.removeprefix('figure-')}.png")
        assert complete and (width, height) == png.size, name  # decoded, full size
        assert shown > 300, name
    tables = {name: rest for name, *rest in probe["tables"]}
    assert tables["table-summary"][:2] == [5, "cifar10_cnn · gcp:n1-standard-1 · threads=1"]
    assert tables["table-excluded"][0] == 5
    assert all(height > 40 for _, _, height in tables.values())


@pytest.mark.parametrize("columns", [80, 100])
def test_report_tables_fit_columns_and_say_what_was_left_out(tmp_path, columns):
    proc = cli("report", FIXTURES / "threads", f"--output={tmp_path / 'out'}", columns=columns)
    assert proc.returncode == 0, proc.stderr
    tables = [ln for ln in proc.stdout.splitlines() if ln[:1] in "┏┃┡│└"]
    assert len(tables) > 20
    too_wide = [line for line in tables if len(line) > columns]
    assert not too_wide, too_wide
    summary = proc.stdout.split("Throughput and cost per configuration")[1].split("\n\n")[0]
    header = [ln for ln in summary.splitlines() if ln.startswith("┃")][0]
    flat = " ".join(summary.split())
    note = re.search(rf"left out to fit {columns} columns: (.+?) \(all columns", flat)
    assert note, summary
    left_out = note.group(1).split(", ")
    assert left_out and all(name not in header for name in left_out)
    assert "configuration" in header and "examples/sec" in header


@pytest.mark.parametrize("columns", [80, 100])
def test_narrow_tables_keep_their_numbers(tmp_path, columns):
    """Labels fold and lesser columns go, but no table is left without its figures."""
    batches = cli("report", FIXTURES / "batches", f"--output={tmp_path / 'b'}", columns=columns)
    published = cli(
        "report",
        FIXTURES / "threads",
        "--published=tf-dgx1",
        f"--output={tmp_path / 'p'}",
        columns=columns,
    )
    assert batches.returncode == 0 and published.returncode == 0, batches.stderr
    expected = {
        "Training time and cost relative to the baseline": (batches, ["time ×", "cost ×"]),
        "Published figures (not measured by this report)": (published, ["examples/sec"]),
    }
    for title, (proc, figures) in expected.items():
        table = proc.stdout.split(title)[1].split("\n\n")[0]
        header = next(ln for ln in table.splitlines() if ln.startswith("┃"))
        assert all(f in header for f in figures), (title, header)
        assert max(len(ln) for ln in table.splitlines() if ln[:1] in "┏┃│└") <= columns
    # the published DGX-1 ResNet-50 rate, one device, synthetic data, as the study printed it
    assert re.search(r"│ +ResNet-50 │ DGX-1 P100 │ +1 │(?: .*│)? +219 │", published.stdout)


def test_report_time_per_epoch_and_accuracy_read_alike(tmp_path):
    proc = cli("report", FIXTURES / "threads", f"--output={tmp_path / 'out'}")
    summary = proc.stdout.split("Throughput and cost per configuration")[1].split("\n\n")[0]
    rows = [ln for ln in summary.splitlines() if ln.startswith("│ mnist_mlp · gcp")]
    assert len(rows) >= 2
    for row in rows:
        cells = [c.strip() for c in row.strip("│").split("│")]
        assert re.fullmatch(r"[\d.]+ (s|min|h|d)", cells[4]), cells  # time/epoch with its unit
        assert re.fullmatch(r"(\d\.\d{4}|n/a)", cells[7]), cells  # accuracy: four decimals
