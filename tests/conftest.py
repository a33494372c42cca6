"""Shared fixtures: one TPUBENCH_CACHE per session, and the CLI as a user runs it."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest

# The suite is written for the CPU and runs there on a GPU machine too: this
# process and every CLI it starts see no GPU.  Tests marked `gpu` (tests/
# test_gpu.py) start their CLIs with the GPUs that were visible here.
GPU_ENV = {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES")}
os.environ["CUDA_VISIBLE_DEVICES"] = ""
# pytest-xdist's workers start with COLUMNS=80 and LINES=24 set; a serial run
# has neither, and the CLIs' tables (which read COLUMNS) must not depend on
# how the suite was started.  Tests that want a width set COLUMNS themselves.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)


@pytest.fixture(scope="session", autouse=True)
def tpubench_cache(tmp_path_factory):
    """A fresh cache for the whole session, inherited by every CLI subprocess.

    The embedded digits dataset is prepared once here, the CPU-peak probe and
    FLOP counts are measured once, and nothing reads or writes the user's
    ~/.cache/tpubench.
    """
    path = tmp_path_factory.mktemp("tpubench_cache")
    old = os.environ.get("TPUBENCH_CACHE")
    os.environ["TPUBENCH_CACHE"] = str(path)
    yield path
    if old is None:
        os.environ.pop("TPUBENCH_CACHE", None)
    else:
        os.environ["TPUBENCH_CACHE"] = old


@pytest.fixture(autouse=True)
def _cpu_nchw(request, tpubench_cache):
    """Skips a `cpu_nchw` test where this CPU's TensorFlow runs NHWC only.

    TensorFlow's own CPU kernels take NHWC only; NCHW runs through oneDNN,
    which TensorFlow leaves off on CPUs without AVX-512 VNNI/BF16 or AMX (an
    AMD EPYC, say).  The product refuses channels-first there in one line
    (tests/models/test_cpu_layout.py); these tests need it to run.
    """
    if request.node.get_closest_marker("cpu_nchw") is None:
        return
    from tpubench.hardware import cpu_layout

    answer = cpu_layout.nchw()
    if not answer.ok:
        pytest.skip(f"this CPU's TensorFlow runs NHWC only: {answer.reason}")


# `python -c NO_TF_CLI ARGS` runs the CLI in-process and exits 99 if anything imported TensorFlow.
NO_TF_CLI = """
import sys
from tpubench.cli import main
try:
    main.run(["tpubench", *sys.argv[1:]])
    code = 0
except SystemExit as e:
    code = e.code or 0
if "tensorflow" in sys.modules:
    print("tensorflow was imported", file=sys.stderr)
    code = 99
sys.exit(code)
"""


def rerun_cli(cwd, record, *extra):
    """`tpubench rerun RECORD EXTRA...` in a fresh process, run in CWD."""
    return subprocess.run(
        [sys.executable, "-m", "tpubench", "rerun", record, *extra],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def old_record(directory: pathlib.Path, flags: dict) -> pathlib.Path:
    """DIRECTORY/old-run.json: a finished train record with FLAGS, for `rerun` to repeat (its
    results_dir DIRECTORY/again)."""
    path = directory / "old-run.json"
    record = {
        "schema_version": 1,
        "run_id": "20250101-000000-mnist_mlp-abcdef",
        "kind": "train",
        "status": "ok",
        "argv": ["tpubench", "train"],
        "flags": flags,
        "config": {"results_dir": str(directory / "again")},
    }
    path.write_text(json.dumps(record))
    return path


def tiny_resnet50(building=None):
    """resnet50's tiny variant, seeded alike every call, built inside the context BUILDING."""
    import contextlib

    import keras

    from tpubench.model import registry

    spec = registry.get("resnet50")
    params = registry.resolve_params(spec, {}, tiny=True)
    keras.utils.set_random_seed(3)
    with building or contextlib.nullcontext():
        return spec.build_model(params)


def assert_same_gradients(plain, other, rel: float) -> None:
    """OTHER, given PLAIN's weights, takes PLAIN's gradients on one batch (within REL of
    each gradient's largest value), under the same variable names."""
    import tensorflow as tf

    other.set_weights(plain.get_weights())
    names = [[v.name for v in net.trainable_variables] for net in (plain, other)]
    assert names[0] == names[1]  # the same weights under the same names: checkpoints do not care
    x = tf.random.stateless_normal([4, 32, 32, 3], seed=[7, 8])
    grads = []
    for net in (plain, other):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(net(x, training=True) ** 2)
        grads.append(tape.gradient(loss, net.trainable_variables))
    for a, b in zip(*grads, strict=True):
        scale = max(float(tf.reduce_max(tf.abs(a))), 1e-6)
        assert float(tf.reduce_max(tf.abs(a - b))) <= rel * scale


