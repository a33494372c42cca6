"""`runs:` in sweep files: each run written out with its label; checks, dry run, resume."""

import subprocess
import sys

import pytest
import sweep_records

from tpubench_launch import errors
from tpubench_launch.sweep import file as sweep_file

LAUNCH = [sys.executable, "-m", "tpubench_launch.main", "sweep"]

RUNS = """
name: listed
flags: {use_synthetic_data: true}
runs:
  - label: mlp-small
    machine: gcp:n1-standard-1
    seconds: 30
    flags: {model: mnist_mlp, train_steps: 5, batch_size: 16}
  - label: mlp.serve_1
    command: infer
    flags: {model: mnist_mlp, num_batches: 3}
"""


def _file(tmp_path, text, name="r.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_runs_keep_their_labels_commands_and_flags(tmp_path):
    sw = sweep_file.load(_file(tmp_path, RUNS), "local")
    assert [c.id for c in sw.configs] == ["mlp-small", "mlp.serve_1"]
    small, serve = sw.configs
    assert small.train_flags() == {
        "model": "mnist_mlp",
        "machine": "gcp:n1-standard-1",
        "use_synthetic_data": True,
        "train_steps": 5,
        "batch_size": 16,
    }
    assert (small.command, small.seconds, small.describe()) == (
        "train",
        30,
        "mnist_mlp gcp:n1-standard-1",
    )
    assert (serve.command, serve.describe()) == ("infer", "infer mnist_mlp")
    # The label is the identity, whatever the executor.
    assert [c.id for c in sweep_file.load(_file(tmp_path, RUNS), "gce").configs] == [
        "mlp-small",
        "mlp.serve_1",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("grid: {models: [a]}\nruns: [{label: a}]\n", "give 'grid' or 'runs', not both"),
        ("runs: []\n", "runs must be a non-empty list of mappings"),
        ("runs: [mnist]\n", "runs[0] must be a mapping with a label, got 'mnist'"),
        ("runs: [{label: 'a b'}]\n", "label='a b' must be 1-100 letters, digits"),
        ("runs: [{flags: {}}]\n", "label=None must be 1-100 letters"),
        ("runs: [{label: a}, {label: a}]\n", "runs[1] (a): two runs share the label 'a'"),
        ("runs: [{label: a, mashine: x}]\n", "unknown key in"),
        (
            "runs: [{label: a, batch_size: 0}]\n",
            "batch_size=0 must be a whole number from 1 to 1,048,576",
        ),
        (
            "runs: [{label: a, machine: m, flags: {machine: n}}]\n",
            "flags.machine is also set by the run; set it once",
        ),
        (
            "flags: {tiny: true}\nruns: [{label: a, flags: {tiny: false}}]\n",
            "flags.tiny is also in the file's flags:; set it in one place",
        ),
        ("runs: [{label: a, flags: {run_label: b}}]\n", "flags.run_label is set by tpubench"),
        ("runs: [{label: a, command: serve}]\n", "unknown command in"),
        (
            "runs: [{label: a, command: infer, strategy: multi_worker}]\n",
            "command infer runs on one machine",
        ),
        ("runs: [{label: a, seconds: -1}]\n", "seconds=-1 must be a number > 0"),
        ("runs: [{label: a, one_machine: true}]\n", "one_machine=True needs strategy"),
        (
            "runs: [{label: a, strategy: parameter_server, one_machine: 1}]\n",
            "one_machine=1: true or false",
        ),
        (
            "runs: [{label: a, strategy: multi_worker, gpus_per_worker: 17}]\n",
            "gpus_per_worker=17 must be a whole number 0-16",
        ),
        (
            "runs: [{label: a, strategy: parameter_server, ps_device: tpu}]\n",
            "unknown ps_device",
        ),
        (
            "runs: [{label: a, strategy: multi_worker, ps_device: cpu}]\n",
            "ps_device needs strategy parameter_server",
        ),
    ],
)
def test_bad_runs_name_the_problem(tmp_path, text, message):
    with pytest.raises(errors.UsageError, match=None) as e:
        sweep_file.load(_file(tmp_path, text), "local")
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def _dry_run(tmp_path):
    return subprocess.run(
        [*LAUNCH, _file(tmp_path, RUNS), "--dry-run"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )


def test_dry_run_passes_labels_and_no_model_dir_to_infer(tmp_path):
    out = _dry_run(tmp_path)
    assert out.returncode == 0, out.stderr
    body = out.stdout.split("dry run: these commands would run, in this order:\n")[1]
    assert body.splitlines() == [
        "# mlp-small: mnist_mlp gcp:n1-standard-1",
        "tpubench train --model=mnist_mlp --machine=gcp:n1-standard-1 --batch_size=16 "
        "--use_synthetic_data --train_steps=5 --results_dir=runs/sweeps/listed "
        "--model_dir=runs/sweeps/listed/model_dirs/mlp-small --run_label=mlp-small",
        "# mlp.serve_1: infer mnist_mlp",
        "tpubench infer --model=mnist_mlp --use_synthetic_data --num_batches=3 "
        "--results_dir=runs/sweeps/listed --run_label=mlp.serve_1",
    ]
    # The run's own estimate prices it: n1-standard-1 for 30 s.
    row = next(x for x in out.stdout.splitlines() if x.startswith("mlp-small "))
    assert row.split()[2:5] == ["0:00:30", "$0.000396", "estimate"]


def test_a_recorded_label_is_skipped_and_a_misspelt_infer_flag_refused(tmp_path):
    results = tmp_path / "runs/sweeps/listed"
    results.mkdir(parents=True)
    mlp = sweep_file.load(_file(tmp_path, RUNS), "local").configs[0]
    sweep_records.write(results, mlp, "r1", "runs/sweeps/listed/model_dirs/mlp-small")
    out = _dry_run(tmp_path)
    assert out.returncode == 0, out.stderr
    assert "2 configuration(s), 1 already recorded in runs/sweeps/listed, 1 to run" in out.stdout
    assert "# mlp-small" not in out.stdout and "# mlp.serve_1: infer mnist_mlp" in out.stdout
    bad = _file(tmp_path, RUNS.replace("num_batches", "num_batchez"), "bad.yaml")
    out = subprocess.run(
        [*LAUNCH, bad, "--dry-run"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert out.returncode == 2
    assert out.stderr.strip() == (
        f"tpubench-launch sweep: error: {bad}: runs (mlp.serve_1): flags.num_batchez is not a "
        "`tpubench infer` flag; did you mean num_batches? (`tpubench infer --helpfull` lists "
        "them); nothing was launched"
    )


ONE_MACHINE = """
name: async
flags: {model: mnist_mlp, use_synthetic_data: true, train_steps: 2}
cloud: {project: proj-42, zone: us-central1-a, bucket: "gs://bkt/tb"}
runs:
  - label: ps-2gpu
    machine: "gcp:n1-standard-16+2xgcp:v100"
    strategy: parameter_server
    one_machine: true
    workers: 2
    gpus_per_worker: 1
    ps_device: cpu
"""


def _dry(tmp_path, text, executor):
    args = [*LAUNCH, _file(tmp_path, text), f"--executor={executor}", "--dry-run"]
    return subprocess.run(args, capture_output=True, text=True, cwd=tmp_path, timeout=120)


def test_a_cluster_on_one_machine_is_one_vm_running_a_local_cluster(tmp_path):
    out = _dry(tmp_path, ONE_MACHINE, "gce")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    creates = [x for x in lines if "instances create" in x]
    assert len(creates) == 1 and "--accelerator=type=nvidia-tesla-v100,count=2" in creates[0]
    run = next(x for x in lines if "local-cluster" in x)
    assert (
        "tpubench_launch.main local-cluster --workers=2 --ps=1 --gpus-per-worker=1 "
        "--ps-device=cpu -- --model=mnist_mlp" in run
    )
    assert "TF_CONFIG" not in run  # the local cluster gives each task its own
    # The description is the preview's last column and folds under the row.
    at = next(i for i, x in enumerate(lines) if x.startswith("ps-2gpu "))
    assert "parameter_server 2w+1ps on one machine" in " ".join(
        " ".join(lines[at : at + 4]).split()
    )
    # Priced as the one VM it rents, not one per task.
    one = _dry(tmp_path, ONE_MACHINE.replace("one_machine: true", "one_machine: false"), "gce")
    assert one.returncode == 0, one.stderr
    assert len([x for x in one.stdout.splitlines() if "instances create" in x]) == 1
    assert one.stdout.count("instances create tpubench-async-") == 1
    assert len(next(x for x in one.stdout.splitlines() if "instances create" in x).split()) > len(
        creates[0].split()
    )  # three VMs named in one create


def test_an_executor_that_runs_no_cluster_on_one_machine_says_which_does(tmp_path):
    out = _dry(tmp_path, ONE_MACHINE, "skypilot")
    assert out.returncode == 2
    assert (
        out.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "ps-2gpu: --executor=skypilot runs no clusters on one machine (one_machine: true), "
            "not parameter_server; --executor=gce does"
        )
    )


def test_the_local_executor_passes_the_cluster_shape_to_local_cluster(tmp_path):
    text = ONE_MACHINE.replace("cloud:", "# cloud:")
    out = _dry(tmp_path, text, "local")
    assert out.returncode == 0, out.stderr
    assert (
        "tpubench-launch local-cluster --workers=2 --ps=1 --gpus-per-worker=1 --ps-device=cpu --"
        in out.stdout
    )
