"""`tpubench report`: table numbers and plotted series against values worked out by hand
from the fixture records (tests/report/fixtures/make_fixtures.py lists every input)."""

import csv
import json
import pathlib
import re

import pytest
from PIL import Image

from tpubench.cli import report as cli
from tpubench.core.config import ReportConfig
from tpubench.report import published

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
MLP_T1 = [1000, 1100, 900, 1050, 950, 1200]  # examples/sec of the six 1-thread trials
MLP_T2 = [1800, 2000, 1900]
EPOCH = 1437  # digits train split
N1_1, N1_2 = 0.0475, 0.095  # $/hour, gcp:n1-standard-1 and -2


@pytest.fixture(scope="module")
def threads(tmp_path_factory):
    out = tmp_path_factory.mktemp("threads_report")
    cfg = ReportConfig(inputs=(str(FIXTURES / "threads"),), output=str(out))
    report = cli.build(cfg)
    cli.write(report, str(out), "fixture report")
    return report, out


def _csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_summary_numbers(threads):
    report, out = threads
    rows = {r["configuration"]: r for r in _csv(out / "summary.csv")}
    assert {r["kind"] for r in rows.values()} == {"measured"}
    t1 = rows["mnist_mlp · gcp:n1-standard-1 · threads=1"]
    # six trials: median of 1000 and 1050; the range of 6 is a 1 - 2/64 interval
    assert float(t1["examples_per_sec_median"]) == 1025
    assert (float(t1["examples_per_sec_low"]), float(t1["examples_per_sec_high"])) == (900, 1200)
    assert float(t1["interval_confidence"]) == pytest.approx(0.9688, abs=1e-4)
    assert float(t1["seconds_per_epoch_median"]) == pytest.approx((EPOCH / 1000 + EPOCH / 1050) / 2)
    usd_epoch = [EPOCH / r / 3600 * N1_1 for r in MLP_T1]
    assert float(t1["usd_per_epoch_median"]) == pytest.approx(
        (EPOCH / 1000 + EPOCH / 1050) / 2 / 3600 * N1_1
    )
    assert float(t1["usd_per_epoch_low"]) == pytest.approx(min(usd_epoch))
    assert float(t1["accuracy_median"]) == pytest.approx(0.925)
    assert t1["trials"] == "6" and t1["price_dates"] == "2025-01-01"
    t2 = rows["mnist_mlp · gcp:n1-standard-2 · threads=2"]
    assert float(t2["examples_per_sec_median"]) == 1900
    assert float(t2["interval_confidence"]) == 0.75  # the range of 3 trials
    cnn = rows["cifar10_cnn · gcp:n1-standard-1 · threads=1"]
    assert float(cnn["examples_per_sec_median"]) == 110 and cnn["accuracy_median"] == ""
    md = (out / "report.md").read_text()
    assert "| mnist_mlp · gcp:n1-standard-1 · threads=1 | 6 | 1,025 | 900–1,200 (96.9%) |" in md
    assert (
        "| mnist_mlp · gcp:n1-standard-2 · threads=2 | 3 | 1,900 | 1,800–2,000 (range, 75%) |" in md
    )


def test_excluded_runs_are_listed_not_dropped(threads):
    _, out = threads
    rows = {r["run_id"] or pathlib.Path(r["path"]).name: r for r in _csv(out / "excluded.csv")}
    assert set(rows) == {"mlp-failed", "mlp-interrupted", "mlp-running", "notes.json"}
    assert rows["mlp-failed"]["reason"] == "unknown price key 'gcp:n9'"


def test_relative_numbers_and_bars(threads):
    report, out = threads
    rows = {r["configuration"]: r for r in _csv(out / "relative.csv")}
    t2 = rows["mnist_mlp · gcp:n1-standard-2 · threads=2"]
    assert t2["baseline"] == "mnist_mlp · gcp:n1-standard-1 · threads=1"
    time = 1025 / 1900  # seconds per example over the baseline's
    per_million_t1 = (1e6 / 1000 + 1e6 / 1050) / 2 / 3600 * N1_1
    cost = 1e6 / 1900 / 3600 * N1_2 / per_million_t1
    assert float(t2["time_ratio"]) == pytest.approx(time)
    assert float(t2["time_ratio_low"]) == pytest.approx(1025 / 2000)
    assert float(t2["cost_ratio"]) == pytest.approx(cost)
    fig, series, _ = report.figures["relative"]
    time_ax, cost_ax = fig.axes[:2]
    # bars in drawing order: cifar10_cnn (t1, t2), mnist_mlp (t1, t2)
    heights = [p.get_height() for p in time_ax.patches]
    assert heights == pytest.approx([1, 110 / 160, 1, time])
    assert [p.get_height() for p in cost_ax.patches][3] == pytest.approx(cost)
    assert "prices as of 2025-01-01" in cost_ax.get_title()
    assert "× baseline" in time_ax.get_ylabel()