def record_files(results_dir) -> list[pathlib.Path]:
    """Run records (*.json) in RESULTS_DIR, oldest first."""
    d = pathlib.Path(results_dir)
    if not d.is_dir():
        return []
    return sorted(d.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)


def run_cli(*args, results_dir=None, env=None, timeout=300):
    """Runs `python -m tpubench ARGS [--results_dir=RESULTS_DIR]` in a fresh process.

    A fresh process is needed anyway: logical CPU devices can be configured
    only once per process.

    Returns:
      (CompletedProcess with text stdout/stderr, the newest run record written
      to RESULTS_DIR by this call as a dict, or None when it wrote none).
    """
    cmd = [sys.executable, "-m", "tpubench", *map(str, args)]
    if results_dir is not None:
        cmd.append(f"--results_dir={results_dir}")
    full_env = dict(os.environ)
    full_env.pop("TF_CONFIG", None)  # a cluster description would change the strategy
    full_env.update(env or {})
    full_env = {k: v for k, v in full_env.items() if v is not None}  # None: unset it
    before = set(record_files(results_dir)) if results_dir is not None else set()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout)
    record = None
    if results_dir is not None:
        new = [p for p in record_files(results_dir) if p not in before]
        if new:
            record = json.loads(new[-1].read_text())
    return proc, record


def sigint_when(proc, ready, timeout: float) -> str:
    """Sends SIGINT to PROC once READY() is true; returns its stderr (it is killed if it hangs).

    PROC was started with text pipes; it must stay alive until READY.
    """
    import signal
    import time

    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        return proc.communicate(timeout=timeout)[1]
    finally:
        if proc.poll() is None:
            proc.kill()


def one_line_error(proc) -> str:
    """Asserts a failed run printed exactly one line on stderr, no traceback; returns it."""
    lines = [
        x
        for x in proc.stderr.splitlines()
        if x.strip() and not x.startswith(("[train]", "[infer", "[loadgen"))
    ]
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 1, f"expected one error line on stderr, got:\n{proc.stderr}"
    return lines[0]


def metrics_lines(model_dir) -> list[dict]:
    path = pathlib.Path(model_dir) / "metrics.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.fixture(scope="session")
def local_gcs(tmp_path_factory):
    """A local GCS server that TensorFlow's gs:// file system and google-cloud-storage
    reach through an HTTPS proxy (tpubench.testing.local_gcs); bucket: tpubench-test.

    Skips, with the reason, only where its requirements (openssl,
    gcp-storage-emulator) are missing.
    """
    from tpubench.testing import local_gcs as local_gcs_lib

    reason = local_gcs_lib.missing_requirements()
    if reason:
        pytest.skip(f"local GCS server unavailable: {reason}")
    server = local_gcs_lib.LocalGCS(str(tmp_path_factory.mktemp("local_gcs"))).start()
    yield server
    server.stop()


@pytest.fixture
def gcs_env(local_gcs, monkeypatch):
    """The server's environment, for CLI subprocesses (returned) and this process."""
    local_gcs.faults.clear()
    env = local_gcs.env()
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    yield env
    local_gcs.faults.clear()


# The modules that take longest on 2 cores (`--durations`), first: with two
# xdist workers and `--dist loadscope` each module runs whole on one worker,
# in collection order, so a long module collected last leaves the other
# worker idle at the end.  Longest first shortens that tail; the order of
# tests inside a module, and every test's outcome, are unchanged.
_LONG_MODULES = (
    "tests/model/test_replicas.py",
    "tests/study/test_study_cli.py",
    "tests/run/test_infer.py",
    "tests/run/test_infer_scenarios.py",
    "tests/faults/test_storage_deadlines.py",
    "tests/launch/test_local_cluster.py",
    "tests/data/test_data_prepare.py",
    "tests/run/test_train_e2e.py",
    "tests/storage/test_data_gcs.py",
    "tests/faults/test_signals.py",
    "tests/study/test_study_resume.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(_LONG_MODULES)}
    root = pathlib.Path(str(config.rootpath))

    def key(item):
        rel = pathlib.Path(str(item.path)).relative_to(root).as_posix()
        return rank.get(rel, len(rank))

    items.sort(key=key)  # stable: everything else keeps its collection order


@contextlib.contextmanager
def within(seconds: int):
    """Fails the test when the block still runs after SECONDS (an in-process read that hangs)."""

    def _hung(signum, frame):
        raise AssertionError(f"still reading after {seconds} s: the read hangs")

    old = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# A record tpubench wrote (2 replicas, batch 16): tests relabel it as a sweep configuration's
# or a study cell's run, or a tune trial's (tests/launch/sweep_records.py,
# tests/study/study_records.py, tests/tune/test_tune_reuses_own_records.py).
WRITTEN_RECORD = (
    pathlib.Path(__file__).parent / "storage/fixtures/v1/train-2-replicas-batch_size-16.json"
)
