"""Each command that reads a file refuses a FIFO, a device, a directory or a huge file at once.

Issue 58, class C.  A FIFO opened for reading waits for a writer for ever;
/dev/zero never ends.  Before every reader went through core/safe_files.py,
`prices import` of /dev/zero grew to the memory limit, and a FIFO hung
`prices import`, `study report` (a study's host_load.json), `train` (the
model_dir's lock file) and `data prepare` (a --source text).  Each case
plants the real thing (tests/security/planted.py), runs the real command
with a timeout (a hang fails the test instead of the suite) and asserts a
non-zero exit with one line naming the path and what is accepted.
TensorFlow's own readers (shards, checkpoints) are in
test_tensorflow_file_reads.py.
"""

from __future__ import annotations

import os

import pytest
from conftest import within
from planted import KINDS, fifo, one_line, tpubench

from tpubench.core import errors

TINY = ["--tiny", "--train_steps=1", "--use_synthetic_data"]


def _tpubench(tmp_path, *args, timeout=300, cache=None):
    env = {"TPUBENCH_CACHE": str(cache)} if cache else None  # prices import writes there
    return tpubench(tmp_path, *args, timeout=timeout, env=env)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_prices_import_refuses_a_catalog_that_is_not_a_regular_file_of_bounded_size(tmp_path, kind):
    make, said = KINDS[kind]
    make(tmp_path / "vms.csv")
    cache = tmp_path / "cache"
    line = one_line(_tpubench(tmp_path, "prices", "import", "vms.csv", cache=cache))
    assert f"vms.csv {said}" in line
    assert "accepted: a regular file of at most 67,108,864 bytes (a SkyPilot-format" in line
    assert not (cache / "prices.csv").exists()  # nothing imported


def test_prices_import_of_dev_zero_itself_is_one_line(tmp_path):
    proc = _tpubench(tmp_path, "prices", "import", "/dev/zero", cache=tmp_path / "cache")
    line = one_line(proc)
    assert "/dev/zero is a device, not a regular file; accepted: a regular file" in line


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_study_report_refuses_a_host_load_file_that_is_not_a_regular_file(tmp_path, kind):
    make, said = KINDS[kind]
    results = tmp_path / "r"
    results.mkdir()
    make(results / "host_load.json")
    proc = _tpubench(tmp_path, "study", "report", "strategies", "--results_dir=r")
    line = one_line(proc)
    assert f"r/host_load.json {said}" in line
    assert "(the JSON `tpubench study run` writes there)" in line


def _link_to_a_file(path):
    (path.parent / "elsewhere.json").write_text("{}")
    os.symlink("elsewhere.json", path)


LOCK_KINDS = {
    **KINDS,
    "dev_zero_link": (KINDS["dev_zero_link"][0], "is a symbolic link, not a regular file"),
    "link_to_a_file": (_link_to_a_file, "is a symbolic link, not a regular file"),
}


@pytest.mark.parametrize("kind", sorted(LOCK_KINDS))
def test_train_refuses_a_model_dir_lock_that_is_not_a_regular_file(tmp_path, kind):
    make, said = LOCK_KINDS[kind]
    (tmp_path / "m").mkdir()
    lock = tmp_path / "m" / ".tpubench-lock.json"
    make(lock)
    proc = _tpubench(tmp_path, "train", *TINY, "--model_dir=m", "--results_dir=runs")
    line = one_line(proc)
    assert f"--model_dir=m: lock m/.tpubench-lock.json {said}" in line
    assert "remove it if no run uses this model_dir" in line
    assert os.path.lexists(lock)  # refused, never taken over or removed
    assert not (tmp_path / "m" / "checkpoints").exists()  # nothing trained


