"""One LoadGen test at a time, for every scenario: the SUT and QSL, the logs kept.

LoadGen (the `loadgen` extra, `mlcommons-loadgen`) issues the queries,
times them and judges the run VALID or INVALID; tpubench only serves them
(`loadgen_sut.Batcher`) and keeps what LoadGen wrote.  A scenario's `run`
calls `Harness.run` once per LoadGen test it needs; the harness asks the scenario
what the test will hold (`schedule`, checked by loadgen_memory.py) and how to
summarize LoadGen's log (`log_fields`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time

from tpubench.core import errors, host_load
from tpubench.hardware import hostcpu
from tpubench.run import interrupts
from tpubench.run.infer import loadgen_log, loadgen_memory, signal_watch


def import_loadgen(scenario: str):  # SCENARIO: its name, for the error
    """The `mlperf_loadgen` module, or a one-line error saying how to install it."""
    try:
        import mlperf_loadgen
    except ImportError:
        raise errors.UsageError(
            f"--scenario={scenario} runs MLPerf LoadGen, which is not installed: "
            "pip install 'tpubench[loadgen]' (the mlcommons-loadgen package)"
        ) from None
    return mlperf_loadgen


class Harness:
    """One SUT and QSL, run through LoadGen as many times as a search needs.

    Each run's summary and detail logs are kept beside the record through
    KEEP(name, data bytes) -> path.
    """

    def __init__(self, lg, batcher, samples_count: int, keep):
        self._lg = lg
        self.batcher = batcher
        self._keep = keep
        self._sut = lg.ConstructSUT(batcher.issue_query, batcher.flush_queries)
        # Every sample is already in host memory: loading and unloading are no-ops.
        self._qsl = lg.ConstructQSL(samples_count, samples_count, _noop, _noop)
        self.runs: list[dict] = []
        self.workdir: str | None = None  # LoadGen's log directory while a test runs

    def run(self, test_settings, name: str, scenario) -> dict:
        """One LoadGen test, called NAME, of SCENARIO (its plug-in); LoadGen's summary of it
        (the scenario's figures, loadgen_log.summarize), with where its logs were kept."""
        loadgen_memory.check(test_settings, name, scenario)  # before LoadGen schedules it
        _say(f"[loadgen {name}] {scenario.plan_text(test_settings)} ...")
        workdir = tempfile.mkdtemp(prefix="tpubench-loadgen-")
        try:
            log = self._lg.LogSettings()
            log.log_output.outdir = workdir
            log.log_output.copy_summary_to_stdout = False
            log.enable_trace = False
            self.batcher.reset_counts()
            t0 = time.perf_counter()
            self.workdir = workdir
            signals = interrupts.current()
            # Signals are only noted while LoadGen runs: raised inside one of its
            # callbacks they would abort the process (the SUT acts on them).
            quiet = signals.quiet() if signals is not None else contextlib.nullcontext()
            sampler = hostcpu.Sampler().start()  # what the rest of the host used meanwhile
            try:
                with quiet, signal_watch.watching(signals, self.batcher.act_on_signal):
                    self._lg.StartTestWithLogSettings(self._sut, self._qsl, test_settings, log)
            finally:
                host_cpu = sampler.stop()
            wall = time.perf_counter() - t0
            if self.batcher.error is not None:
                raise self.batcher.error
            summary = loadgen_log.summarize(loadgen_log.read_detail(workdir), scenario)
            shed = self.batcher.overloaded
            if shed is not None:
                # The SUT stopped serving: LoadGen's verdict and latencies of
                # this run describe unserved queries and are not used.
                served_qps = shed["served"] / max(shed["after_seconds"], 1e-9)
                summary |= {
                    "overloaded": shed,
                    "loadgen_validity": summary.get("validity"),
                    "valid": False,
                    "validity": "OVERLOADED",
                    "invalid_reason": (
                        f"the queue's oldest query waited {shed['oldest_wait_seconds']:.1f} s "
                        f"after {shed['after_seconds']:.1f} s ({shed['backlog']:,} queued): "
                        "tpubench stopped serving this run; its LoadGen figures are not used"
                    ),
                    "completed_qps": served_qps,
                }
            # LoadGen's whole test, its own start-up and drain included: what a
            # machine is paid for while the scenario runs (the record's cost).
            summary["wall_seconds"] = wall
            summary["host_cpu"] = host_cpu
            summary["busy_host"] = host_load.busy(host_cpu) or None
            kept = []
            for file in (loadgen_log.SUMMARY, loadgen_log.DETAIL):
                with open(os.path.join(workdir, file), "rb") as f:
                    kept.append(self._keep(f"{name}/{file}", f.read()))
            summary["logs"] = kept
        finally:
            self.workdir = None
            shutil.rmtree(workdir, ignore_errors=True)
        summary["run"] = name
        busy = f"; busy host: {summary['busy_host']}" if summary.get("busy_host") else ""
        _say(f"[loadgen {name}] {summary.get('validity')} in {summary['wall_seconds']:.1f} s{busy}")
        sizes = sorted(self.batcher.batch_sizes.items())
        summary["sut_batch_sizes"] = {str(k): v for k, v in sizes}
        self.runs.append(summary)
        return summary

    def close(self) -> None:
        self._lg.DestroyQSL(self._qsl)
        self._lg.DestroySUT(self._sut)
        self.batcher.close()


def _noop(_indices) -> None:
    pass


def _say(line: str) -> None:
    """A progress line on stderr, where the closed loop's go: a LoadGen run can take minutes."""
    print(line, file=sys.stderr, flush=True)
