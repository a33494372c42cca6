"""`tpubench report` and `advise` over a folder of 1,100 records (issue 58 E: readers that scale).

The records are copies of a real one (fixtures/real/mnist_mlp.json, written
by a 20-step `tpubench train`), each its own trial at its own rate
(`tpubench.testing.record_copies`): 1,030 trials of one configuration, past
the 1,023 at which the median's interval used to overflow, and 70 of a
second (threads=1).  bench/report_scale.py times the same at 10,000.
"""

import csv
import gc
import json
import pathlib
import random
import statistics
import tracemalloc

import pytest
from scipy.stats import binom
from smoke import ok, run

from tpubench.report import load
from tpubench.testing import record_copies

TEMPLATE = pathlib.Path(__file__).parent / "fixtures" / "real" / "mnist_mlp.json"
N_A, N_B = 1030, 70
RATES_A = [1000.0 + i for i in range(N_A)]  # median 1514.5
EPOCH = 1437  # digits' training split, as the real record has it
USD_PER_HOUR = 0.095  # gcp:n1-standard-2 on demand, the record's first machine


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("scale") / "runs"
    template = json.loads(TEMPLATE.read_text())
    rates = list(RATES_A)
    random.Random(0).shuffle(rates)  # files in no particular order of rate
    record_copies.write(template, rates, str(d), prefix="a")
    template["config"]["hardware"]["num_intra_threads"] = 1
    record_copies.write(template, [2000.0 + i for i in range(N_B)], str(d), prefix="b")
    return d


def _ranks(n: int) -> int:
    """k: the 95% interval of the median is [x_(k), x_(n+1-k)] (scipy's binomial)."""
    return int(binom.ppf(0.025, n, 0.5))


def test_report_gives_the_median_and_its_interval_over_1030_trials(runs_dir, tmp_path):
    out = ok(run("tpubench", "report", runs_dir, "--output=rep", cwd=tmp_path))
    assert "wrote rep/report.html" in out
    with open(tmp_path / "rep" / "summary.csv") as f:
        rows = {r["threads"]: r for r in csv.DictReader(f)}
    a = rows["0"]
    k = _ranks(N_A)
    assert (int(a["trials"]), float(a["examples_per_sec_median"])) == (N_A, 1514.5)
    assert float(a["examples_per_sec_low"]) == pytest.approx(RATES_A[k - 1])  # 1483
    assert float(a["examples_per_sec_high"]) == pytest.approx(RATES_A[N_A - k])  # 1546
    assert float(a["interval_confidence"]) == pytest.approx(
        1 - 2 * binom.cdf(k - 1, N_A, 0.5), abs=1e-4
    )
    usd = statistics.median(EPOCH / r / 3600 * USD_PER_HOUR for r in RATES_A)
    assert float(a["usd_per_epoch_median"]) == pytest.approx(usd, rel=1e-9)
    assert int(rows["1"]["trials"]) == N_B
    assert float(rows["1"]["examples_per_sec_median"]) == pytest.approx(2034.5)
    for name in ("throughput.png", "relative.png", "report.md", "report.html"):
        assert (tmp_path / "rep" / name).stat().st_size > 0


def test_advise_over_1100_records_times_each_configuration_from_its_interval(runs_dir, tmp_path):
    out = ok(
        run(
            "tpubench",
            "advise",
            runs_dir,
            "--model=mnist_mlp",
            "--deadline=1h",
            cwd=tmp_path,
            env={"COLUMNS": "250"},
        )
    )
    row = next(x for x in out.splitlines() if "threads=default" in x and "n1-standard-2" in x)
    k = _ranks(N_A)
    # time: an epoch at the median rate; slow end: at the interval's low rate.
    cells = [c.strip() for c in row.split("│")]
    assert str(N_A) in cells
    assert f"{EPOCH / 1514.5:.3f} s" in cells and f"{EPOCH / RATES_A[k - 1]:.3f} s" in cells
    assert "cheapest of 4 that" in out and "1100 of 1100 records" in out


def test_the_reader_keeps_a_few_numbers_of_each_record_not_the_record(tmp_path):
    """Records of ~9 KB each: the loaded runs hold under 5 KB apiece (15 KB before issue 58)."""
    template = json.loads(TEMPLATE.read_text())
    record_copies.write(template, RATES_A[:200], str(tmp_path), prefix="m")
    gc.collect()
    tracemalloc.start()
    try:
        loaded = load.load([str(tmp_path)])
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(loaded.runs) == 200 and not loaded.excluded
    assert statistics.median(r.examples_per_sec for r in loaded.runs) == 1099.5
    on_disk = sum(p.stat().st_size for p in tmp_path.iterdir()) / len(loaded.runs)
    assert on_disk > 8000
    assert held / len(loaded.runs) < 5000, f"{held / len(loaded.runs):,.0f} bytes a run"


def test_many_configurations_chart_the_fastest_and_table_them_all(tmp_path):
    """75 configurations: the throughput chart draws the 60 fastest (plots.MAX_BARS), the
    summary table and CSV keep all 75."""
    from PIL import Image

    from tpubench.report import plots

    d = tmp_path / "runs"
    template = json.loads(TEMPLATE.read_text())
    n = plots.MAX_BARS + 15
    for k in range(1, n + 1):  # one configuration per thread count, the rate rising with it
        template["config"]["hardware"]["num_intra_threads"] = k
        record_copies.write(template, [100.0 + k], str(d), prefix=f"t{k}")
    ok(run("tpubench", "report", d, "--output=rep", cwd=tmp_path))
    with open(tmp_path / "rep" / "summary.csv") as f:
        assert len(list(csv.DictReader(f))) == n
    chart = json.loads(Image.open(tmp_path / "rep" / "throughput.png").text["tpubench:series"])
    rates = sorted(r for panel in chart for r in panel["examples_per_sec"])
    assert rates == pytest.approx([100.0 + k for k in range(16, n + 1)])  # the 60 fastest only
