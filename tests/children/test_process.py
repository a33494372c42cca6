"""The one child runner: a labelled child stopped for sure, its error line, its command line."""

import os
import pathlib
import signal
import sys
import threading
import time

from tpubench.children import command, labels, process

# A child that starts a grandchild in its group, says where both are, and
# then either ignores SIGTERM (stubborn) or exits 143 on it, noting the signal.
CHILD = r"""
import os, signal, subprocess, sys, time
out, mode = sys.argv[1], sys.argv[2]
grand = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
def on(sig, _):
    with open(out + ".sig", "w") as f:
        f.write(signal.Signals(sig).name)
    if mode == "polite":
        sys.exit(143)
signal.signal(signal.SIGTERM, on)
signal.signal(signal.SIGINT, on)
with open(out, "w") as f:
    f.write(f"{os.getpid()} {grand.pid}")
print("ERROR: a line that names an error", flush=True)
print("the last line", flush=True)
time.sleep(120)
"""


def _alive(pid: int, settle: float = 5.0) -> bool:
    """Whether PID still runs SETTLE seconds on (a SIGKILL lands asynchronously: on a
    loaded host the killed process can still be scheduled for a moment)."""
    deadline = time.monotonic() + settle
    while True:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat") as f:  # a zombie has ended
                if f.read().split(")")[-1].split()[0] == "Z":
                    return False
        except (ProcessLookupError, FileNotFoundError):
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.05)


def _run_and_signal(tmp_path, mode, sig, **kw):
    pids = tmp_path / "pids"
    log = str(tmp_path / "child.log")
    argv = [sys.executable, "-c", CHILD, str(pids), mode]

    def send():
        deadline = time.monotonic() + 60
        while not pids.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        os.kill(os.getpid(), sig)  # what a Ctrl-C or a scheduler does to the parent

    with process.StopRequests() as stop:
        threading.Thread(target=send, daemon=True).start()
        t0 = time.monotonic()
        code = process.run(argv, log, stop, **kw)
        took = time.monotonic() - t0
    child, grand = (int(x) for x in pids.read_text().split())
    return stop, code, took, child, grand, log


def test_a_signal_stops_the_child_with_sigterm_and_nothing_it_started_outlives_it(tmp_path):
    stop, code, took, child, grand, log = _run_and_signal(
        tmp_path, "polite", signal.SIGINT, grace=30
    )
    assert stop.signal_name == "SIGINT"
    assert (tmp_path / "pids.sig").read_text() == "SIGTERM"  # not the SIGINT it caught
    assert code == 143 and took < 20
    assert not _alive(child) and not _alive(grand)
    assert process.last_error_line(log) == "ERROR: a line that names an error"


def test_relay_passes_on_the_very_signal_the_parent_caught(tmp_path):
    stop, code, _, _, grand, _ = _run_and_signal(
        tmp_path, "polite", signal.SIGINT, grace=None, relay=True
    )
    assert (tmp_path / "pids.sig").read_text() == "SIGINT" and code == 143
    assert not _alive(grand)


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path):
    stop, code, took, child, grand, _ = _run_and_signal(
        tmp_path, "stubborn", signal.SIGTERM, grace=1.0
    )
    assert stop.signal_name == "SIGTERM"
    assert code == -signal.SIGKILL and 1.0 <= took < 20
    assert process.describe_exit(code) == "was killed by SIGKILL"
    assert not _alive(child) and not _alive(grand)


def test_a_child_pinned_to_one_core_sees_one_core(tmp_path):
    core = min(os.sched_getaffinity(0))
    log = str(tmp_path / "log")
    argv = [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"]
    with process.StopRequests() as stop:
        assert process.run(argv, log, stop, cpus=frozenset({core})) == 0
    assert pathlib.Path(log).read_text().strip() == f"[{core}]"


def test_the_last_error_line(tmp_path):
    log = tmp_path / "log"
    log.write_text("start\nValueError: bad value 7\n" + "x" * 500 + "\n\n")
    assert process.last_error_line(str(log)) == "ValueError: bad value 7"
    log.write_text("start\n" + "y" * 500 + "\n")
    assert process.last_error_line(str(log)) is None
    assert process.last_error_line(str(log), limit=300, or_last=True) == "y" * 300
    assert process.last_error_line(str(tmp_path / "missing")) is None


def test_flags_are_spelt_one_way():
    argv = command.flags_argv(
        {"model": "mnist_mlp", "xla": False, "tiny": True, "batch_sizes": [1, 8], "seed": None}
    )
    assert argv == ["--model=mnist_mlp", "--noxla", "--tiny", "--batch_sizes=1,8"]
    assert command.taskset((0, 1)) == ["taskset", "-c", "0,1"] and command.taskset(None) == []


def test_a_child_with_child_env_imports_this_tpubench_from_any_folder(tmp_path):
    import subprocess

    import tpubench

    out = subprocess.run(
        [sys.executable, "-P", "-c", "import tpubench; print(tpubench.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=command.child_env(),
        timeout=60,
    )
    assert out.stdout.strip() == tpubench.__file__


def test_stable_ids_and_model_dirs():
    a = labels.stable_id("cfg", {"settings": {"b": 1, "a": 2}, "executor": "local"})
    b = labels.stable_id("cfg", {"executor": "local", "settings": {"a": 2, "b": 1}})
    assert a == b and a.startswith("cfg-") and len(a) == len("cfg-") + 10
    assert a != labels.stable_id("cfg", {"settings": {"b": 1, "a": 3}, "executor": "local"})
    assert len(labels.stable_id("tune-m", [1], digits=8)) == len("tune-m-") + 8
    assert labels.model_dir("runs", "cfg-1") == os.path.join("runs", "model_dirs", "cfg-1")


def test_ids_recorded_before_the_shared_rule_still_match():
    """A sweep's records from before keep marking its configurations done (resume)."""
    from tpubench_launch.sweep import grid as sweep

    fixed = {"model": "mnist_mlp", "tiny": True, "train_steps": 4, "batch_size": 16}
    settings = {"machine": "gcp:n1-standard-8", "threads": 1}
    assert sweep.config_id(settings, fixed, "local") == "cfg-8fd618070f"
