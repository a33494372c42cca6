"""Real tf.distribute clusters on localhost, started by `tpubench-launch local-cluster`.

One `tpubench train` process per task with its own TF_CONFIG:
MultiWorkerMirroredStrategy with 2 workers, ParameterServerStrategy with a
chief, 2 workers and 1 parameter server, and a worker killed mid-run.
"""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
from conftest import record_files

LAUNCH = [sys.executable, "-m", "tpubench_launch.main"]


def _launch(*args, timeout=240):
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    return subprocess.run(
        [*LAUNCH, *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout
    )


def _one_record(results):
    (path,) = record_files(results)
    return json.loads(path.read_text())


def _trained_a_loop(results) -> bool:
    return any(p.stat().st_size for p in results.glob("*-model/metrics.jsonl"))


def test_multi_worker_two_workers_train_and_agree(tmp_path):
    results = tmp_path / "runs"
    out = _launch(
        "local-cluster",
        "--workers=2",
        "--",
        f"--results_dir={results}",
        "--train_steps=12",
        "--steps_per_loop=4",
        "--batch_size=32",
    )
    assert out.returncode == 0, out.stdout + out.stderr
    rec = _one_record(results)  # only the chief (worker 0) writes a record
    assert rec["status"] == "ok"
    assert rec["placement"]["strategy"] == "multi_worker"
    assert rec["placement"]["num_replicas"] == 2
    assert rec["results"]["final_step"] == 12
    assert rec["results"]["eval"]["examples"] == (360 // 32) * 32  # full global batches only
    cluster = rec["cluster"]
    assert rec["placement"]["cluster"] == cluster["spec"]
    assert [(t["role"], t["index"], t["chief"]) for t in cluster["tasks"]] == [
        ("worker", 0, True),
        ("worker", 1, False),
    ]
    assert [t["exit_code"] for t in cluster["tasks"]] == [0, 0]
    addresses = [t["address"] for t in cluster["tasks"]]
    assert cluster["spec"] == {"worker": addresses}
    assert all(a.startswith("localhost:") for a in addresses) and len(set(addresses)) == 2
    assert cluster["failed_task"] is None and rec["run_label"] == cluster["id"]
    logs = [pathlib.Path(t["log"]).read_text() for t in cluster["tasks"]]
    assert "eval accuracy" in logs[0] and "eval accuracy" not in logs[1]  # one table
    assert "the chief task writes the run record" in logs[1]
    assert "eval accuracy" in out.stdout  # the chief's output is echoed
    assert f"record: {results}" in out.stdout


PROBE = pathlib.Path(__file__).with_name("dropout_probe.py")


def _probe_lines(log: pathlib.Path) -> list[tuple[str, str]]:
    """(pixel sum, dropout mask) of each step the task ran, from dropout_probe's lines."""
    steps = [line.split() for line in log.read_text().splitlines() if line.startswith("STEP ")]
    return [(pixels.strip('"'), mask.strip('"')) for _, pixels, mask in steps]


def test_parameter_server_cluster_trains(tmp_path):
    results = tmp_path / "runs"
    out = _launch(
        "local-cluster",
        "--workers=2",
        "--ps=1",
        "--",
        f"--results_dir={results}",
        "--train_steps=10",
        "--steps_per_loop=5",
        "--batch_size=32",
        f"--model_module={PROBE}",
        "--model=ps_probe",
        "--deterministic_input",
    )
    assert out.returncode == 0, out.stdout + out.stderr
    rec = _one_record(results)
    assert rec["status"] == "ok"
    assert rec["placement"]["strategy"] == "parameter_server"
    assert rec["placement"]["num_workers"] == 2
    assert rec["per_replica_batch_size"] == 16  # the global batch split over 2 workers
    assert rec["results"]["final_step"] == 10
    assert all(steps == 5 for steps, _ in rec["results"]["loops"])
    r = rec["results"]
    measured = r["loops"][r["steady_state_after_loops"] :]
    expected = sum(s * 16 * 2 for s, _ in measured) / sum(t for _, t in measured)
    assert r["examples_per_sec"] == pytest.approx(expected, rel=1e-4)
    tasks = rec["cluster"]["tasks"]
    assert [(t["role"], t["index"]) for t in tasks] == [
        ("chief", 0),
        ("worker", 0),
        ("worker", 1),
        ("ps", 0),
    ]
    assert rec["cluster"]["strategy"] == "parameter_server"
    assert set(rec["cluster"]["spec"]) == {"chief", "worker", "ps"}
    # The chief finished by itself; the serving tasks were stopped by the launcher.
    assert tasks[0]["exit_code"] == 0 and not tasks[0]["stopped_by_launcher"]
    assert all(t["stopped_by_launcher"] for t in tasks[1:])
    assert "serving as worker 0" in pathlib.Path(tasks[1]["log"]).read_text()
    # Each worker read a shard of its own: with one seeded pipeline for all, both
    # workers stepped on the same batches in the same order.
    worker0, worker1 = (_probe_lines(pathlib.Path(t["log"])) for t in tasks[1:3])
    assert len(worker0) == len(worker1) == 10  # 5 steps a loop each, 2 loops
    assert not {p for p, _ in worker0} & {p for p, _ in worker1}
    # ... and dropout masks of its own: 20 steps, 20 masks (before, both workers
    # could read the seed state before either wrote it back).
    assert len({m for _, m in worker0 + worker1}) == 20
    import tensorflow as tf

    checkpoint = tf.train.latest_checkpoint(rec["config"]["model_dir"] + "/checkpoints")
    state = tf.train.load_variable(checkpoint, "dropout_rng/0/.ATTRIBUTES/VARIABLE_VALUE")
    assert state[1] == 20  # one claimed draw per worker step


def test_a_worker_killed_mid_run_fails_the_run_and_names_it(tmp_path):
    results, logs = tmp_path / "runs", tmp_path / "logs"
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    launcher = subprocess.Popen(
        [
            *LAUNCH,
            "local-cluster",
            "--workers=2",
            f"--log-dir={logs}",
            "--grace=5",
            "--",
            f"--results_dir={results}",
            "--train_steps=1000000",
            "--use_synthetic_data",
            "--log_every_secs=1",  # metrics.jsonl is flushed within a second of a loop
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 150
        # Training has started once the chief wrote its `running` record.
        while not record_files(results) and time.monotonic() < deadline:
            assert launcher.poll() is None, launcher.communicate()
            time.sleep(0.5)
        assert record_files(results), "the chief never started training"
        # Kill mid-run: once the chief has flushed the metrics of a finished loop.
        while not _trained_a_loop(results) and time.monotonic() < deadline:
            assert launcher.poll() is None, launcher.communicate()
            time.sleep(0.2)
        assert _trained_a_loop(results), "the chief never finished a loop"
        state = json.loads((logs / "cluster.json").read_text())
        pids = {t["task"]: t["pid"] for t in state["tasks"]}
        os.kill(pids["worker:1"], signal.SIGKILL)
        killed = time.monotonic()
        while launcher.poll() is None and time.monotonic() < killed + 60:
            time.sleep(0.1)
        reaction = time.monotonic() - killed
        stdout, stderr = launcher.communicate(timeout=30)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert reaction < 6, f"the launcher took {reaction:.1f} s to report the dead worker"
    assert launcher.returncode == 128 + signal.SIGKILL
    # The chief's collective errors stay in its log, off the console.
    assert "internal error" not in stdout and "internal error" not in stderr
    lines = [x for x in stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert lines[0].startswith("tpubench-launch local-cluster: error: task worker:1 (pid ")
    assert "was killed by SIGKILL; stopped the other 1 task(s)" in lines[0]
    rec = _one_record(results)  # the chief's own record, amended
    assert rec["status"] == "failed"
    assert rec["error"].startswith("task worker:1 ")
    assert rec["cluster"]["failed_task"] == "worker:1"
    codes = {f"{t['role']}:{t['index']}": t["exit_code"] for t in rec["cluster"]["tasks"]}
    assert codes["worker:1"] == -signal.SIGKILL
    assert codes["worker:0"] is not None  # stopped, not left running
    assert f"[run record: {results}" in lines[0]
    for pid in pids.values():  # nothing outlives the launcher
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_bad_cluster_options_are_one_line_errors(tmp_path):
    out = _launch("local-cluster", "--workers=0", "--", f"--results_dir={tmp_path}")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "--workers=0 is out of range; accepted: 1 to 1,024 (worker tasks)" in out.stderr
    out = _launch("local-cluster", "--workers=2", "--", "--results_dir=gs://b/runs")
    assert out.returncode == 2 and "needs a local directory" in out.stderr
    out = _launch("local-cluster", "--workers=2", "--ps=1", "--", "--strategy=multi_worker")
    assert out.returncode == 2
    assert "--strategy=multi_worker does not fit a cluster with --ps tasks" in out.stderr
    out = _launch("local-cluster", "--workers=two")
    assert out.returncode == 2 and "'two' is not a whole number" in out.stderr
    assert out.stderr.count("\n") == 1


def test_multi_worker_without_tf_config_is_a_clear_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tpubench",
            "train",
            "--strategy=multi_worker",
            f"--results_dir={tmp_path}",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 2
    assert "needs TF_CONFIG" in out.stderr
    assert "Traceback" not in out.stderr
