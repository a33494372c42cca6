"""`tpubench infer --scenario=...`: one MLPerf LoadGen scenario, one run record.

The model is built as for the closed-loop sweep, and measured and recorded
through the same `infer_session.InferSession`.  First the closed loop
measures the batch sizes the scenario needs (tpubench's own timing, beside
LoadGen's in the record); then `--qsl_samples` inputs are
loaded to host memory, the SUT traces its batch shapes, and LoadGen runs
the scenario (the server scenario as a search for the highest VALID QPS).
LoadGen's verdict and figures are the record's results; its logs are kept
in RESULTS_DIR/<run_id>.files/.

This module drives that protocol for every scenario; what differs between
them (batching, LoadGen's runs, the record's fields) is asked of the
scenario's plug-in (`scenarios.Scenario`), never decided by its name.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time

from tpubench.core import errors, host_load
from tpubench.cost import runs as cost_runs
from tpubench.hardware import hostcpu
from tpubench.run import interrupts, session
from tpubench.run.infer import harness as harness_lib
from tpubench.run.infer import infer_session, loadgen_conf, loadgen_sut, scenarios
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
    scenario = cfg.scenario.plugin  # resolved from --scenario once, at the CLI edge
    lg = harness_lib.import_loadgen(cfg.scenario.name)
    rules, test_settings = loadgen_conf.read(lg, cfg.scenario, cfg.model, cfg.tiny)
    sc = rules.config  # the flags, then the user.conf, then mlperf.conf
    replicas = built.placement.num_replicas
    max_batch = sc.max_batch_size or max(built.batches)
    session.check_batches([max_batch], replicas)
    single = replicas  # the smallest batch a query can run as
    samples_per_query = int(test_settings.multi_stream_samples_per_query)
    per_query = -(-samples_per_query // replicas) * replicas
    batches = scenarios.Batches(single, per_query, max_batch)
    sut_batch = scenario.sut_batch(batches)
    record = infer.new_record(sut_batch, built, 0)
    record["scenario"] = sc.name
    record["config"] = {**record["config"], "scenario": sc.to_dict()}
    closed = _closed_loop(infer, built, scenario.closed_loop_batches(batches))
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
        scenario.batching_window(sc),
        loadgen_sut.bucket_sizes(sut_batch, replicas),
        on_signal,
        shed_after=scenario.shed_after(sc),
    )
    harness = harness_lib.Harness(lg, batcher, samples.count, keep)
    setup_seconds = time.perf_counter() - t0
    # A failed search keeps what it ran, and the rules it ran under.
    record["loadgen"] = {
        "runs": harness.runs,
        "rules": rules.section(),
        "traits": scenario.traits(),
    }
    accelerators = session.accelerators_priced(built.placement)
    sampler = hostcpu.Sampler()  # the rest of the host while LoadGen's runs ran
    try:
        batcher.warm_up()
        infer.write(record)  # still "running": LoadGen starts now
        test = scenarios.Test(harness, lg, test_settings, sc, rules, closed, batches)
        sampler.start()
        out = scenario.run(test)
    finally:
        host_cpu = sampler.stop()
        harness.close()
        curve = scenario.curve(harness.runs, sc, prices, accelerators)
        if curve is not None:
            record["loadgen"]["curve"] = curve
    summary, rate = out["summary"], out["rate"]
    record["loadgen"] = {
        **record["loadgen"],
        "summary": summary,
        "runs": harness.runs,
        "settings": _settings(scenario, sc, rules, sut_batch, samples.count, setup_seconds),
        "logs": records.attachment_dir(cfg.results_dir, record["run_id"]),
    }
    # The scenario's own sections (the server's confirmation, the offline repeats).
    record["loadgen"] |= {k: v for k, v in out.items() if k not in ("summary", "rate")}
    record["results"] = _results(scenario, summary, rate, out, test, accuracy)
    record["results"]["host_cpu"] = host_cpu
    busy = host_load.busy(summary.get("host_cpu")) or host_load.busy(host_cpu)
    if busy:  # the result's own run, or the scenario as a whole: said, and refused by advise
        record["results"]["busy_host"] = busy
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


def _results(scenario, summary, rate, out, test, accuracy) -> dict:
    """The record's `results`: LoadGen's rate and latencies, the closed loop beside them."""
    results = {
        "examples_per_sec": rate,
        "timed_seconds": summary.get("wall_seconds"),
        "closed_loop": list(test.closed.values()),
    }
    results.update(scenario.latency_results(summary, out, test))
    if summary.get("early_stopping_latency_seconds") is not None:
        # LoadGen's early-stopping estimate: the latency MLPerf reports for the streams.
        results["mlperf_latency_seconds"] = summary["early_stopping_latency_seconds"]
    if accuracy is not None:
        results["eval"] = accuracy
    return results


def _settings(scenario, sc, rules, sut_batch: int, samples: int, setup_seconds: float) -> dict:
    eff = rules.effective
    out = {
        "min_duration_seconds": eff["min_duration_seconds"],
        "min_query_count": eff["min_query_count"],
        "max_batch_size": sut_batch,
        "qsl_samples": samples,
        "samples_loaded_seconds": setup_seconds,
    }
    return out | scenario.settings_fields(sc, rules) | rules.meets_minimums()
