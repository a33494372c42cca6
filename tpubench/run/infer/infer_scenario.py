"""`tpubench infer --scenario=...`: one MLPerf LoadGen scenario, one run record.

The model is built as for the closed-loop sweep, and measured and recorded
through the same `infer_session.InferSession`.  First the closed loop
measures the batch sizes the scenario needs (tpubench's own timing, beside
LoadGen's in the record); then `--qsl_samples` inputs are
loaded to host memory, the SUT traces its batch shapes, and LoadGen runs
the scenario (the server scenario as a search for the highest VALID QPS).
LoadGen's verdict and figures are the record's results; its logs are kept
in RESULTS_DIR/<run_id>.files/.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import threading
import time

from tpubench.core import errors
from tpubench.cost import runs as cost_runs
from tpubench.run import interrupts, session
from tpubench.run.infer import infer_session, loadgen_conf, loadgen_sut, scenarios, serving_curve
from tpubench.storage import records

# Closed-loop results that stay in the record beside LoadGen's (not the per-batch lists).
_CLOSED_KEYS = (
    "examples_per_sec",
    "latency_p50",
    "latency_p90",
    "latency_p99",
    "timed_batches",
    "timed_seconds",
)


def run(infer: infer_session.InferSession, built: infer_session.Built) -> None:
    """Measures INFER's scenario on BUILT; its one record joins infer.records."""
    cfg = infer.cfg
    lg = scenarios.import_loadgen(cfg.scenario.name)
    rules, test_settings = loadgen_conf.read(lg, cfg.scenario, cfg.model)
    sc = rules.config  # the flags, then the user.conf, then mlperf.conf
    replicas = built.placement.num_replicas
    max_batch = sc.max_batch_size or max(built.batches)
    session.check_batches([max_batch], replicas)
    single = replicas  # the smallest batch a query can run as
    per_query = -(-sc.samples_per_query // replicas) * replicas
    sut_batch = {"single_stream": single, "multi_stream": per_query}.get(sc.name, max_batch)
    wanted = {"single_stream": [single], "multi_stream": [per_query], "offline": [max_batch]}
    wanted = wanted.get(sc.name, [single, max_batch])
    record = infer.new_record(sut_batch, built, 0)
    record["scenario"] = sc.name
    record["config"] = {**record["config"], "scenario": dataclasses.asdict(sc)}
    closed = _closed_loop(infer, built, wanted)
    measured, accuracy = infer.describe(built)
    prices = infer.prices()
    infer.add_host_sections(record)

    def keep(name: str, data: bytes) -> str | None:
        return infer.attach(record, name, data)

    harness = None
    on_signal = _signal_handler(infer, lambda: harness)
    t0 = time.perf_counter()
    samples = loadgen_sut.load_samples(built.runner, built.manifest, rules.qsl_samples, cfg.seed)
    batcher = loadgen_sut.Batcher(
        lg,
        samples,
        loadgen_sut.host_predictor(built.runner),
        sut_batch,
        sc.batching_window if sc.name == "server" else 0.0,
        loadgen_sut.bucket_sizes(sut_batch, replicas),
        on_signal,
        shed_after=_shed_after(sc),
    )
    harness = scenarios.Harness(lg, batcher, samples.count, keep)
    setup_seconds = time.perf_counter() - t0
    # A failed search keeps what it ran, and the rules it ran under.
    record["loadgen"] = {"runs": harness.runs, "rules": rules.section()}
    accelerators = session.accelerators_priced(built.placement)
    try:
        batcher.warm_up()
        infer.write(record)  # still "running": LoadGen starts now
        args = (closed, max_batch, single, per_query)
        out = _scenario(harness, lg, test_settings, sc, args, rules)
    finally:
        harness.close()
        if sc.name == "server":
            pct = sc.latency_percentile
            curve = serving_curve.points(harness.runs, pct, prices, accelerators)
            record["loadgen"]["curve"] = curve
    summary, rate = out["summary"], out["rate"]
    record["loadgen"] = {
        **record["loadgen"],
        "summary": summary,
        "runs": harness.runs,
        "settings": _settings(sc, rules, sut_batch, samples.count, setup_seconds),
        "logs": records.attachment_dir(cfg.results_dir, record["run_id"]),
    }
    for extra in ("confirmation", "offline_repeats"):
        if extra in out:
            record["loadgen"][extra] = out[extra]
    record["results"] = _results(sc, summary, rate, closed, max_batch, out, accuracy)
    record["mfu"] = measured.infer_section(rate)
    _price(record, prices, closed, accelerators)
    infer.finish(record)
    infer.done()


def _closed_loop(
    infer: infer_session.InferSession, built: infer_session.Built, wanted: list[int]
) -> dict:
    """{batch: closed-loop figures} at the batch sizes the scenario needs (tpubench's timing)."""
    closed = {}
    for batch in dict.fromkeys(wanted):
        results = infer.measure(built, batch)
        if not closed:
            infer.startup(batch)
        closed[batch] = {k: results[k] for k in _CLOSED_KEYS}
        closed[batch]["batch_size"] = batch
    return closed


def _price(record: dict, prices, closed: dict, accelerators: int) -> None:
    """The record's `cost` at LoadGen's rate, and `closed_loop_cost` at the largest batch."""
    results = record["results"]
    usage = cost_runs.Usage(
        results["examples_per_sec"], results["timed_seconds"] or 0.0, accelerators
    )
    record["cost"] = cost_runs.infer_costs(prices, usage)
    top = closed[max(closed)]
    closed_usage = cost_runs.Usage(top["examples_per_sec"], top["timed_seconds"], accelerators)
    record["closed_loop_cost"] = cost_runs.infer_costs(prices, closed_usage)
    record["closed_loop_cost"]["batch_size"] = top["batch_size"]


def _signal_handler(infer: infer_session.InferSession, harness):
    """on_signal for the SUT: after SIGINT/SIGTERM/SIGHUP, record it and end the process.

    LoadGen has no way to stop a test early (a server test would run on to
    its minimum duration), so the interrupted record is written here and the
    process exits at once with 130, the code `main` gives an interrupt.
    """
    signals = interrupts.current()
    once = threading.Lock()

    def on_signal() -> None:
        if not signals or not once.acquire(blocking=False):
            return
        message = (
            f"interrupted ({signals[-1]}) during a LoadGen run; LoadGen cannot stop a test "
            "early, so the runs so far are in the record and the process ends now"
        )
        h = harness()
        if h is not None and h.workdir:
            shutil.rmtree(h.workdir, ignore_errors=True)
        path = infer.fail("interrupted", message)
        where = f" [run record: {path}]" if path else ""
        # The one line `main` prints for an interrupted run: main never gets control back.
        print(f"tpubench infer: error: {message}{where}", file=sys.stderr, flush=True)
        os._exit(errors.InterruptedRun.exit_code)

    return on_signal


def _scenario(harness, lg, s, sc, args, rules) -> dict:
    """{"summary": LoadGen's result, "rate": the record's predictions/sec, ...} for SC."""
    closed, max_batch, single, per_query = args
    if sc.name == "server":
        cap = scenarios.Capacity(
            closed[max_batch]["examples_per_sec"],
            max_batch,
            closed[single][_percentile_key(sc.latency_percentile)],
        )
        scenarios.check_server(sc, cap, scenarios.qps_source(rules))
        scenarios.check_schedule(sc, rules)  # before LoadGen builds its schedule
        found = scenarios.search_server(harness, lg, s, sc, cap)
        if found["best"] is None:
            raise scenarios.no_valid_qps(sc, found["runs"])
        if sc.target_qps is not None:  # no search: the one full run at that QPS is the result
            best = found["best"]
            return {"summary": best, "rate": best.get("scheduled_qps") or sc.target_qps}
        check = scenarios.confirm_server(harness, lg, s, sc, found)
        confirmation = {
            "searched_qps": found["best"].get("target_qps"),
            "tries": [r["run"] for r in check["tries"]],
            "stepped_down_from": check["stepped_down"],
            "validity": (check["confirmed"] or check["tries"][-1]).get("validity"),
        }
        if check["confirmed"] is None:
            raise scenarios.unconfirmed(sc, found["best"], check["tries"])
        best = check["confirmed"]
        rate = best.get("scheduled_qps") or best.get("target_qps")
        return {"summary": best, "rate": rate, "confirmation": confirmation}
    if sc.name == "offline":
        found = scenarios.run_offline(harness, lg, s, sc, closed[max_batch]["examples_per_sec"])
        rates = [r.get("samples_per_sec") for r in found["results"]]
        repeats = scenarios.spread(rates) | {
            "runs_used": [r["run"] for r in found["results"]],
            "samples_per_sec": rates,
            "validity": [r.get("validity") for r in found["results"]],
        }
        return {
            "summary": found["median"],
            "rate": repeats.get("median"),
            "offline_repeats": repeats,
        }
    batch = single if sc.name == "single_stream" else per_query
    expected = closed[batch]["latency_p50"]
    summary = harness.run(loadgen_conf.for_run(lg, s, sc, expected), sc.name, sc.name)
    mean = summary.get("mean_latency_seconds")
    # LoadGen sizes a stream's schedule by the expected latency: when its queries ran
    # faster than the closed loop said (a host that got quieter), they ran out before the
    # minimum duration.  Once more, sized by what LoadGen measured, with a fifth to spare.
    if mean and not summary.get("min_duration_met") and not sc.expected_from_user_conf:
        again = loadgen_conf.for_run(lg, s, sc, 0.8 * mean)
        summary = harness.run(again, f"{sc.name}b", sc.name)
        mean = summary.get("mean_latency_seconds")
    if not mean:
        raise errors.RunInvalidError(f"LoadGen measured no latency in the {sc.name} scenario")
    per = 1 if sc.name == "single_stream" else sc.samples_per_query
    return {"summary": summary, "rate": per / mean}


def _results(sc, summary, rate, closed, max_batch, out, accuracy) -> dict:
    """The record's `results`: LoadGen's rate and latencies, the closed loop beside them."""
    results = {
        "examples_per_sec": rate,
        "timed_seconds": summary.get("wall_seconds"),
        "closed_loop": list(closed.values()),
    }
    lat = summary.get("latency_seconds", {})
    if sc.name == "offline":
        # One query holds every sample: these are times since that query was
        # issued, not per-batch latencies, and are kept under their own name.
        results["offline_sample_completion_seconds"] = {
            p: lat.get(p) for p in ("p50", "p90", "p99")
        }
        results["cross_check"] = _cross_check(out["offline_repeats"], closed[max_batch])
    else:
        results.update({f"latency_{p}": lat.get(p) for p in ("p50", "p90", "p99")})
    if summary.get("early_stopping_latency_seconds") is not None:
        # LoadGen's early-stopping estimate: the latency MLPerf reports for the streams.
        results["mlperf_latency_seconds"] = summary["early_stopping_latency_seconds"]
    if accuracy is not None:
        results["eval"] = accuracy
    return results


def _percentile_key(percentile: float) -> str:
    """The closed-loop latency key nearest the bound's percentile (p50, p90 or p99)."""
    return "latency_p99" if percentile > 90 else "latency_p90" if percentile > 50 else "latency_p50"


def _settings(sc, rules, sut_batch: int, samples: int, setup_seconds: float) -> dict:
    eff = rules.effective
    out = {
        "min_duration_seconds": eff["min_duration_seconds"],
        "min_query_count": eff["min_query_count"],
        "max_batch_size": sut_batch,
        "qsl_samples": samples,
        "samples_loaded_seconds": setup_seconds,
    }
    if sc.name == "server":
        out.update(
            latency_bound_seconds=sc.latency_bound,
            latency_percentile=sc.latency_percentile,
            batching_window_seconds=sc.batching_window,
            target_qps=sc.target_qps,
            qps_search=_qps_search(sc, rules),
        )
    if sc.name == "multi_stream":
        out["samples_per_query"] = sc.samples_per_query
    if sc.name == "offline":
        out["offline_runs"] = sc.offline_runs
    return out | rules.meets_minimums()


def _qps_search(sc, rules) -> str:
    if sc.target_qps is None:
        return "bisection"
    if scenarios.qps_source(rules) == "--target_qps":
        return "given --target_qps"
    return "given by the user.conf's target_qps"


def _cross_check(repeats: dict, closed: dict) -> dict:
    """Offline LoadGen throughput (every repeat) beside the closed loop's at the same batch."""
    mine = closed["examples_per_sec"]
    rates = [r for r in repeats.get("samples_per_sec", []) if r]
    ratios = [r / mine for r in rates] if mine else []
    return {
        "batch_size": closed["batch_size"],
        "loadgen_samples_per_sec": repeats.get("median"),
        "loadgen_runs": len(rates),
        "closed_loop_examples_per_sec": mine,
        "ratio": (repeats["median"] / mine) if repeats.get("median") and mine else None,
        "ratio_min": min(ratios) if ratios else None,
        "ratio_max": max(ratios) if ratios else None,
    }


def _shed_after(sc) -> float | None:
    """How long the oldest queued query may wait before a server run is given up.

    Twenty times the latency bound (at least 5 s): a run whose queue is that
    far behind can no longer be VALID, and serving on would only grow the
    backlog for the rest of the minimum duration.
    """
    if sc.name != "server" or sc.latency_bound is None:
        return None
    return max(20.0 * sc.latency_bound, 5.0)
