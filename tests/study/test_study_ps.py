"""Parameter-server cells, no TensorFlow: the seeds' synchronous one is one process
(central_storage); TF2's asynchronous one a local cluster (tpubench-launch local-cluster)."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

from tpubench.study.report import bands, findings, forms
from tpubench.study.run import cells
from tpubench.study.spec import spec

CPU_HOST = cells.Host(cores=(0, 1), gpus=0, gpu_name="", tpu=False)
GPU_HOST = cells.Host(cores=tuple(range(16)), gpus=8, gpu_name="H100", tpu=False)


def _cell(label: str, model: str = "resnet50", study: str = "strategies") -> cells.Cell:
    s = spec.load(study, forms.FORMS, findings.CHECKS)
    return next(
        c for c in cells.expand(s, "full") if c.setup.label == label and c.model.model == model
    )


def test_the_seed_s_cpu_parameter_server_is_one_synchronous_process_runnable_here():
    cell = _cell("2 CPU ps_cpu")
    assert cell.needs(CPU_HOST) is None and not cell.cluster()
    shell = cell.shell(CPU_HOST, "r", None)
    assert shell.startswith(
        "tpubench train --model=resnet50 --accelerator=cpu --num_cpu_devices=2 "
        "--strategy=central_storage --parameter_device=cpu "
    )
    assert f"--run_label={cell.id}" in shell and "local-cluster" not in shell


def test_the_seed_s_gpu_parameter_servers_use_exactly_their_gpus():
    on_cpu = _cell("4 GPU ps_cpu").shell(GPU_HOST, "r", None).split()
    on_gpu = _cell("4 GPU ps_gpu").shell(GPU_HOST, "r", None).split()
    assert on_cpu[:2] == ["tpubench", "train"] and on_gpu[:2] == ["tpubench", "train"]
    assert {"--num_gpus=4", "--strategy=central_storage", "--parameter_device=cpu"} <= set(on_cpu)
    assert {"--num_gpus=4", "--strategy=central_storage", "--parameter_device=gpu"} <= set(on_gpu)
    # PS on GPU at 8 GPUs needs 8, not a 9th for the parameter server.
    assert _cell("8 GPU ps_gpu").needs(GPU_HOST) is None
    assert _cell("8 GPU ps_gpu").needs(cells.Host((0,), 7, "H100", False)) == (
        "needs 8 GPU(s); this host has 7"
    )
    labels = [f"{n} GPU ps_{v}" for n in (2, 8) for v in ("cpu", "gpu")]
    methods = {bands.method(_cell(label).setup) for label in labels}
    assert methods == {"ps_cpu", "ps_gpu"}  # the seed's names, which its findings expect


def test_tf2_async_parameter_servers_are_a_labelled_local_cluster():
    cell = _cell("2 GPU async_ps (TF2)")
    assert cell.cluster() and bands.method(cell.setup) == "async_ps_cpu"
    argv = cell.argv(GPU_HOST, "r", None)
    assert argv[1:6] == ["-P", "-m", "tpubench_launch.main", "local-cluster", "--workers=2"]
    assert argv[6:10] == ["--ps=1", "--gpus-per-worker=1", "--ps-device=cpu", "--"]
    assert "--strategy=parameter_server" in argv and "--num_gpus=1" in argv
    assert not any(a.startswith("--parameter_device") for a in argv)
    shell = cell.shell(GPU_HOST, "r", None)
    assert shell.startswith("tpubench-launch local-cluster --workers=2 --ps=1 ")


@pytest.mark.parametrize("study", ["strategies", "cnn_scaling"])
def test_every_full_scale_cell_runs_on_one_8_gpu_host(study):
    s = spec.load(study, forms.FORMS, findings.CHECKS)
    full = cells.expand(s, "full")
    assert {c.setup.label: c.needs(GPU_HOST) for c in full if c.needs(GPU_HOST)} == {}
    ps_gpu_8 = [c for c in full if c.setup.devices == 8 and bands.method(c.setup) == "ps_gpu"]
    assert len(ps_gpu_8) == (5 if study == "strategies" else 0)


def test_cnn_scaling_uses_each_model_s_published_configuration():
    s = spec.load("cnn_scaling", forms.FORMS, findings.CHECKS)
    by_model: dict = {}
    for c in cells.expand(s, "full"):
        if c.setup.devices > 1:
            by_model.setdefault(c.model.model, set()).add(bands.method(c.setup))
    assert by_model == {
        "inception_v3": {"ps_cpu"},
        "resnet50": {"ps_cpu"},
        "resnet152": {"ps_cpu"},
        "alexnet": {"nccl"},
        "vgg16": {"nccl"},
    }
    assert s.repeats == 5 and "tf-k80-distributed" in s.published


def _this_checkout_cluster():
    """launch/cluster/local.py of this checkout (an installed tpubench_launch may be another's)."""
    path = pathlib.Path(__file__).resolve().parents[2] / "launch" / "cluster" / "local.py"
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
        cluster.topology.Task("chief", 0, "a"),
        cluster.topology.Task("worker", 0, "b"),
        cluster.topology.Task("worker", 1, "c"),
        cluster.topology.Task("ps", 0, "d"),
    ]
    opts = cluster.Options(workers=2, ps=1, train_args=(), gpus_per_worker=2, ps_device="gpu")
    env = {t.name: opts.task_env(tasks, t).get("CUDA_VISIBLE_DEVICES") for t in tasks}
    assert env == {"chief:0": "", "worker:0": "0,1", "worker:1": "2,3", "ps:0": "4"}
    opts = cluster.Options(workers=2, ps=1, train_args=(), gpus_per_worker=1, ps_device="cpu")
    env = {t.name: opts.task_env(tasks, t).get("CUDA_VISIBLE_DEVICES") for t in tasks}
    assert env == {"chief:0": "", "worker:0": "0", "worker:1": "1", "ps:0": ""}
    plain = cluster.Options(workers=2, ps=1, train_args=())
    assert all(plain.task_env(tasks, t) == {} for t in tasks)  # as before: the environment


