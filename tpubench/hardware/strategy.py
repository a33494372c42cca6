"""HardwareConfig -> tf.distribute.Strategy.

The only module that names devices.  `configure_host` must run before
TensorFlow touches a device (thread pools and logical CPU devices cannot be
changed afterwards); `build` then returns the strategy and a description of
what it runs on.  Asking for hardware that is not there is a HardwareError,
never a silent CPU run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time

from tpubench import errors
from tpubench.config import HardwareConfig


@dataclasses.dataclass(frozen=True)
class Placement:
    """What a built strategy runs on (goes into the run record)."""

    accelerator: str  # cpu | gpu | tpu
    strategy: str  # one_device | mirrored | multi_worker | parameter_server | tpu
    num_replicas: int  # replicas in sync (per step)
    devices: tuple[str, ...]
    all_reduce: str
    num_workers: int = 1
    is_chief: bool = True
    cluster: dict | None = None


# Set for every run; recorded in the run record's software section.
GPU_ENV = ("TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT", "1")


def _tf():
    import tensorflow as tf

    return tf


def tf_config() -> dict | None:
    """The parsed TF_CONFIG environment variable, or None when unset."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return None
    try:
        cfg = json.loads(raw)
    except json.JSONDecodeError as e:
        raise errors.UsageError(
            f"TF_CONFIG is not valid JSON ({e.msg} at column {e.colno})"
        ) from None
    if not isinstance(cfg, dict) or "cluster" not in cfg:
        raise errors.UsageError('TF_CONFIG must be a JSON object with a "cluster" key')
    return cfg


def configure_host(hw: HardwareConfig) -> None:
    """Thread pools, logical CPU devices and GPU kernel choices; call before any TF op runs."""
    # cuDNN's persistent NHWC batch-norm kernels, tf_cnn_benchmarks' default:
    # ResNet-50 fp16 on one H100 went from 2,000 to 3,599 images/s
    # (docs/gpu.md).  TensorFlow reads the variable at its first batch-norm
    # kernel; a value the user set (0 turns it off) wins.
    os.environ.setdefault(GPU_ENV[0], GPU_ENV[1])
    tf = _tf()
    threading = tf.config.threading
    if (
        hw.num_intra_threads
        and threading.get_intra_op_parallelism_threads() != hw.num_intra_threads
    ):
        threading.set_intra_op_parallelism_threads(hw.num_intra_threads)
    if (
        hw.num_inter_threads
        and threading.get_inter_op_parallelism_threads() != hw.num_inter_threads
    ):
        threading.set_inter_op_parallelism_threads(hw.num_inter_threads)
    cpu = tf.config.list_physical_devices("CPU")[0]
    current = tf.config.get_logical_device_configuration(cpu) or [None]
    if hw.num_cpu_devices > 1 and len(current) != hw.num_cpu_devices:
        try:
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration()] * hw.num_cpu_devices
            )
        except RuntimeError as e:  # devices already initialised in this process
            raise errors.UsageError(
                f"--num_cpu_devices={hw.num_cpu_devices} must be set before TensorFlow "
                f"initialises its devices ({e})"
            ) from None


def _on_tpu_vm() -> bool:
    return os.path.exists("/dev/accel0") or os.path.exists("/dev/vfio/0")


def resolve_accelerator(hw: HardwareConfig) -> str:
    """auto -> tpu (--tpu given or on a TPU VM), else gpu if visible, else cpu."""
    if hw.accelerator != "auto":
        return hw.accelerator
    if hw.strategy == "tpu" or hw.tpu or os.environ.get("TPU_NAME") or _on_tpu_vm():
        return "tpu"
    if _tf().config.list_physical_devices("GPU"):
        return "gpu"
    return "cpu"


def resolve_strategy(hw: HardwareConfig, accelerator: str) -> str:
    """auto -> the natural strategy for the accelerator and TF_CONFIG."""
    if hw.strategy != "auto":
        return hw.strategy
    if accelerator == "tpu":
        return "tpu"
    cfg = tf_config()
    if cfg:
        cluster = cfg["cluster"]
        if cluster.get("ps"):
            return "parameter_server"
        if len(cluster.get("worker", [])) + len(cluster.get("chief", [])) > 1:
            return "multi_worker"
    if accelerator == "cpu":
        return "mirrored" if hw.num_cpu_devices > 1 else "one_device"
    return "mirrored" if _gpu_count(hw) > 1 else "one_device"


def _gpu_names(hw: HardwareConfig) -> list[str]:
    tf = _tf()
    gpus = tf.config.list_logical_devices("GPU")
    if not gpus:
        built = "built with CUDA" if tf.test.is_built_with_cuda() else "a CPU-only build"
        raise errors.HardwareError(
            f"--accelerator=gpu but TensorFlow sees no GPU (this TensorFlow is {built}); "
            "install tpubench[gpu] on a machine with an NVIDIA driver, or use --accelerator=cpu"
        )
    wanted = len(gpus) if hw.num_gpus is None else hw.num_gpus
    if wanted < 1 or wanted > len(gpus):
        raise errors.HardwareError(
            f"--num_gpus={hw.num_gpus} but {len(gpus)} GPU(s) are visible; accepted: 1..{len(gpus)}"
        )
    return [g.name for g in gpus[:wanted]]


