"""Parameter-server cells: a local cluster each (tpubench-launch local-cluster); no TensorFlow."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

from tpubench.study import cells, findings, report, spec

CPU_HOST = cells.Host(cores=(0, 1), gpus=0, gpu_name="", tpu=False)
GPU_HOST = cells.Host(cores=tuple(range(16)), gpus=8, gpu_name="H100", tpu=False)


def _cell(label: str, model: str = "resnet50", study: str = "strategies") -> cells.Cell:
    s = spec.load(study, report.FORMS, findings.CHECKS)
    return next(
        c for c in cells.expand(s, "full") if c.setup.label == label and c.model.model == model
    )


def test_a_cpu_parameter_server_cell_is_a_local_cluster_runnable_here():
    cell = _cell("2 CPU ps_cpu")
    assert cell.needs(CPU_HOST) is None
    argv = cell.argv(CPU_HOST, "r", None)
    assert argv[1:6] == ["-P", "-m", "tpubench_launch.main", "local-cluster", "--workers=2"]
    assert argv[6:8] == ["--ps=1", "--"]
    assert "--strategy=parameter_server" in argv and "--num_cpu_devices=1" in argv
    assert f"--run_label={cell.id}" in argv
    shell = cell.shell(CPU_HOST, "r", None)
    assert shell.startswith("tpubench-launch local-cluster --workers=2 --ps=1 -- --model=resnet50")


def test_gpu_parameter_servers_keep_the_variables_on_their_cpu_or_a_gpu_of_their_own():
    on_cpu = _cell("4 GPU ps_cpu").argv(GPU_HOST, "r", None)
    on_gpu = _cell("4 GPU ps_gpu").argv(GPU_HOST, "r", None)
    assert "--gpus-per-worker=1" in on_cpu and "--ps-device=cpu" in on_cpu
    assert "--ps-device=gpu" in on_gpu and "--num_gpus=1" in on_gpu
    eight = _cell("8 GPU ps_gpu")
    assert eight.needs(GPU_HOST) == (
        "needs 9 GPU(s) (one for the parameter server); this host has 8"
    )
    assert _cell("8 GPU ps_cpu").needs(GPU_HOST) is None


def test_cnn_scaling_uses_each_model_s_published_configuration():
    s = spec.load("cnn_scaling", report.FORMS, findings.CHECKS)
    by_model: dict = {}
    for c in cells.expand(s, "full"):
        if c.setup.devices > 1:
            by_model.setdefault(c.model.model, set()).add(findings.method(c.setup))
    assert by_model == {
        "inception_v3": {"ps_cpu"},
        "resnet50": {"ps_cpu"},
        "resnet152": {"ps_cpu"},
        "alexnet": {"nccl"},
        "vgg16": {"nccl"},
    }
    assert s.repeats == 5 and "tf-k80-distributed" in s.published


def _this_checkout_cluster():
    """launch/cluster.py of this checkout (an installed tpubench_launch may be another's)."""
    path = pathlib.Path(__file__).resolve().parents[2] / "launch" / "cluster.py"
    module_spec = importlib.util.spec_from_file_location("_cluster_here", path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules["_cluster_here"] = module  # dataclasses look their module up there
    try:
        module_spec.loader.exec_module(module)
    finally:
        del sys.modules["_cluster_here"]
    return module


def test_the_launcher_hands_each_task_its_gpus():
    cluster = _this_checkout_cluster()
    tasks = [
        cluster.Task("chief", 0, "a"),
        cluster.Task("worker", 0, "b"),
        cluster.Task("worker", 1, "c"),
        cluster.Task("ps", 0, "d"),
    ]
    opts = cluster.Options(workers=2, ps=1, train_args=(), gpus_per_worker=2, ps_device="gpu")
    env = {t.name: opts.task_env(tasks, t).get("CUDA_VISIBLE_DEVICES") for t in tasks}
    assert env == {"chief:0": "", "worker:0": "0,1", "worker:1": "2,3", "ps:0": "4"}
    opts = cluster.Options(workers=2, ps=1, train_args=(), gpus_per_worker=1, ps_device="cpu")
    env = {t.name: opts.task_env(tasks, t).get("CUDA_VISIBLE_DEVICES") for t in tasks}
    assert env == {"chief:0": "", "worker:0": "0", "worker:1": "1", "ps:0": ""}
    plain = cluster.Options(workers=2, ps=1, train_args=())
    assert all(plain.task_env(tasks, t) == {} for t in tasks)  # as before: the environment
