"""The seeds' software in their studies: what each cell runs, so that a finding flips for a
hardware reason, not a software one.

cpu_vs_gpu's seed `1 GPU` ran Keras 2's LSTM without cuDNN (the setup's `params:` passes
`--params=cudnn=false` to the LSTM models' cells) beside `1 GPU cuDNN`, the 2026 answer;
tpu_vs_gpu's GPU trained with tf_cnn_benchmarks' SGD and its TPU setup names the seed's
v2-8; a cell priced as a machine says in the report what it ran on.  Planned with
--plan_for (no GPU here), the commands are the ones a GPU or TPU machine would run.
"""

from __future__ import annotations

import pathlib

import pytest
from conftest import one_line_error, run_cli

from tpubench.core import tpu_slices
from tpubench.study.run import cells, ran_on
from tpubench.study.spec import spec

GPU = "gcp:a3-highgpu-1g"
STUDIES = pathlib.Path(spec.shipped_dir())


def _commands(out: str) -> dict[str, str]:
    """'# ID: part: model · data · setup' -> the command line under it, by that description."""
    lines = out.split("dry run: these commands would run, in this order:\n")[1].splitlines()
    return {
        a.split(": ", 1)[1]: b for a, b in zip(lines, lines[1:], strict=False) if a.startswith("# ")
    }


