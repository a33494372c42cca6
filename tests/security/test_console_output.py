"""Class A of issue 25: record text cannot drive a terminal or fake a line.

Every command that prints record text (report, advise, runs, rerun) shows
control, bidi and zero-width characters as visible escapes and keeps a CR/LF
inside one line; Markdown escapes HTML and table syntax; CSV neutralises
formula prefixes.
"""

import csv
import io
import json
import os
import subprocess
import sys

import hostile
from hostile import FORMULA_MODEL, HOSTILE_MODEL, HTML_MODEL, raw_controls

from tpubench.core import safe_text


def _cli(*args, cwd=None):
    env = dict(os.environ, COLUMNS="400")
    return subprocess.run(
        [sys.executable, "-m", "tpubench", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )


def test_shown_escapes_every_unsafe_character_and_keeps_one_line():
    out = safe_text.shown(HOSTILE_MODEL)
    assert raw_controls(out) == []
    assert "\n" not in out
    assert "\\x1b]0;pwned\\x07" in out and "\\r\\nFAKE" in out and "\\u202e" in out
    assert "\\x9b" in out and "\\u200b" in out
    assert safe_text.shown("mnist_mlp") == "mnist_mlp"
    assert safe_text.shown("résumé ☃ 模型") == "résumé ☃ 模型"  # printable Unicode stays


def test_shown_truncates_long_values_and_keeps_them_apart():
    a, b = "m" * 2_000_000 + "a", "m" * 2_000_000 + "b"
    sa, sb = safe_text.shown(a), safe_text.shown(b)
    assert len(sa) < 260 and "2,000,001 chars" in sa
    assert sa != sb


def test_markdown_and_csv_cells():
    assert safe_text.markdown_cell(HTML_MODEL) == "&lt;img src=x onerror=alert(1)&gt;\\|cell"
    for bad in ("=1+1", "+A1", "-x", "@SUM(A1)", "\tx", "\rx"):
        assert safe_text.csv_cell(bad).startswith("'"), bad
    assert safe_text.csv_cell("-0.5") == "-0.5" and safe_text.csv_cell(3.0) == 3.0


def test_report_table_and_notes_show_escapes_not_raw_controls(tmp_path):
    runs = hostile.write_records(tmp_path / "runs", HOSTILE_MODEL)
    proc = _cli("report", runs)
    assert proc.returncode == 0, proc.stderr
    assert raw_controls(proc.stdout + proc.stderr) == []
    assert "\\x1b]0;pwned" in proc.stdout
    # The fake row never starts a line of its own.
    assert not [x for x in proc.stdout.splitlines() if x.lstrip("│ ").startswith("FAKE")]


def test_report_files_escape_markdown_html_and_csv_formulas(tmp_path):
    runs = tmp_path / "runs"
    hostile.write_records(runs / "a", HTML_MODEL)
    hostile.write_records(runs / "b", FORMULA_MODEL)
    out = tmp_path / "out"
    proc = _cli("report", runs, f"--output={out}")
    assert proc.returncode == 0, proc.stderr
    md = (out / "report.md").read_text()
    assert "<img" not in md and "&lt;img src=x onerror=alert(1)&gt;\\|cell" in md
    html = (out / "report.html").read_text()
    assert "<img src=x" not in html
    cells = [c for row in csv.reader(io.StringIO((out / "summary.csv").read_text())) for c in row]
    assert any("HYPERLINK" in c for c in cells)
    for c in cells:
        if c[:1] in ("=", "+", "-", "@", "\t", "\r"):
            float(c)  # only plain numbers may start so
    proc = _cli("report", runs, "--format=markdown")
    assert "<img" not in proc.stdout
    proc = _cli("report", runs, "--format=csv")
    assert "\n=HYPERLINK" not in proc.stdout and ",=HYPERLINK" not in proc.stdout


def test_advise_shows_escapes(tmp_path):
    runs = hostile.write_records(tmp_path / "runs", HOSTILE_MODEL)
    proc = _cli("advise", runs, f"--model={HOSTILE_MODEL}", "--deadline=1h")
    assert raw_controls(proc.stdout + proc.stderr) == [], proc.stdout + proc.stderr
    assert not [x for x in proc.stdout.splitlines() if x.lstrip("│ ").startswith("FAKE")]


def test_runs_lists_hostile_records_escaped(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    rec = hostile.record("r1", model=HOSTILE_MODEL)
    rec["status"] = "ok\x1b[2J"
    (runs / "r1.json").write_text(json.dumps(rec))
    proc = _cli("runs", runs)
    assert proc.returncode == 0, proc.stderr
    assert raw_controls(proc.stdout + proc.stderr) == []
    assert len([x for x in proc.stdout.splitlines() if x.strip()]) == 2  # header + one row


def test_prices_from_a_hostile_catalog_are_shown_escaped(tmp_path):
    import pathlib

    shipped = pathlib.Path(safe_text.__file__).parents[1] / "cost" / "prices.csv"
    rows = list(csv.reader(io.StringIO(shipped.read_text())))
    header, row = rows[0], rows[1][:]
    row[header.index("source")] = "evil" + hostile.ESCAPES + hostile.FAKE_ROW
    catalog = tmp_path / "catalog.csv"
    with catalog.open("w", newline="") as f:
        csv.writer(f).writerows([header, row])
    proc = _cli("prices", f"--price_catalog={catalog}")
    assert proc.returncode == 0, proc.stderr
    assert raw_controls(proc.stdout) == []
    assert not [x for x in proc.stdout.splitlines() if x.startswith("FAKE")]
