"""What one LoadGen test will hold in memory, checked before the test starts.

LoadGen builds a test's whole query schedule before it issues the first
query, and keeps a record per query (and per sample) until the test ends:
the schedule grows with min_duration x the rate LoadGen sizes the test by
(the server's target QPS, Offline's expected QPS, a stream's expected
latency), not with the work the SUT does.  `max_query_count` does not
shorten the schedule, it only stops the test early.  So a long minimum
duration at a fast model's rate (a day of single-stream queries at 0.8 ms
is 108 million queries) takes the host's memory before the first query.

Measured with mlcommons-loadgen 5.x and a SUT that answers at once (the
peak resident size less the process's own before the test):

| scenario | test | peak |
| --- | --- | --- |
| SingleStream | 1,000,000 queries (100 s at 0.1 ms) | 1,011 MiB |
| MultiStream, 8 samples a query | 100,000 queries (10 s at 0.1 ms) | 252 MiB |
| Server | 1,000,000 queries (10 s at 100,000 QPS) | 461 MiB |
| Offline | one query of 10,000,000 samples (10 s at 1,000,000/s) | 5,049 MiB |

The bytes below round those up; LoadGen's schedule also carries a tenth
more than the duration asks (its headroom), counted too.

Measured again for issue 58 (mlcommons-loadgen 6.0.17, 2-core VM; the peak
resident size of the test's process less its size before the test, VmHWM
reset before it): a bare SUT gave SingleStream 635 MiB for 1,056,000
queries (601 B each), Server 495 MiB for 1,056,000 and 583 MiB for
1,100,000 (up to 556 B a query: above the 512 this file had), Offline 509
MiB for 1,100,000 samples, MultiStream 186 MiB for 110,000 queries of 8;
`tpubench infer` itself (tiny MLP) peaked 157 MiB over its start for a
server test of 550,000 queries and 1,103 MiB for an Offline query of
4,068,365 samples, both under this estimate.  Only Server's bytes were low:
they are now 640 (1.25x the 512 they were, 1.15x the most measured, for the
allocator's rounding), so no measured test takes more than its estimate.

Every test is checked (`check`, called by the harness for each LoadGen run):
the flags, a `--user_conf` (whose keys reach LoadGen as they are) and a
server search's probes alike.
"""

from __future__ import annotations

import dataclasses
import math

from tpubench.core import bounds, errors

# Each scenario declares its bytes per scheduled query and per sample of a query
# (`Scenario.bytes_per_query`, `bytes_per_sample`: the table above) and what sizes its
# schedule (`Scenario.schedule`).
HEADROOM = 1.1  # LoadGen schedules a little past min_duration
# The share of this host's available memory a test's schedule may take (the
# model, its samples and TensorFlow need the rest).
SHARE = 0.5


@dataclasses.dataclass(frozen=True)
class Schedule:
    """What LoadGen will schedule for one test: its queries and samples, what sized them,
    and what else lowers it (appended to the refusal's accepted values)."""

    queries: int
    samples: int
    sized: str  # e.g. "600 s at 1,000 QPS"
    fix: str = ""  # e.g. " or a lower --target_qps"


def _up(x: float) -> int:
    """X rounded up to a whole count (1.1 x 86400 / 0.0008 is 118,800,000, not one more)."""
    return math.ceil(round(x, 6))


def count(settings, per_second: float | None = None, latency: float | None = None) -> int:
    """What LoadGen schedules for SETTINGS' minimum duration at PER_SECOND (queries or samples
    a second), or one query each LATENCY seconds; at least its minimum query count."""
    seconds = settings.min_duration_ms / 1000.0
    if latency is not None:
        n = _up(HEADROOM * seconds / max(latency, 1e-9))
    else:
        n = _up(HEADROOM * seconds * per_second)
    return max(int(settings.min_query_count), n)


def estimate(settings, scenario) -> int:
    """Bytes LoadGen will hold for SETTINGS' schedule in SCENARIO (its plug-in)."""
    plan = scenario.schedule(settings)
    return plan.queries * scenario.bytes_per_query + plan.samples * scenario.bytes_per_sample


def check(settings, run: str, scenario) -> None:
    """Refuses RUN (a LoadGen test of SCENARIO) whose schedule would pass SHARE of the
    available memory.

    One line names the schedule, what sized it and what is accepted; the
    harness raises it before LoadGen allocates anything.
    """
    need = estimate(settings, scenario)
    free = bounds.available_memory()
    if free is None or need <= SHARE * free:
        return
    plan = scenario.schedule(settings)
    queries, samples = plan.queries, plan.samples
    what = f"{queries:,} queries" if queries != 1 else f"one query of {samples:,} samples"
    seconds, least = settings.min_duration_ms / 1000.0, int(settings.min_query_count)
    if max(queries, samples) == least:  # the count sized it, not the duration
        fix = f"a --min_query_count of at most {int(least * SHARE * free / need):,}"
    else:  # the schedule grows in step with the duration
        fix = f"a --min_duration of at most {seconds * SHARE * free / need:,.0f} s at this rate"
    raise errors.UsageError(
        f"LoadGen's {scenario.loadgen_name} test '{run}' would schedule {what} ({plan.sized}), "
        f"about {need / 2**30:,.1f} GiB of its own bookkeeping before the first query; this "
        f"host has {free / 2**30:,.1f} GiB available and a test may take half; accepted: "
        f"{fix}{plan.fix} (in --user_conf too: its min_duration and targets are checked the "
        "same way)"
    )