def test_the_seed_gpu_runs_the_lstms_without_cudnn_beside_the_cudnn_answer(tmp_path):
    proc, _ = run_cli(
        "study", "run", "cpu_vs_gpu", "--dry-run", f"--plan_for={GPU}",
        f"--results_dir={tmp_path / 'r'}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    commands = _commands(proc.stdout)
    for model in ("imdb_bilstm", "lstm_textgen"):
        seed = commands[f"train: {model} · synthetic · 1 GPU"]
        assert "--accelerator=gpu" in seed and " --params=cudnn=false " in seed
        cudnn = commands[f"train: {model} · synthetic · 1 GPU cuDNN"]
        assert "--accelerator=gpu" in cudnn and "--params" not in cudnn
    for model in ("mnist_mlp", "mnist_cnn", "cifar10_cnn", "imdb_fasttext"):
        assert "--params" not in commands[f"train: {model} · synthetic · 1 GPU"]
        assert f"train: {model} · synthetic · 1 GPU cuDNN" not in commands  # no LSTM: no cell
    # On the CPU machines cuDNN never applies: their cells are as before.
    assert not any("--params" in c for d, c in commands.items() if "vCPU" in d)
    assert "  train · 1 GPU cuDNN                    2 " in proc.stdout  # its cost preview row


def test_a_setups_params_enter_only_its_own_models_cell_ids(tmp_path):
    """The 1 GPU cells of the models without an LSTM keep their ids (and records)."""
    text = (STUDIES / "cpu_vs_gpu.yaml").read_text()
    plain = text.replace(
        "        params: {imdb_bilstm: {cudnn: false}, lstm_textgen: {cudnn: false}}\n", ""
    )
    assert plain != text
    (tmp_path / "cpu_vs_gpu.yaml").write_text(plain)  # the same name: the same study
    before = {
        c.describe(): c.id
        for c in cells.expand(spec.load(str(tmp_path / "cpu_vs_gpu.yaml")), "full")
    }
    after = {c.describe(): c.id for c in cells.expand(spec.load("cpu_vs_gpu"), "full")}
    changed = {d for d in before if before[d] != after[d]}
    assert changed == {
        "train: imdb_bilstm · synthetic · 1 GPU",
        "train: lstm_textgen · synthetic · 1 GPU",
    }


def test_tpu_vs_gpu_trains_the_gpu_with_sgd_and_plans_the_seeds_v2_8(tmp_path):
    study = spec.load("tpu_vs_gpu")
    gpu_host = cells.Host(tuple(range(26)), 1, "NVIDIA H100 80GB HBM3", False)
    by = {c.describe(): c for c in cells.expand(study, "full")}
    for model, optimizer in (("resnet50", "sgd"), ("inception_v3", "sgd"), ("bilstm1024", "model")):
        line = by[f"train: {model} · synthetic · 1 GPU"].shell(gpu_host, "r", None)
        assert f" --optimizer={optimizer} " in line and "--batch_size=128" in line
    tpu = study.part("train").setups[1]
    assert (tpu.label, tpu.machine) == ("Cloud TPU", "gcp:tpu-v2-8")
    # A TPU run prices the slice it runs on: the study's v2-8 is what is rented and planned.
    tpu_host = cells.Host((0,), 0, "", True)
    line = by["train: resnet50 · synthetic · Cloud TPU"].shell(tpu_host, "r", None)
    assert "--machine" not in line and "--tpu=local" in line
    proc, _ = run_cli(
        "study", "run", "tpu_vs_gpu", "--dry-run", "--plan_for=gcp:tpu-v2-8",
        f"--results_dir={tmp_path / 'r'}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    row = next(x for x in proc.stdout.splitlines() if x.startswith("  train · Cloud TPU "))
    assert row.split()[5:] == ["$4.50", "0:27:00", "$2.02", "gcp:tpu-v2-8", "(on_demand)"]


MINE = """
title: mine
form: {kind: relative, part: p, baseline: one}
parts:
  - name: p
    models: [mnist_mlp, lstm_textgen]
    setups:
      - {label: one, device: gpu, params: {lstm_textgen: {cudnn: false}}}
    scale:
      smoke: {tiny: true, train_steps: 2}
"""


@pytest.mark.parametrize(
    "old,new,expected",
    [
        (
            "params: {lstm_textgen: {cudnn: false}}",
            "params: {lstm_textgn: {cudnn: false}}",
            "unknown model in {path}: parts[0] (p).setups (one).params: 'lstm_textgn' (did you "
            "mean lstm_textgen",
        ),
        (
            "params: {lstm_textgen: {cudnn: false}}",
            "params: {cudnn: false}",
            "unknown model in {path}: parts[0] (p).setups (one).params: 'cudnn'",
        ),
        (
            "params: {lstm_textgen: {cudnn: false}}",
            "params: [cudnn]",
            "(one).params must map model names to their hyperparameters, e.g. params: "
            "{{imdb_bilstm: {{cudnn: false}}}}",
        ),
        (
            "{cudnn: false}",
            "{seed: 3}",
            "(one).params.lstm_textgen.seed: seed is not a hyperparameter: --seed seeds the run "
            "(its weights, dropout and input order); use --seed=3",
        ),
        (
            "{cudnn: false}",
            "{cudnn: 'no, never'}",
            "(one).params.lstm_textgen.cudnn='no, never' must be true/false, a number or a word",
        ),
        (
            "{cudnn: false}",
            "{Cudnn: false}",
            "(one).params.lstm_textgen: 'Cudnn' is not a hyperparameter name",
        ),
        (
            "device: gpu,",
            "device: gpu, models: [mnist_mlp],",
            "unknown model in {path}: parts[0] (p).setups (one).params: 'lstm_textgen'",
        ),
        (
            "device: gpu,",
            'device: tpu, machine: "gcp:n1-standard-8",',
            "(one): machine=gcp:n1-standard-8 is not a TPU slice; a tpu setup names one such "
            "as gcp:tpu-v2-8",
        ),
        (
            "device: gpu,",
            'device: gpu, machine: "gcp:tpu-v2-8",',
            "(one): machine=gcp:tpu-v2-8 is a TPU slice; it needs device: tpu",
        ),
    ],
)
def test_a_bad_setup_params_or_tpu_machine_is_one_line(tmp_path, old, new, expected):
    path = tmp_path / "mine.yaml"
    assert old in MINE
    path.write_text(MINE.replace(old, new))
    proc, _ = run_cli("study", "run", str(path), "--dry-run", f"--results_dir={tmp_path}/r")
    line = one_line_error(proc)
    assert proc.returncode == 2
    assert expected.format(path=path) in line, line


PARAMS_TOO = """
title: mine
form: {kind: relative, part: p, baseline: one}
parts:
  - name: p
    models: [imdb_bilstm]
    setups:
      - {label: one, device: gpu, params: {imdb_bilstm: {cudnn: false}}}
      - {label: two, device: gpu}
    flags: {params: num_layers=2}
    scale:
      smoke: {tiny: true, train_steps: 2}
"""


def test_a_setups_params_follow_the_parts_own(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(PARAMS_TOO)
    host = cells.Host((0, 1), 1, "NVIDIA H100 80GB HBM3", False)
    one, two = cells.expand(spec.load(str(path)), "smoke")
    assert one.flags(host, "r", None)["params"] == ["num_layers=2", "cudnn=false"]
    assert two.flags(host, "r", None)["params"] == "num_layers=2"
    assert "--params=num_layers=2,cudnn=false " in one.shell(host, "r", None)


def test_what_a_record_ran_on_is_its_cpu_cores_and_accelerators():
    cpu = {"model": "AMD EPYC 7B13", "affinity_cores": 8, "logical_cores": 224}
    gpu = {"kind": "gpu", "name": "NVIDIA H100 80GB HBM3"}
    assert ran_on.describe({"hardware": {"cpu": cpu, "accelerators": []}}) == (
        "AMD EPYC 7B13: 8 of the host's 224 cores"
    )
    both = {"hardware": {"cpu": dict(cpu, affinity_cores=224), "accelerators": [gpu, gpu]}}
    assert ran_on.describe(both) == (
        "AMD EPYC 7B13: all 224 of the host's cores; 2 x NVIDIA H100 80GB HBM3"
    )
    assert ran_on.describe({}) == "a CPU it did not name"  # an older record


@pytest.mark.parametrize("machine", ["gcp:tpu-v2-8", "gcp:tpu-v4-32", "gcp:tpu-v5e-8",
                                     "gcp:tpu-v5e-16", "gcp:tpu-v6e-4"])  # fmt: skip
def test_the_planner_and_the_launcher_count_a_slices_hosts_alike(machine):
    from tpubench.cost import catalog
    from tpubench.cost import machine as priced
    from tpubench_launch import tpus

    acc = priced.parse(machine).accelerators(catalog.load())
    launched = tpus.parse(machine)
    assert (acc.count, tpu_slices.hosts(acc.name.removeprefix("tpu-"), acc.count)) == (
        launched.chips,
        launched.hosts,
    )
