"""Dollar figures in one format, and the age of every price used."""

import datetime

import pytest

from tpubench.cost import catalog, money


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
