"""--read_mb_per_s: records read no faster than an emulated disk of that rate."""

from __future__ import annotations

import threading
import time

import pytest
from conftest import one_line_error, run_cli

from tpubench.data import throttle


class _Clock:
    """A clock that sleeping advances (one thread at a time is enough here)."""

    def __init__(self):
        self.now = 100.0
        self.slept = []

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(round(seconds, 6))
        self.now += seconds


def test_the_disk_delivers_bytes_at_its_rate():
    clock = _Clock()
    disk = throttle.Disk(1e6, clock.time, clock.sleep)
    for _ in range(3):
        disk.read(500_000)
    assert clock.slept == [0.5, 0.5, 0.5]
    assert clock.now == 101.5


def test_an_idle_disk_gives_no_credit_and_reads_share_its_bandwidth():
    clock = _Clock()
    disk = throttle.Disk(1e6, clock.time, clock.sleep)
    clock.now += 10  # idle for 10 s: the next read still takes its own time
    disk.read(250_000)
    assert clock.slept == [0.25]
    # Two readers at once: the second waits for the first's bytes too.
    real = throttle.Disk(4e6, sleep=time.sleep)  # not the process-wide releasable wait
    times = []

    def read():
        real.read(400_000)
        times.append(threading.get_ident())

    threads = [threading.Thread(target=read) for _ in range(2)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert time.monotonic() - start >= 0.19  # 800 KB at 4 MB/s, not 400 KB


def test_data_bench_reads_no_faster_than_the_emulated_disk(tmp_path):
    data = tmp_path / "jpeg"
    proc, _ = run_cli(
        "data",
        "prepare",
        "--dataset=photos",
        "--record_format=jpeg",
        "--examples=64",
        f"--output={data}",
    )
    assert proc.returncode == 0, proc.stderr
    bench = ["data", "bench", "--model=resnet50", "--tiny", f"--data_dir={data}"]
    bench += ["--batch_size=8", "--batches=6", "--warmup_batches=1", "--format=json"]
    proc, _ = run_cli(*bench, "--read_mb_per_s=1")
    assert proc.returncode == 0, proc.stderr
    import json

    result = json.loads(proc.stdout)
    # The disk's rate (a prefetch ahead at most), not the CPU's (about 36 MB/s here).
    assert 0.5 < result["mb_per_sec"] <= 1.3, result


def test_synthetic_data_with_a_read_rate_is_one_line(tmp_path):
    proc, record = run_cli(
        "train",
        "--model=ptb_lstm",
        "--tiny",
        "--use_synthetic_data",
        "--read_mb_per_s=60",
        results_dir=tmp_path,
    )
    line = one_line_error(proc)
    assert "--read_mb_per_s=60 emulates a disk" in line and "synthetic data reads none" in line


def test_read_rate_out_of_range_is_refused(tmp_path):
    proc, _ = run_cli("data", "bench", f"--data_dir={tmp_path}", "--read_mb_per_s=0")
    assert "--read_mb_per_s=0.0 is out of range; accepted: 0.1 to" in one_line_error(proc)


@pytest.mark.parametrize(
    "command, expected",
    [
        (["data", "bench", "--batch_size=32", "--batches=1000"], "before the timed batches ended"),
        # train's deadline watcher owns the wakeup fd: it must release the disk too, or the
        # run waits out its shutdown grace and saves no checkpoint
        # with no --model_dir, the line gives the command that resumes (into the run's own dir)
        (
            ["train", "--batch_size=8", "--train_steps=1000"],
            "checkpoint saved; rerun the same command to resume, or resume with: ",
        ),
    ],
    ids=["data_bench", "train"],
)
def test_ctrl_c_stops_a_run_waiting_on_a_slow_emulated_disk_at_once(tmp_path, command, expected):
    """The main thread is inside TensorFlow's next batch, which waits on the emulated disk:
    the signal still ends the run within seconds, not when the disk would have caught up,
    and the process exits (freeing that pipeline after the signal could hang TensorFlow)."""
    import os
    import pathlib
    import subprocess
    import sys
    import time

    from conftest import sigint_when

    data = tmp_path / "jpeg"
    proc, _ = run_cli(
        "data", "prepare", "--dataset=photos", "--record_format=jpeg", "--examples=64",
        f"--output={data}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    argv = [sys.executable, "-m", "tpubench", *command, "--model=resnet50", "--tiny"]
    argv += [f"--data_dir={data}", "--read_mb_per_s=0.1"]
    bench = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    sent = []

    def reading() -> bool:  # the pipeline has a shard of the photos open
        try:
            fds = pathlib.Path(f"/proc/{bench.pid}/fd")
            return any(os.readlink(fd).startswith(str(data)) for fd in fds.iterdir())
        except OSError:
            return False

    def ready():  # TensorFlow up and the pipeline reading (32 photos take 12 s at 0.1 MB/s)
        if not reading():
            return False
        time.sleep(2)
        sent.append(time.monotonic())
        return True

    stderr = sigint_when(bench, ready, timeout=120)
    assert bench.returncode == 130, stderr
    assert "interrupted (SIGINT)" in stderr and "Traceback" not in stderr
    assert expected in stderr
    if command[0] == "train":
        resume = stderr.split("resume with: ")[1].split(" [run record")[0]
        model_dir = resume.split("--model_dir=")[1]
        assert resume.startswith("tpubench train ") and "--read_mb_per_s=0.1" in resume
        assert (tmp_path / model_dir / "checkpoints").is_dir()
    assert time.monotonic() - sent[0] < 10, "the run waited for the emulated disk"
