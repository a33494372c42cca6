"""One trial = one real `tpubench train` process; its run record is the result.

A subprocess per trial because thread pools, XLA and the mixed-precision
policy are set once per process in TensorFlow.  Each trial carries a label
(`--run_label`) that is a hash of the tune's identity, its setting, its steps
and its repeat number, so a rerun of the same tune finds the trials already
recorded and runs only the rest (a sweep's resume).  The trial runs through
the one child runner (children/process.py) and is found by its label
(storage/records.by_label), as a sweep's configurations and a study's cells are;
a record with its label counts only if it ran the trial's flags in the trial's
own model_dir (storage/record_match.py), else it is named and run again.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import time

from tpubench.children import command, labels, process
from tpubench.core import errors, safe_files
from tpubench.storage import record_match, records
from tpubench.tune import disk_full, outcomes, space

# Finished trials are reused on resume (a failed trial would fail again: tune
# records it); `interrupted`/`running`/`died` run again.
REUSED = (*records.DONE_STATUSES, "failed")
# A trial on a busy host (core/host_load.py) runs again this many times before it is kept,
# marked: its figure is lower than the machine gives quiet.
BUSY_RERUNS = 1
# How long a trial stopped by a signal to tune has to record itself `interrupted`.
GRACE_SECONDS = 60.0


def label(
    tune_id: str, setting: space.Setting, steps: int, repeat: int, attempt=0, numerics=False
) -> str:
    fields = dataclasses.asdict(setting)
    if fields["cpu_kernels"] == "auto":  # a field added later: plain labels stay as they were
        del fields["cpu_kernels"]
    parts = [fields, steps, repeat]
    # Only when set, so the labels of an earlier tune's plain trials still match.
    if attempt:
        parts.append({"attempt": attempt})
    if numerics:
        parts.append("numerics")
    return labels.stable_id(tune_id, parts)


class Runner:
    """Runs trials as `python -m tpubench train` (or `infer`) and reads their records back."""

    def __init__(
        self,
        tune_id: str,
        base_flags: dict,
        records_dir: str,
        work_dir: str,
        out,
        numerics=None,
        command: str = "train",
    ):
        self.tune_id = tune_id
        self.command = command  # infer: a serving trial (its STEPS is unused, 0)
        self.base_flags = base_flags
        self.numerics_flags = numerics or {}  # what a numerics check adds (real data)
        self.records_dir = records_dir
        self.work_dir = work_dir
        self.out = out
        self._known = _index(records_dir)
        self._said: set[str] = set()  # left-out lines already printed

    def flags(self, setting, steps: int, run_label: str, numerics=False) -> dict:
        """The trial's tpubench flags."""
        flags = {**self.base_flags, **setting.flags()}
        if self.command == "train":
            flags["train_steps"] = steps
            flags["model_dir"] = labels.model_dir(self.work_dir, run_label)
        if numerics:
            flags.update(self.numerics_flags)
        flags.update(results_dir=self.records_dir, run_label=run_label)
        return flags

    def argv(self, setting, steps: int, run_label: str, numerics=False) -> list[str]:
        flags = self.flags(setting, steps, run_label, numerics)
        return command.python_argv("tpubench", self.command, *command.flags_argv(flags))

    def _own(self, setting, steps: int, run_label: str, numerics=False):
        """(path, record) of the trial's latest record: the latest carrying its label that ran
        its flags in its own model_dir (storage/record_match); others are named on OUT once."""
        flags = self.flags(setting, steps, run_label, numerics)
        model_dir = flags.pop("model_dir", None)
        asks = record_match.Asks(
            run_label, {k: v for k, v in flags.items() if v is not None}, model_dir=model_dir
        )
        split = record_match.split(self._known.get(run_label, []), asks)
        for line in split.left_out:
            if line not in self._said:
                self._said.add(line)
                print(f"  {line}", file=self.out, flush=True)
        return (split.ours[-1].path, split.ours[-1].record) if split.ours else None

    def recorded(self, setting, steps: int, repeat: int, attempt=0, numerics=False):
        """The outcome of a trial recorded by an earlier run of this tune, if any."""
        run_label = label(self.tune_id, setting, steps, repeat, attempt, numerics)
        found = self._own(setting, steps, run_label, numerics)
        if found and found[1].get("status") in REUSED:
            o = outcomes.outcome(setting, steps, repeat, *found, wall=self._wall(run_label))
            return dataclasses.replace(o, reused=True, attempt=attempt, numerics=numerics)
        return None

    def _wall(self, run_label: str) -> float | None:
        """The wall time this trial's process took, as tune measured it (None: unknown)."""
        path = os.path.join(self.work_dir, "logs", f"{run_label}.seconds")
        try:
            return float(safe_files.read_text(path, "", 64, "one number of seconds tune wrote"))
        except (safe_files.Unreadable, ValueError):
            return None

    def run(self, setting, steps: int, repeat: int, attempt=0, numerics=False) -> outcomes.Outcome:
        """Runs one trial to its end.

        Raises:
          InterruptedRun: SIGINT/SIGTERM reached tune (the trial is stopped and
            records itself `interrupted`; the same command resumes).
        """
        run_label = label(self.tune_id, setting, steps, repeat, attempt, numerics)
        model_dir = labels.model_dir(self.work_dir, run_label)
        shutil.rmtree(model_dir, ignore_errors=True)  # a half-run trial starts over
        log = os.path.join(self.work_dir, "logs", f"{run_label}.log")
        disk_full.makedirs(os.path.dirname(log), self.records_dir)
        start = time.monotonic()
        # Its own process group: a Ctrl-C at the terminal reaches tune only, and
        # tune stops the trial with one SIGTERM (it records `interrupted`).
        with process.StopRequests() as stop:
            code = process.run(
                self.argv(setting, steps, run_label, numerics),
                log,
                stop,
                env=command.child_env(),
                grace=GRACE_SECONDS,
            )
        if stop.signal_name:
            raise errors.InterruptedRun(
                f"interrupted by {stop.signal_name}; run the same command again to resume "
                "(finished trials are reused)"
            )
        wall = time.monotonic() - start
        # A trial's checkpoints are never reused; its metrics.jsonl (first loss) is kept.
        for sub in ("checkpoints", "tensorboard"):
            shutil.rmtree(os.path.join(model_dir, sub), ignore_errors=True)
        self._known = _index(self.records_dir)
        found = self._own(setting, steps, run_label, numerics)
        said = process.last_error_line(log, limit=None, or_last=True)
        disk_full.check_trial(run_label, code, said, found is not None, model_dir, self.records_dir)
        seconds = os.path.join(self.work_dir, "logs", f"{run_label}.seconds")
        # What a resumed tune spends of its budget for this trial.
        disk_full.write(seconds, f"{wall:.3f}\n", self.records_dir)
        if found is None:
            said = said or f"exit code {code}"
            status = "oom" if code == -signal.SIGKILL or outcomes.OOM.search(said) else "failed"
            if code == -signal.SIGKILL:
                said = "killed by SIGKILL (the kernel's out-of-memory killer, most likely)"
            return outcomes.Outcome(
                setting, steps, repeat, status, wall_seconds=wall, reason=said, attempt=attempt
            )
        o = outcomes.outcome(setting, steps, repeat, *found, returncode=code, wall=wall)
        return dataclasses.replace(o, attempt=attempt, numerics=numerics)


def _index(records_dir: str) -> dict[str, list]:
    """run_label -> its records in RECORDS_DIR (records.Labelled), oldest start first."""
    return records.by_label(records_dir)
