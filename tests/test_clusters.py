"""Real multi-process tf.distribute clusters on localhost ports.

One process per task, each with its own TF_CONFIG, running the real
`tpubench train` CLI: MultiWorkerMirroredStrategy with 2 workers, and
ParameterServerStrategy with a chief, 2 workers and 1 parameter server.
"""

import glob
import json
import os
import signal
import socket
import subprocess
import sys

import pytest


def _free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("localhost", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _start(tf_config, args, log_path):
    env = dict(os.environ, TF_CONFIG=json.dumps(tf_config))
    log = open(log_path, "w")  # noqa: SIM115 - closed by the OS when the test ends
    return subprocess.Popen(
        [sys.executable, "-m", "tpubench", "train", *args],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _records(results_dir):
    return [json.load(open(p)) for p in sorted(glob.glob(os.path.join(results_dir, "*.json")))]


def _stop(procs):
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def test_multi_worker_two_workers_train_and_agree(tmp_path):
    ports = _free_ports(2)
    cluster = {"worker": [f"localhost:{p}" for p in ports]}
    results = tmp_path / "runs"
    args = [
        f"--results_dir={results}",
        f"--model_dir={tmp_path / 'model'}",
        "--train_steps=12",
        "--steps_per_loop=4",
        "--batch_size=32",
    ]
    procs = [
        _start(
            {"cluster": cluster, "task": {"type": "worker", "index": i}},
            args,
            tmp_path / f"worker{i}.log",
        )
        for i in range(2)
    ]
    try:
        codes = [p.wait(timeout=240) for p in procs]
    finally:
        _stop(procs)
    logs = [(tmp_path / f"worker{i}.log").read_text() for i in range(2)]
    assert codes == [0, 0], logs
    recs = _records(results)
    assert len(recs) == 1, "only the chief (worker 0) writes the run record"
    rec = recs[0]
    assert rec["status"] == "ok"
    assert rec["placement"]["strategy"] == "multi_worker"
    assert rec["placement"]["num_replicas"] == 2
    assert rec["placement"]["num_workers"] == 2
    assert rec["placement"]["cluster"] == cluster
    assert rec["results"]["final_step"] == 12
    assert rec["results"]["examples_per_sec"] > 0
    # Both workers evaluated the same synchronised model on the same examples.
    accuracy = [line for log in logs for line in log.splitlines() if "eval accuracy" in line]
    assert len(accuracy) == 1  # the non-chief prints no table
    assert "the chief task writes the run record" in logs[1]
    assert rec["results"]["eval"]["examples"] == (360 // 32) * 32  # full global batches only


def test_parameter_server_cluster_trains(tmp_path):
    chief, w0, w1, ps = _free_ports(4)
    cluster = {
        "chief": [f"localhost:{chief}"],
        "worker": [f"localhost:{w0}", f"localhost:{w1}"],
        "ps": [f"localhost:{ps}"],
    }
    servers = [
        _start({"cluster": cluster, "task": {"type": t, "index": i}}, [], tmp_path / f"{t}{i}.log")
        for t, i in (("worker", 0), ("worker", 1), ("ps", 0))
    ]
    results = tmp_path / "runs"
    try:
        coordinator = _start(
            {"cluster": cluster, "task": {"type": "chief", "index": 0}},
            [
                f"--results_dir={results}",
                f"--model_dir={tmp_path / 'model'}",
                "--train_steps=10",
                "--steps_per_loop=5",
                "--batch_size=32",
            ],
            tmp_path / "chief.log",
        )
        code = coordinator.wait(timeout=240)
    finally:
        _stop(servers + [coordinator])
    assert code == 0, (tmp_path / "chief.log").read_text()
    assert "serving as worker 0" in (tmp_path / "worker0.log").read_text()
    (rec,) = _records(results)
    assert rec["status"] == "ok"
    assert rec["placement"]["strategy"] == "parameter_server"
    assert rec["placement"]["num_workers"] == 2
    assert rec["per_replica_batch_size"] == 16  # the global batch split over 2 workers
    assert rec["results"]["final_step"] == 10
    # A wave of 5 steps on each of 2 workers with 16 examples each.
    assert all(steps == 5 for steps, _ in rec["results"]["loops"])
    r = rec["results"]
    measured = rec["results"]["loops"][r["steady_state_after_loops"] :]
    expected = sum(s * 16 * 2 for s, _ in measured) / sum(t for _, t in measured)
    # Loop times are recorded rounded to the microsecond: compare to that precision.
    assert r["examples_per_sec"] == pytest.approx(expected, rel=1e-4)
    assert 0.0 <= r["eval"]["accuracy"] <= 1.0 and r["eval"]["examples"] == 360


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