def test_throughput_bars(threads):
    report, out = threads
    fig, _, _ = report.figures["throughput"]
    ax_cnn, ax_mlp = fig.axes
    assert ax_mlp.get_title(loc="left") == "mnist_mlp"
    assert [p.get_width() for p in ax_mlp.patches] == [1025, 1900]
    assert [t.get_text() for t in ax_mlp.get_yticklabels()] == [
        "gcp:n1-standard-1 · threads=1",
        "gcp:n1-standard-2 · threads=2",
    ]
    assert [p.get_width() for p in ax_cnn.patches] == [110, 160]
    assert "examples/sec" in ax_mlp.get_xlabel()
    # the PNG on disk carries the same series
    png = Image.open(out / "throughput.png")
    embedded = json.loads(png.text["tpubench:series"])
    assert embedded[1]["examples_per_sec"] == [1025, 1900]
    assert png.size[0] > 400


def test_scaling_against_ideal(threads):
    report, out = threads
    rows = [r for r in _csv(out / "scaling.csv") if r["series"] == "mnist_mlp"]
    assert [(r["count"], float(r["ideal"])) for r in rows] == [("1", 1025), ("2", 2050)]
    assert float(rows[1]["efficiency_percent"]) == pytest.approx(100 * 1900 / 2050)
    fig, _, _ = report.figures["scaling"]
    ax, ax_eff = fig.axes[:2]
    lines = {line.get_label(): line for line in ax.lines + ax_eff.lines}
    ideal = lines["_ideal mnist_mlp"]
    assert list(ideal.get_xdata()) == [1, 2] and list(ideal.get_ydata()) == [1025, 2050]
    eff = lines["_efficiency cifar10_cnn"]
    assert list(eff.get_ydata()) == pytest.approx([100, 100 * 160 / 220])
    measured = {c.get_label(): c.lines[0] for c in ax.containers}
    assert list(measured["mnist_mlp"].get_ydata()) == [1025, 1900]
    assert ax.get_xlabel() == "threads" and "% of ideal" in ax_eff.get_ylabel()
    # the whiskers say their confidence: cifar10_cnn has 2 trials a point, mnist_mlp 3 and 6
    assert "(whiskers: 50% to 96.9% intervals of the median over trials)" in ax.get_title()


def test_cost_time_pareto(threads):
    report, out = threads
    rows = {r["configuration"]: r for r in _csv(out / "pareto.csv")}
    t1 = rows["mnist_mlp · gcp:n1-standard-1 · threads=1"]
    assert float(t1["usd_per_epoch"]) == pytest.approx(
        (EPOCH / 1000 + EPOCH / 1050) / 2 / 3600 * N1_1
    )
    # 2 threads is faster but dearer per epoch: both are on the front
    assert {r["on_front"] for r in rows.values()} == {"True"}
    fig, _, _ = report.figures["cost_time"]
    ax = next(a for a in fig.axes if a.get_title() == "mnist_mlp")
    front = [float(v) for p in ax.collections[0].get_offsets() for v in p]
    assert front == pytest.approx(
        [EPOCH / 1900, EPOCH / 1900 / 3600 * N1_2, (EPOCH / 1000 + EPOCH / 1050) / 2]
        + [float(t1["usd_per_epoch"])]
    )
    assert "time per epoch (s" in ax.get_xlabel() and "USD" in ax.get_ylabel()
    assert "prices as of 2025-01-01" in fig.texts[0].get_text()


