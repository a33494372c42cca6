"""README.md's figures about the test suite stay true: one time and one count, the count
within 10% of what pytest collects today, and `make test-quick` a target that runs the
test files README says it runs, all of them present."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
STATED = re.compile(r"pytest took (\d+) min (\d+) s for ([\d,]+) passed \+ ([\d,]+) skipped")
# A suite count with no time beside it ("for 1,298 tests", "the suite at 1,190 tests"): the
# stale kind this test replaces.
ANY_COUNT = re.compile(r"([\d,]{5,}) (?:passed|tests)\b")


def _collected() -> int:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    found = re.search(r"^(\d+)(?:/\d+)? tests? collected", proc.stdout, re.M)
    assert found, proc.stdout[-2000:] + proc.stderr[-2000:]
    return int(found.group(1))


def stated() -> tuple[int, int]:
    """(seconds, tests) README states for `make test`; exactly one such statement."""
    said = STATED.findall(" ".join(README.split()))
    assert len(said) == 1, f"README states the suite's time and count {len(said)} times"
    minutes, seconds, passed, skipped = said[0]
    return int(minutes) * 60 + int(seconds), int(passed.replace(",", "")) + int(skipped)


def test_readme_states_one_time_and_one_count():
    stated()
    counts = ANY_COUNT.findall(" ".join(README.split()))
    assert len(counts) == 1, f"README names several suite counts: {counts}"


def test_readmes_count_is_within_ten_percent_of_the_suite():
    _, tests = stated()
    collected = _collected()
    assert abs(collected - tests) <= 0.10 * collected, (
        f"README says {tests:,} tests; pytest collects {collected:,} (the default selection): "
        "measure `make test` again and update README's time and count"
    )


def test_make_test_quick_runs_what_readme_says():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^test-quick: lint$", makefile, re.M)
    joined = makefile.replace("\\\n", " ")
    files = re.search(r"^QUICK_TESTS := (.+)$", joined, re.M).group(1).split()
    assert all((ROOT / f).exists() for f in files), files
    assert {"tests/test_layers.py", "tests/docs"} <= set(files)
    assert {f for f in files if f.startswith("tests/test_smoke")} == {
        str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_smoke*.py")
    }
    assert "make test-quick" in README and "under 5 minutes of wall time" in README