@pytest.mark.parametrize(
    ("amx", "needs"),
    [
        ("usable", None),
        (None, None),  # a planned or rented machine: its catalog row names it
        ("absent", "needs a CPU with AMX this process may use; this host's AMX: absent"),
        (
            "listed but not permitted (kernel 5.10: no)",
            "needs a CPU with AMX this process may use; "
            "this host's AMX: listed but not permitted (kernel 5.10: no)",
        ),
    ],
)
def test_an_amx_setup_runs_only_where_amx_is_usable(amx, needs):
    """cpu_vs_gpu's c3/n4 bf16 cells, priced as AMX machines, never measure another CPU."""
    study = spec.load("cpu_vs_gpu", forms.FORMS, findings.CHECKS)
    host = cells.Host(cores=tuple(range(16)), gpus=0, gpu_name="", tpu=False, amx=amx)
    amx_cells = [c for c in cells.expand(study, "full") if c.setup.cpu == "amx"]
    assert {c.setup.label for c in amx_cells} == {"8 vCPU c3 bf16", "8 vCPU n4 bf16"}
    assert {c.needs(host) for c in amx_cells} == {needs}
    plain = [c for c in cells.expand(study, "full") if c.setup.label == "16 vCPU"]
    assert plain and all(c.needs(host) is None for c in plain)  # no AMX asked of them


def test_a_setup_cpu_other_than_amx_is_one_line(tmp_path):
    from tpubench.core import errors

    text = spec.path_of("cpu_vs_gpu").read_text().replace("cpu: amx}", "cpu: avx}", 1)
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    with pytest.raises(errors.UsageError, match=r"cpu in .*'avx'.*amx"):
        spec.load(str(path), forms.FORMS, findings.CHECKS)


@pytest.mark.parametrize(
    ("amx", "path", "amd_needs", "amx_runs"),
    [
        ("absent", "avx512_bf16", None, False),  # AMD EPYC Zen 4/5: its own cells only
        ("usable", "amx", "this host's bf16 path: amx", True),  # faster: not priced as AMD's
        ("absent", "none", "this host's bf16 path: none", False),  # no bf16 at all
        # AMX listed but refused: bf16 runs on AVX-512 BF16, as on an AMD part.
        ("listed but not permitted (kernel 5.10: no)", "avx512_bf16", None, False),
        (None, None, None, True),  # a planned or rented machine: its catalog row names it
    ],
)
def test_a_setup_runs_only_on_a_cpu_whose_bf16_path_it_names(amx, path, amd_needs, amx_runs):
    """cpu_vs_gpu's AMD setups (c3d, c4d) are gated by the bf16 path, not by a vendor name."""
    study = spec.load("cpu_vs_gpu", forms.FORMS, findings.CHECKS)
    host = cells.Host(
        cores=tuple(range(16)), gpus=0, gpu_name="", tpu=False, amx=amx, bf16_path=path
    )
    amd = [c for c in cells.expand(study, "full") if c.setup.cpu == "avx512_bf16"]
    assert {c.setup.label for c in amd} == {"8 vCPU c3d bf16", "8 vCPU c4d bf16", "2 vCPU c4d bf16"}
    got = {c.needs(host) for c in amd}
    if amd_needs is None:
        assert got == {None}
    else:
        assert got == {
            "needs a CPU whose bf16 runs on avx512_bf16 (AVX-512 BF16 without AMX: AMD EPYC "
            f"Zen 4 or 5); {amd_needs}"
        }
    amx_cells = [c for c in cells.expand(study, "full") if c.setup.cpu == "amx"]
    assert all((c.needs(host) is None) == amx_runs for c in amx_cells)