def _gpu_count(hw: HardwareConfig) -> int:
    return len(_gpu_names(hw))


def _cross_device_ops(all_reduce: str, accelerator: str):
    tf = _tf()
    if all_reduce == "auto":
        return None  # TF picks: NCCL on GPUs, reduction to one device otherwise
    if all_reduce == "nccl":
        if accelerator != "gpu":
            raise errors.UsageError(
                "--all_reduce=nccl needs GPUs; on CPU use auto, hierarchical_copy or reduce_to_one"
            )
        return tf.distribute.NcclAllReduce()
    if all_reduce == "hierarchical_copy":
        return tf.distribute.HierarchicalCopyAllReduce()
    if all_reduce == "reduce_to_one":
        return tf.distribute.ReductionToOneDevice()
    raise errors.UsageError(
        f"--all_reduce={all_reduce} does not apply to a single-host mirrored strategy; "
        "accepted: auto, nccl, hierarchical_copy, reduce_to_one"
    )


def _multi_worker(hw: HardwareConfig, accelerator: str):
    tf = _tf()
    cfg = tf_config()
    if not cfg:
        raise errors.UsageError(
            f"--strategy={hw.strategy} needs TF_CONFIG describing the cluster "
            "(`tpubench-launch local-cluster` writes it for you)"
        )
    impl = {
        "auto": tf.distribute.experimental.CommunicationImplementation.AUTO,
        "ring": tf.distribute.experimental.CommunicationImplementation.RING,
        "nccl": tf.distribute.experimental.CommunicationImplementation.NCCL,
    }.get(hw.all_reduce)
    if impl is None:
        raise errors.UsageError(
            f"--all_reduce={hw.all_reduce} is not available with multi_worker; "
            "accepted: auto, ring, nccl"
        )
    options = tf.distribute.experimental.CommunicationOptions(implementation=impl)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    task = cfg.get("task", {})
    resolver = strategy.cluster_resolver
    is_chief = task.get("type") == "chief" or (
        task.get("type") == "worker" and task.get("index", 0) == 0 and "chief" not in cfg["cluster"]
    )
    return strategy, Placement(
        accelerator=accelerator,
        strategy="multi_worker",
        num_replicas=strategy.num_replicas_in_sync,
        devices=tuple(strategy.extended.worker_devices),
        all_reduce=hw.all_reduce,
        num_workers=len(resolver.cluster_spec().as_dict().get("worker", []))
        + len(resolver.cluster_spec().as_dict().get("chief", [])),
        is_chief=is_chief,
        cluster=cfg["cluster"],
    )


def _parameter_server(hw: HardwareConfig, accelerator: str):
    tf = _tf()
    cfg = tf_config()
    if not cfg or not cfg["cluster"].get("ps"):
        raise errors.UsageError(
            "--strategy=parameter_server needs TF_CONFIG with 'ps' and 'worker' tasks "
            "(`tpubench-launch local-cluster --ps=1` writes it for you)"
        )
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    workers = cfg["cluster"].get("worker", [])
    return strategy, Placement(
        accelerator=accelerator,
        strategy="parameter_server",
        num_replicas=strategy.num_replicas_in_sync,
        devices=tuple(f"/job:worker/task:{i}" for i in range(len(workers))),
        all_reduce="parameter_server",
        num_workers=len(workers),
        is_chief=True,
        cluster=cfg["cluster"],
    )


def ps_server_role(hw: HardwareConfig) -> tuple[str, int] | None:
    """(task_type, index) when this process is a worker/ps of a PS cluster.

    Under ParameterServerStrategy only the chief (coordinator) runs the
    training program; worker and ps tasks serve tensors until stopped.
    """
    cfg = tf_config()
    if not cfg or not cfg["cluster"].get("ps") or hw.strategy not in ("auto", "parameter_server"):
        return None
    task = cfg.get("task", {})
    if task.get("type") in ("worker", "ps"):
        return task["type"], int(task.get("index", 0))
    return None


def serve(role: tuple[str, int]) -> None:
    """Runs this worker/ps task's tf.distribute.Server until the process ends."""
    tf = _tf()
    cfg = tf_config()
    cluster = tf.train.ClusterSpec(cfg["cluster"])
    workers = len(cfg["cluster"].get("worker", []))
    # Worker servers need inter-op threads > number of workers or runs can
    # hang (TF_NOTES.md).
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=workers + 2)
    server = tf.distribute.Server(
        cluster, job_name=role[0], task_index=role[1], protocol="grpc", config=config, start=True
    )
    print(
        f"tpubench: serving as {role[0]} {role[1]} of a parameter-server cluster "
        f"({server.target}); the coordinator (chief task) runs training",
        flush=True,
    )
    # Sleep in Python rather than server.join(): a C++ join never lets the
    # SIGTERM/SIGINT handlers run, so the task could not be stopped cleanly.
    try:
        while True:
            time.sleep(1.0)
    except BaseException:  # noqa: BLE001 - any stop request ends serving quietly
        return