@pytest.mark.parametrize("kind", ["fifo", "dev_zero_link", "huge"])  # a directory is a source
def test_data_prepare_refuses_a_text_source_that_is_not_a_regular_file(tmp_path, kind):
    make, said = KINDS[kind]
    make(tmp_path / "book.txt")
    proc = _tpubench(
        tmp_path, "data", "prepare", "--dataset=nietzsche", "--source=book.txt", "--output=out"
    )
    line = one_line(proc)
    assert f"--source=book.txt {said}; accepted: a regular file" in line
    assert not (tmp_path / "out" / "manifest.json").exists()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_report_runs_and_rerun_refuse_a_record_that_is_not_a_regular_file(tmp_path, kind):
    make, said = KINDS[kind]
    (tmp_path / "r").mkdir()
    make(tmp_path / "r" / "x.json")
    accepted = "accepted: a regular file of at most 67,108,864 bytes (a run record"
    # A directory named x.json is walked as a directory by report and runs; rerun names it.
    readers = (
        [["rerun", "r/x.json"]] if kind == "directory" else [["report", "r"], ["rerun", "r/x.json"]]
    )
    for args in readers:
        line = one_line(_tpubench(tmp_path, *args, timeout=60))
        assert f"r/x.json: {said}" in line or f"r/x.json {said}" in line, args
        assert accepted in line, args
    if kind == "directory":
        return
    listed = _tpubench(tmp_path, "runs", "r", timeout=60)  # a listing skips it, in one warning
    assert listed.stderr.strip().splitlines() == [
        f"tpubench runs: warning: skipped r/x.json {said}; {accepted} is at most 64 MiB)"
    ]


# In process: the readers behind other commands (cache, logs, tune's files, report's tune
# summary, a model_dir's checkpoint state), each under an alarm so a hang fails at once.


def test_a_cache_file_that_is_a_fifo_is_refused(tmp_path, monkeypatch):
    from tpubench.storage import cache

    monkeypatch.setenv("TPUBENCH_CACHE", str(tmp_path))
    fifo(tmp_path / "peaks.json")
    with within(5), pytest.raises(errors.UsageError, match=r"peaks.json is a FIFO"):
        cache.load_json("peaks.json")


def test_a_childs_log_that_is_a_fifo_or_a_device_gives_no_line_and_no_hang(tmp_path):
    from tpubench.children import process

    fifo(tmp_path / "x.log")
    with within(5):
        assert process.last_error_line(str(tmp_path / "x.log")) is None
        assert process.last_error_line("/dev/zero") is None


def test_a_childs_log_is_read_from_its_tail(tmp_path):
    from tpubench.children import process

    log = tmp_path / "big.log"
    log.write_text("x" * (4 << 20) + "\nValueError: the real cause\n")
    assert process.last_error_line(str(log)) == "ValueError: the real cause"


def test_tunes_wall_time_and_loss_files_refuse_a_fifo(tmp_path):
    from tpubench.tune import outcomes, trials

    (tmp_path / "logs").mkdir()
    fifo(tmp_path / "logs" / "t1.seconds")
    runner = trials.Runner.__new__(trials.Runner)
    runner.work_dir = str(tmp_path)
    with within(5), pytest.raises(errors.UsageError, match="t1.seconds is a FIFO"):
        runner._wall("t1")
    fifo(tmp_path / "metrics.jsonl")
    with within(5), pytest.raises(errors.UsageError, match="metrics.jsonl is a FIFO"):
        outcomes._losses({"config": {"model_dir": str(tmp_path)}})


def test_report_refuses_a_tune_summary_that_is_a_fifo(tmp_path):
    from tpubench.report import serving

    fifo(tmp_path / serving.TUNE_SUMMARY)
    with within(5), pytest.raises(errors.UsageError, match="is a FIFO"):
        serving.tune_winners([], [str(tmp_path)])


def test_a_checkpoint_state_file_that_is_a_fifo_is_refused(tmp_path):
    from tpubench.run import checkpoints

    fifo(tmp_path / "checkpoint")
    with within(60), pytest.raises(errors.UsageError, match="checkpoint is a FIFO"):
        checkpoints._state(str(tmp_path))  # 60: TensorFlow loads


def test_a_resumed_runs_metrics_file_that_is_a_fifo_is_refused(tmp_path):
    from tpubench.storage import writers

    fifo(tmp_path / "metrics.jsonl")
    with within(60), pytest.raises(errors.UsageError, match="metrics.jsonl is a FIFO"):
        writers.JsonlWriter(str(tmp_path / "metrics.jsonl"), keep_through=10)
