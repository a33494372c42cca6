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

import math

from tpubench.core import bounds, errors

# Bytes LoadGen holds per scheduled query, and per sample of a query.
# Server: 640, 1.25x the 512 first measured, which a 1,100,000-query test passed (556 B).
PER_QUERY = {"SingleStream": 1100, "MultiStream": 1100, "Server": 640, "Offline": 0}
PER_SAMPLE = {"SingleStream": 0, "MultiStream": 256, "Server": 0, "Offline": 560}
HEADROOM = 1.1  # LoadGen schedules a little past min_duration
# The share of this host's available memory a test's schedule may take (the
# model, its samples and TensorFlow need the rest).
SHARE = 0.5


def _up(x: float) -> int:
    """X rounded up to a whole count (1.1 x 86400 / 0.0008 is 118,800,000, not one more)."""
    return math.ceil(round(x, 6))


def scenario_name(lg, settings) -> str:
    """LoadGen's name of SETTINGS' scenario: SingleStream, MultiStream, Server or Offline."""
    for name in PER_QUERY:
        if settings.scenario == getattr(lg.TestScenario, name):
            return name
    return "SingleStream"


def schedule(lg, settings) -> tuple[str, int, int, str]:
    """(scenario, queries, samples, what sizes it) LoadGen will schedule for SETTINGS."""
    name = scenario_name(lg, settings)
    seconds = settings.min_duration_ms / 1000.0
    least = int(settings.min_query_count)
    if name == "Server":
        rate = float(settings.server_target_qps)
        queries = max(least, _up(HEADROOM * seconds * rate))
        return name, queries, queries, f"{seconds:g} s at {rate:,.6g} QPS"
    if name == "Offline":
        rate = float(settings.offline_expected_qps)
        samples = max(least, _up(HEADROOM * seconds * rate))
        return name, 1, samples, f"{seconds:g} s at an expected {rate:,.6g} samples/s"
    if name == "MultiStream":
        latency = settings.multi_stream_expected_latency_ns / 1e9
        per = int(settings.multi_stream_samples_per_query)
    else:
        latency, per = settings.single_stream_expected_latency_ns / 1e9, 1
    queries = max(least, _up(HEADROOM * seconds / max(latency, 1e-9)))
    return name, queries, queries * per, f"{seconds:g} s at {latency * 1e3:,.4g} ms a query"


def estimate(lg, settings) -> int:
    """Bytes LoadGen will hold for SETTINGS' schedule."""
    name, queries, samples, _ = schedule(lg, settings)
    return queries * PER_QUERY[name] + samples * PER_SAMPLE[name]


def check(lg, settings, run: str) -> None:
    """Refuses RUN (a LoadGen test) whose schedule would pass SHARE of the available memory.

    One line names the schedule, what sized it and what is accepted; the
    harness raises it before LoadGen allocates anything.
    """
    need = estimate(lg, settings)
    free = bounds.available_memory()
    if free is None or need <= SHARE * free:
        return
    name, queries, samples, sized = schedule(lg, settings)
    count = f"{queries:,} queries" if name != "Offline" else f"one query of {samples:,} samples"
    seconds, least = settings.min_duration_ms / 1000.0, int(settings.min_query_count)
    if max(queries, samples) == least:  # the count sized it, not the duration
        fix = f"a --min_query_count of at most {int(least * SHARE * free / need):,}"
    else:  # the schedule grows in step with the duration
        fix = f"a --min_duration of at most {seconds * SHARE * free / need:,.0f} s at this rate"
    if name == "Server":
        fix += " or a lower --target_qps"
    raise errors.UsageError(
        f"LoadGen's {name} test '{run}' would schedule {count} ({sized}), about "
        f"{need / 2**30:,.1f} GiB of its own bookkeeping before the first query; this host "
        f"has {free / 2**30:,.1f} GiB available and a test may take half; accepted: {fix} "
        "(in --user_conf too: its min_duration and targets are checked the same way)"
    )
