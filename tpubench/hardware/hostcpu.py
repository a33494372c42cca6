"""Host CPU utilisation sampled while a run trains.

Answers "how many vCPUs does this accelerator need" and backs the
input-bound verdict: a background thread samples system-wide and
this-process CPU use every `period` seconds from psutil's CPU-time
counters; `stop()` gives the mean over the whole span (also for runs
shorter than one period) and the p90 of the samples, in percent of all
cores, plus the core count.
"""

from __future__ import annotations

import threading
import time

import psutil

from tpubench.core import timing


class Sampler:
    def __init__(self, period: float = 0.5):
        self.period = period
        self.system: list[float] = []
        self.process: list[float] = []
        self._stop = threading.Event()
        self._thread = None
        self._first = None  # the counters at start(); a sampler never started stops empty
        self._proc = psutil.Process()

    def start(self) -> Sampler:
        self._last = self._read()
        self._first = self._last
        self._thread = threading.Thread(target=self._run, daemon=True, name="hostcpu")
        self._thread.start()
        return self

    def _read(self):
        t = psutil.cpu_times()
        busy = sum(t) - t.idle - getattr(t, "iowait", 0.0)
        p = self._proc.cpu_times()
        return time.monotonic(), busy, sum(t), p.user + p.system

    def _sample(self, since):
        now = self._read()
        wall, busy, total, proc = (a - b for a, b in zip(now, since, strict=True))
        cores = psutil.cpu_count() or 1
        if total <= 0 or wall <= 0:
            return now, None
        return now, (100.0 * busy / total, 100.0 * proc / (wall * cores))

    def _run(self):
        while not self._stop.wait(self.period):
            self._last, sample = self._sample(self._last)
            if sample:
                self.system.append(sample[0])
                self.process.append(sample[1])

    def stop(self) -> dict:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * self.period + 1)
        summary = self.summary()
        if self._first is None:
            return summary
        _, overall = self._sample(self._first)  # the whole span, also for short runs
        if overall:
            summary["system_percent_mean"] = round(overall[0], 1)
            summary["process_percent_mean"] = round(overall[1], 1)
        return summary

    def summary(self) -> dict:
        def stats(xs):
            if not xs:
                return None, None
            return round(sum(xs) / len(xs), 1), round(timing.percentile(xs, 90), 1)

        sys_mean, sys_p90 = stats(self.system)
        proc_mean, _ = stats(self.process)
        return {
            "cores": psutil.cpu_count() or 1,
            "samples": len(self.system),
            "system_percent_mean": sys_mean,
            "system_percent_p90": sys_p90,
            "process_percent_mean": proc_mean,
        }