def test_cost_axis_prints_dollars_in_plain_decimals(threads):
    """Ticks near $0.00002 (the fixture's $/epoch) read $0.000020 or $0.00001825, never
    $2e-05: plain decimals, as many as the tick spacing needs, the same on every tick."""
    report, _ = threads
    fig, _, _ = report.figures["cost_time"]
    ax = next(a for a in fig.axes if a.get_title() == "mnist_mlp")
    fig.canvas.draw()
    shown = [
        (loc, t.get_text()) for loc, t in zip(ax.get_yticks(), ax.get_yticklabels(), strict=True)
    ]
    low, high = ax.get_ylim()
    shown = [(loc, text) for loc, text in shown if low <= loc <= high and loc > 0]
    assert len(shown) >= 2 and max(loc for loc, _ in shown) < 1e-4
    for loc, text in shown:
        assert re.fullmatch(r"\$0\.0*[1-9]\d*", text), text
        assert float(text[1:]) == pytest.approx(loc, rel=1e-6)  # exact: no rounding
    assert len({len(text) for _, text in shown}) == 1  # one number of decimals
    assert any(not text.endswith("0") for _, text in shown)  # no padding zeros


def test_gpu_and_tpu_scaling_and_front(tmp_path):
    cfg = ReportConfig(inputs=(str(FIXTURES / "gpus"), str(FIXTURES / "tpus")))
    report = cli.build(cfg)
    series = {s.name: s for s in report.scaling}
    gpu = series["resnet50 · accelerator=gpu"]
    assert [p.count for p in gpu.points] == [1, 2, 4]
    assert [p.efficiency for p in gpu.points] == pytest.approx([100, 97.5, 87.5])
    tpu = series["resnet50 · accelerator=tpu"]
    assert [p.ideal for p in tpu.points] == [1550, 3100]
    front = {p.summary.label: p.on_front for p in report.pareto["resnet50"]}
    assert [label for label, on in front.items() if on] == [
        "resnet50 · gcp:tpu-v5e-8 · accelerator=tpu · replicas=8",
        "resnet50 · gcp:tpu-v5e-4 · accelerator=tpu · replicas=4",
    ]
    assert any(
        "input-bound runs: resnet50 · gcp:n1-standard-8+4xgcp:v100" in w for w in report.warnings
    )
    assert any("2.20.0, 2.21.0" in w for w in report.warnings)


def test_published_figures_as_printed():
    dgx1 = published.select(["tf-dgx1"])
    assert len(dgx1) == 39  # 5 models x 4 GPU counts x synthetic/real, AlexNet real at 8 n.a.
    r50 = [f.examples_per_sec for f in dgx1 if f.model == "ResNet-50" and f.data == "synthetic"]
    assert r50 == [219, 422, 852, 1734]
    (series,) = [
        s for s in published.scaling(dgx1) if s.name.endswith("ResNet-50, DGX-1 P100, synthetic")
    ]
    assert series.efficiency[-1] == pytest.approx(100 * 1734 / (8 * 219))
    assert len(published.select(["all"])) == 39 + 10 + 5 + 3


def test_published_rows_stay_apart(tmp_path):
    cfg = ReportConfig(
        inputs=(str(FIXTURES / "gpus"),),
        output=str(tmp_path),
        published=("tf-k80-distributed", "riseml"),
    )
    report = cli.build(cfg)
    cli.write(report, str(tmp_path), "t")
    pub = _csv(tmp_path / "published.csv")
    assert {r["kind"] for r in pub} == {"published"} and len(pub) == 5 + 3
    assert [float(r["examples_per_sec"]) for r in pub if r["set"] == "riseml"] == [
        21402,
        1658,
        2778,
    ]
    # RiseML's one Cloud TPU was a v2-8: 4 chips, so 21,402/s is 5,350.5/s a chip.
    riseml = [r for r in pub if r["set"] == "riseml"]
    assert [(int(r["chips"]), float(r["examples_per_sec_per_chip"])) for r in riseml] == [
        (4, 5350.5),
        (1, 1658),
        (1, 2778),
    ]
    aws = [r for r in pub if r["set"] == "tf-k80-distributed"]
    assert [float(r["examples_per_sec_per_chip"]) for r in aws][-1] == pytest.approx(2744 / 64)
    assert {r["kind"] for r in _csv(tmp_path / "summary.csv")} == {"measured"}
    assert len(report.summaries) == 3  # published figures never become measured groups
    fig, plotted, _ = report.figures["scaling"]
    assert [d["name"] for d in plotted] == [
        "resnet50",
        "published: ResNet-50, AWS K80, distributed_replicated, synthetic",
    ]
    assert [d["published"] for d in plotted] == [False, True]
    assert plotted[1]["efficiency"][-1] == pytest.approx(100 * 2744 / (64 * 52.4))
    pub_ax = fig.axes[2]  # the published row of panels
    assert pub_ax.get_xlabel() == "devices (published)"
    assert "whiskers" in fig.axes[0].get_title() and "whiskers" not in pub_ax.get_title()
    assert [float(y) for y in pub_ax.containers[0].lines[0].get_ydata()] == [
        52.4,
        378,
        751,
        1388,
        2744,
    ]
    md = (tmp_path / "report.md").read_text()
    assert "### Published figures (not measured by this report)" in md