def _tpu(hw: HardwareConfig):
    tf = _tf()
    name = hw.tpu or os.environ.get("TPU_NAME") or ("local" if _on_tpu_vm() else None)
    if name is None:
        raise errors.HardwareError(
            "--accelerator=tpu needs a TPU: pass --tpu=NAME (a Cloud TPU name or grpc://host:port) "
            "or --tpu=local on a TPU VM; no TPU_NAME is set and this is not a TPU VM"
        )
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=name)
        if name != "local":
            tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except Exception as e:  # noqa: BLE001 - resolver errors range from URLError to NotFoundError
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise errors.HardwareError(
            f"no TPU reachable at --tpu={name} ({first[:200]}); on a TPU VM use --tpu=local, "
            "elsewhere --accelerator=cpu or gpu"
        ) from None
    strategy = tf.distribute.TPUStrategy(resolver)
    return strategy, Placement(
        accelerator="tpu",
        strategy="tpu",
        num_replicas=strategy.num_replicas_in_sync,
        devices=tuple(d.name for d in tf.config.list_logical_devices("TPU")),
        all_reduce="tpu",
        num_workers=max(1, len(resolver.cluster_spec().as_dict().get("worker", []))),
        # On a multi-host pod slice every host runs this program (gcloud
        # --worker=all); only host 0 writes records, metrics and checkpoints.
        is_chief=_tpu_host_index() == 0,
    )


def _tpu_host_index() -> int:
    """This host's index in a TPU pod slice (0 on single-host TPUs and elsewhere)."""
    for var in ("CLOUD_TPU_TASK_ID", "TPU_WORKER_ID"):
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    return 0


def _check_applicable(hw: HardwareConfig, accelerator: str) -> None:
    """Flags for one kind of device are an error with another, not ignored."""
    if hw.num_gpus is not None and accelerator != "gpu":
        raise errors.UsageError(
            f"--num_gpus={hw.num_gpus} applies to GPUs but the accelerator is {accelerator}; "
            "drop it or use --accelerator=gpu"
        )
    if hw.num_cpu_devices > 1 and accelerator != "cpu":
        raise errors.UsageError(
            f"--num_cpu_devices={hw.num_cpu_devices} splits the CPU into replicas but the "
            f"accelerator is {accelerator}; drop it or use --accelerator=cpu"
        )
    if hw.tpu and accelerator != "tpu":
        raise errors.UsageError(
            f"--tpu={hw.tpu} names a TPU but --accelerator={accelerator}; use --accelerator=tpu "
            "or auto"
        )


def build(hw: HardwareConfig):
    """Returns (strategy, Placement) for the configuration.

    Raises:
      HardwareError: the accelerator is not present or not reachable.
      UsageError: the combination of flags is not meaningful.
    """
    tf = _tf()
    accelerator = resolve_accelerator(hw)
    _check_applicable(hw, accelerator)
    name = resolve_strategy(hw, accelerator)
    if accelerator == "tpu" or name == "tpu":
        if name not in ("tpu", "auto") or accelerator != "tpu":
            raise errors.UsageError(
                f"--strategy={name} with --accelerator={accelerator}: TPUs run under "
                "--strategy=tpu (or auto)"
            )
        return _tpu(hw)
    # Cluster strategies first: they must exist before anything initialises
    # the eager context (listing logical devices does).
    if name == "multi_worker":
        return _multi_worker(hw, accelerator)
    if name == "parameter_server":
        return _parameter_server(hw, accelerator)
    if accelerator == "gpu":
        devices = _gpu_names(hw)
    else:
        devices = [d.name for d in tf.config.list_logical_devices("CPU")][: hw.num_cpu_devices]
    if name == "one_device":
        if len(devices) > 1:
            raise errors.UsageError(
                f"--strategy=one_device runs one replica but {len(devices)} devices were "
                "requested; use --strategy=mirrored (or auto)"
            )
        strategy = tf.distribute.OneDeviceStrategy(devices[0])
        return strategy, Placement(accelerator, "one_device", 1, tuple(devices), "none")
    if name == "mirrored":
        ops = _cross_device_ops(hw.all_reduce, accelerator)
        strategy = tf.distribute.MirroredStrategy(devices=devices, cross_device_ops=ops)
        return strategy, Placement(
            accelerator,
            "mirrored",
            strategy.num_replicas_in_sync,
            tuple(devices),
            hw.all_reduce if ops is not None else "auto",
        )
    raise errors.unknown(
        "strategy",
        name,
        ("auto", "one_device", "mirrored", "multi_worker", "parameter_server", "tpu"),
    )
