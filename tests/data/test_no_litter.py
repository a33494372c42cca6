"""No litter: the local GCS server and `data prepare` to gs:// clean up after themselves.

Real processes and real signals: state lives under $TPUBENCH_CACHE (a temp
directory here), is gone after SIGTERM or SIGINT, and what a SIGKILL left is
removed, with a line saying so, by the next start.
"""

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from tpubench.testing import local_gcs as local_gcs_lib


def _wait(predicate, timeout=60.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def _env(cache, **extra):
    return {**os.environ, "TPUBENCH_CACHE": str(cache), **extra}


def _server(cache, cwd):
    return subprocess.Popen(
        [sys.executable, "-m", "tpubench.testing.local_gcs", "--bucket=b"],
        cwd=cwd,
        env=_env(cache),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def needs_server():
    reason = local_gcs_lib.missing_requirements()
    if reason:
        pytest.skip(f"local GCS server unavailable: {reason}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_local_gcs_removes_its_state_on_signal(tmp_path, needs_server, sig):
    cache, cwd = tmp_path / "cache", tmp_path / "cwd"
    cwd.mkdir()
    proc = _server(cache, cwd)
    env_file = cache / "local-gcs" / "gcs.env"
    try:
        printed = subprocess.run(
            [sys.executable, "-m", "tpubench.testing.local_gcs", "--print_env"],
            env=_env(cache),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert printed.returncode == 0, printed.stderr
        assert "export HTTPS_PROXY=http://127.0.0.1:" in printed.stdout
        assert env_file.exists()
        assert len(list((cache / "local-gcs").glob("server-*/local-gcs.key"))) == 1
        proc.send_signal(sig)
        proc.wait(timeout=10)
    finally:
        proc.kill()
    assert list((cache / "local-gcs").iterdir()) == []
    assert list(cwd.iterdir()) == []  # nothing written where it was started


def test_local_gcs_removes_what_a_killed_server_left(tmp_path, needs_server):
    cache = tmp_path / "cache"
    first = _server(cache, tmp_path)
    _wait(lambda: (cache / "local-gcs" / "gcs.env").exists(), what="the first server")
    first.kill()
    first.wait()
    (left,) = (cache / "local-gcs").glob("server-*")
    second = _server(cache, tmp_path)
    try:
        line = second.stdout.readline()
        assert line == f"# removed stale local GCS state {left} (its server is gone)\n"
        assert not left.exists()
    finally:
        second.terminate()
        second.wait(timeout=10)
    assert list((cache / "local-gcs").iterdir()) == []


def test_print_env_without_a_server_is_one_line(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "tpubench.testing.local_gcs", "--print_env", "--timeout=0.5"],
        env=_env(tmp_path / "cache"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1
    assert out.stderr.startswith("local_gcs: error: no running local GCS server wrote ")
    assert len(out.stderr.splitlines()) == 1


def _prepare(cache, gcs_env, output, dataset="photos", *extra):
    return subprocess.Popen(
        [sys.executable, "-m", "tpubench", "data", "prepare", f"--dataset={dataset}"]
        + [f"--output={output}", *extra],
        env=_env(cache, **gcs_env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _staged_files(cache: pathlib.Path) -> list[pathlib.Path]:
    return [p for p in (cache / "staging").rglob("*") if p.is_file()]


@pytest.mark.slow
def test_prepare_to_gcs_removes_staging_on_sigterm_and_stale_at_next_start(tmp_path, gcs_env):
    cache = tmp_path / "cache"
    # SIGTERM midway: the staging directory goes with the process.
    proc = _prepare(cache, gcs_env, "gs://tpubench-test/litter/a", "photos", "--image_size=32")
    try:
        _wait(lambda: _staged_files(cache), timeout=240, what="staged shards")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "tpubench data: interrupted"
    assert list((cache / "staging").iterdir()) == []

    # SIGKILL midway leaves it; the next prepare removes it and says so.
    proc = _prepare(cache, gcs_env, "gs://tpubench-test/litter/b", "photos", "--image_size=32")
    try:
        _wait(lambda: _staged_files(cache), timeout=240, what="staged shards")
        proc.kill()
        proc.wait()
    finally:
        proc.kill()
    (left,) = (cache / "staging").iterdir()
    size = sum(p.stat().st_size for p in left.rglob("*") if p.is_file())
    proc = _prepare(cache, gcs_env, "gs://tpubench-test/litter/c", "digits")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert f"removed stale staging directory {left} ({size / 1e6:,.1f} MB) left by process " in err
    assert not left.exists()
    assert list((cache / "staging").iterdir()) == []
    assert "prepared 'digits'" in out
