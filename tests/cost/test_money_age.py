"""Dollar figures in one format, and the age of every price used."""

import datetime

import pytest

from tpubench.core import money
from tpubench.cost import catalog, catalog_rows


@pytest.mark.parametrize(
    "x, text",
    [
        (1234.567, "$1,234.57"),
        (12.345, "$12.35"),
        (1.1749, "$1.17"),
        (0.8714, "$0.871"),
        (0.0001, "$0.000100"),
        (3.5e-06, "$0.00000350"),
        (0.9996, "$1.00"),
        (0.0, "$0.00"),
        (None, "n/a"),
    ],
)
def test_money_has_three_significant_digits_and_no_exponent(x, text):
    assert money.usd(x) == text


@pytest.mark.parametrize(
    "earlier, later, months",
    [
        ("2025-01-01", "2026-11-23", 22),
        ("2025-01-24", "2026-11-23", 21),
        ("2026-11-23", "2026-11-23", 0),
    ],
)
def test_months_between_counts_whole_calendar_months(earlier, later, months):
    d = datetime.date.fromisoformat
    assert catalog.months_between(d(earlier), d(later)) == months


def test_age_note_names_the_date_and_the_age():
    today = datetime.date(2026, 12, 2)
    assert catalog.age_note(["2025-01-01"], today) == "prices as of 2025-01-01 (23 months old)"
    assert (
        catalog.age_note(["2026-11-23"], today) == "prices as of 2026-11-23 (less than a month old)"
    )
    both = catalog.age_note([datetime.date(2025, 1, 1), "2026-11-23"], today)
    assert both == "prices as of 2025-01-01 to 2026-11-23; the oldest 23 months old"


HEADER = "key,provider,kind,region,unit,count,on_demand,spot,as_of,source,status,notes,date_known"


def test_prices_of_unknown_date_are_named_so_and_given_no_age(tmp_path):
    import os
    import subprocess
    import sys

    path = tmp_path / "prices.csv"
    path.write_text(
        f"{HEADER}\n"
        "gcp:host-8,gcp,instance,us,instance-hour,0,0.40,,2025-01-01,a price page,confirmed,,\n"
        "gcp:t4,gcp,gpu,us,gpu-hour,1,0.35,,2026-11-23,a snapshot,unconfirmed,,no\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "tpubench", "prices", f"--price_catalog={path}"]
        + ["--machine=gcp:host-8+1xgcp:t4"],
        capture_output=True,
        text=True,
        timeout=120,
        # os.environ, not the C environment: readline (imported by pytest) sets COLUMNS=80
        # there, and the table would fold at 80 columns.
        env=dict(os.environ),
    )
    assert out.returncode == 0, out.stderr
    today = datetime.date.today()
    months = (today.year - 2025) * 12 + today.month - 1  # since 2025-01-01
    t4 = next(line for line in out.stdout.splitlines() if "gpu-hour" in line)
    assert "date unknown (read 2026-11-23)" in t4
    assert "  gcp:t4: unconfirmed, a snapshot" in out.stdout.splitlines()
    age = f"prices as of 2025-01-01 ({months} months old); some of unknown date (read 2026-11-23)"
    assert out.stdout.splitlines()[-1] == age


def test_age_note_of_rows_of_unknown_date_only():
    dated = catalog_rows.dated("2026-11-23", known=False)
    assert dated == "date unknown (read 2026-11-23)"
    assert catalog.age_note([dated]) == "prices of unknown date (read 2026-11-23)"


def test_shipped_rows_of_unknown_date_do_not_claim_one():
    """Rows copied from a snapshot of unknown date, or typed unchecked, show no fresh date."""
    undated = [
        r
        for r in catalog.load().rows
        if "snapshot read" in r.source or "not checked against" in r.source
    ]
    assert len(undated) > 30  # the GPU machines and TPU v6e added in 2026
    for r in undated:
        assert r.dated == f"date unknown (read {r.as_of.isoformat()})", r.key
