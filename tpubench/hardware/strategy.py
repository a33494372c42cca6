"""HardwareConfig -> tf.distribute.Strategy.

The only module that names devices.  `configure_host` must run before
TensorFlow touches a device (thread pools and logical CPU devices cannot be
changed afterwards); `build` then returns the strategy and a description of
what it runs on.  Asking for hardware that is not there is a HardwareError,
never a silent CPU run.
"""

from __future__ import annotations

import os

from tpubench.core import errors, vocab
from tpubench.core.config import HardwareConfig
from tpubench.hardware import central_storage, clusters, placement

# Set for every run; recorded in the run record's software section.
GPU_ENV = ("TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT", "1")


def configure_host(hw: HardwareConfig) -> None:
    """Thread pools, logical CPU devices and GPU kernel choices; call before any TF op runs."""
    # cuDNN's persistent NHWC batch-norm kernels, tf_cnn_benchmarks' default:
    # ResNet-50 fp16 on one H100 went from 2,000 to 3,599 images/s
    # (docs/gpu.md).  TensorFlow reads the variable at its first batch-norm
    # kernel; a value the user set (0 turns it off) wins.
    os.environ.setdefault(GPU_ENV[0], GPU_ENV[1])
    tf = placement.tf()
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


def resolve_accelerator(hw: HardwareConfig) -> str:
    """auto -> tpu (--tpu given or on a TPU VM), else gpu if visible, else cpu."""
    if hw.accelerator != "auto":
        return hw.accelerator
    if hw.strategy == "tpu" or hw.tpu or os.environ.get("TPU_NAME") or placement.on_tpu_vm():
        return "tpu"
    if placement.tf().config.list_physical_devices("GPU"):
        return "gpu"
    return "cpu"


def resolve_strategy(hw: HardwareConfig, accelerator: str) -> str:
    """auto -> the natural strategy for the accelerator and TF_CONFIG."""
    if hw.strategy != "auto":
        return hw.strategy
    if accelerator == "tpu":
        return "tpu"
    cfg = placement.tf_config()
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
    tf = placement.tf()
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
    tf = placement.tf()
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
        return tf.distribute.ReductionToOneDevice()  # on the first replica's device (GPU 0)
    if all_reduce == "reduce_to_cpu":
        # "CPU aggregation" (tf_cnn_benchmarks' PSCPU-style gathering): the sums are
        # taken on the host CPU and broadcast back, instead of on GPU 0.
        return tf.distribute.ReductionToOneDevice(reduce_to_device="/cpu:0")
    raise errors.UsageError(
        f"--all_reduce={all_reduce} does not apply to a single-host mirrored strategy; "
        f"accepted: {', '.join(vocab.MIRRORED_ALL_REDUCE)}"
    )


def _check_applicable(hw: HardwareConfig, accelerator: str) -> None:
    placement.check_applicable(hw, accelerator)


def build(hw: HardwareConfig):
    """Returns (strategy, Placement) for the configuration.

    Raises:
      HardwareError: the accelerator is not present or not reachable.
      UsageError: the combination of flags is not meaningful.
    """
    tf = placement.tf()
    accelerator = resolve_accelerator(hw)
    _check_applicable(hw, accelerator)
    name = resolve_strategy(hw, accelerator)
    if accelerator == "tpu" or name == "tpu":
        if name not in ("tpu", "auto") or accelerator != "tpu":
            raise errors.UsageError(
                f"--strategy={name} with --accelerator={accelerator}: TPUs run under "
                "--strategy=tpu (or auto)"
            )
        return clusters.tpu(hw)
    # Cluster strategies first: they must exist before anything initialises
    # the eager context (listing logical devices does).
    if name == "multi_worker":
        return clusters.multi_worker(hw, accelerator)
    if name == "parameter_server":
        return clusters.parameter_server(hw, accelerator)
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
        return strategy, placement.Placement(accelerator, "one_device", 1, tuple(devices), "none")
    if name == "central_storage":
        return central_storage.build(hw, accelerator, devices)
    if name == "mirrored":
        ops = _cross_device_ops(hw.all_reduce, accelerator)
        strategy = tf.distribute.MirroredStrategy(devices=devices, cross_device_ops=ops)
        return strategy, placement.Placement(
            accelerator,
            "mirrored",
            strategy.num_replicas_in_sync,
            tuple(devices),
            hw.all_reduce if ops is not None else "auto",
        )
    raise errors.unknown(
        "strategy",
        name,
        vocab.STRATEGIES,
    )