# ------------------------------------------------------------ batch sweep
# tests/report/fixtures/batches: mnist_mlp fp32 at batch 64, 128, 256 and bf16 at 256, 3 trials
B_RATES = {64: [700, 720, 680], 128: [1000, 1050, 980], 256: [1500, 1400, 1450]}
B_TARGETS = {64: [30, 32, 29], 128: [25, 26, 27], 256: [40, 38]}  # one 256 trial never got there


def test_batch_sweep_is_compared_and_charted_by_default(tmp_path):
    report = cli.build(ReportConfig(inputs=(str(FIXTURES / "batches"),)))
    cli.write(report, str(tmp_path), "batches")
    rows = _csv(tmp_path / "batch.csv")
    # one series (fp32): bf16 has a single batch size
    assert {r["series"] for r in rows} == {"mnist_mlp · gcp:n1-standard-1 · precision=fp32"}
    assert [int(r["batch"]) for r in rows] == [64, 128, 256]
    for r in rows:
        rates = sorted(B_RATES[int(r["batch"])])
        assert float(r["examples_per_sec_median"]) == rates[1]
        assert float(r["usd_per_million_examples_median"]) == pytest.approx(
            1e6 / rates[1] / 3600 * N1_1
        )
        targets = sorted(B_TARGETS[int(r["batch"])])
        median_t = targets[1] if len(targets) == 3 else sum(targets) / 2
        assert float(r["seconds_to_target_median"]) == pytest.approx(median_t)
        assert float(r["usd_to_target_median"]) == pytest.approx(median_t / 3600 * N1_1)
    assert rows[2]["target_reached"] == "2/3"
    # the chart plots the same numbers, and its whiskers say their confidence
    fig, series, _ = report.figures["batch"]
    ax, ax_cost = fig.axes[:2]
    line = ax.containers[0].lines[0]
    assert list(line.get_xdata()) == [64, 128, 256]
    assert list(line.get_ydata()) == [700, 1000, 1450]
    assert "75% interval of the median" in ax.get_title()
    assert list(ax_cost.lines[0].get_ydata()) == pytest.approx(
        [1e6 / r / 3600 * N1_1 for r in (700, 1000, 1450)]
    )
    embedded = json.loads(Image.open(tmp_path / "batch.png").text["tpubench:series"])
    assert embedded[0]["batches"] == [64, 128, 256]
    # convergence columns carry the mark and the note beside them
    summary = report.tables["summary"]
    col = summary.columns.index("to target (s)")
    assert all(row[col].endswith(" *") for row in summary.rows)
    assert any("time and $ to the target accuracy include convergence" in n for n in summary.notes)
    assert any("differ in batch size (64 in 3 runs" in w for w in report.warnings)


def test_no_convergence_mark_without_a_batch_change(threads):
    report, _ = threads
    summary = report.tables["summary"]
    assert not any("*" in cell for row in summary.rows for cell in row)
    assert "batch" not in report.tables


def test_throughput_chart_states_its_confidence(threads):
    report, _ = threads
    fig, _, caption = report.figures["throughput"]
    ax_cnn, ax_mlp = fig.axes
    # two trials: the range covers the median half the time; three: 75%; six: 1 - 2/64
    assert "50% interval of the median over trials" in ax_cnn.get_xlabel()
    assert "75% to 96.9% intervals of the median" in ax_mlp.get_xlabel()
    notes = [t.get_text() for t in ax_mlp.texts]
    assert notes == ["1,025  (n=6, 96.9%)", "1,900  (n=3, 75%)"]
    assert "50% to 96.9% intervals" in caption


def test_a_sub_second_epoch_prints_its_time_not_zero(threads):
    # 2 threads: 1,437 examples at a median of 1,900/s (the trial at the median) = 0.756 s
    _, out = threads
    row = next(
        ln
        for ln in (out / "report.md").read_text().splitlines()
        if "mnist_mlp · gcp:n1-standard-2 · threads=2 |" in ln
    )
    assert row.split(" | ")[5] == "0.756 s", row
