"""Strategies that span processes: multi-worker, parameter server and TPU.

Each reads its cluster (TF_CONFIG or the TPU resolver) and returns
(strategy, Placement); worker and ps tasks of a parameter-server cluster
serve (`serve`) instead of training.
"""

from __future__ import annotations

import os
import textwrap
import time

from tpubench.core import errors
from tpubench.core.config import HardwareConfig
from tpubench.hardware import placement


def multi_worker(hw: HardwareConfig, accelerator: str):
    tf = placement.tf()
    cfg = placement.tf_config()
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
    return strategy, placement.Placement(
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


def parameter_server(hw: HardwareConfig, accelerator: str):
    tf = placement.tf()
    cfg = placement.tf_config()
    if not cfg or not cfg["cluster"].get("ps"):
        raise errors.UsageError(
            "--strategy=parameter_server needs TF_CONFIG with 'ps' and 'worker' tasks "
            "(`tpubench-launch local-cluster --ps=1` writes it for you)"
        )
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    workers = cfg["cluster"].get("worker", [])
    return strategy, placement.Placement(
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
    cfg = placement.tf_config()
    if not cfg or not cfg["cluster"].get("ps") or hw.strategy not in ("auto", "parameter_server"):
        return None
    task = cfg.get("task", {})
    if task.get("type") in ("worker", "ps"):
        return task["type"], int(task.get("index", 0))
    return None


def serve(role: tuple[str, int]) -> None:
    """Runs this worker/ps task's tf.distribute.Server until the process ends."""
    tf = placement.tf()
    cfg = placement.tf_config()
    cluster = tf.train.ClusterSpec(cfg["cluster"])
    workers = len(cfg["cluster"].get("worker", []))
    # Worker servers need inter-op threads > number of workers or runs can
    # hang (seen with TF 2.20-2.21).
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


def no_tpu_message(name: str, cause: str) -> str:
    """The one line for a TPU that did not answer: TensorFlow's reason cut at a word, and
    a next step that is not the one the user already took."""
    why = textwrap.shorten(cause, 200, placeholder=" …")
    if name == "local":
        return (
            f"no TPU on this host with --tpu=local ({why}); run on a TPU VM, or pass "
            "--accelerator=cpu or gpu"
        )
    return (
        f"no TPU reachable at --tpu={name} ({why}); on a TPU VM use --tpu=local, "
        "elsewhere --accelerator=cpu or gpu"
    )


def tpu(hw: HardwareConfig):
    tf = placement.tf()
    name = hw.tpu or os.environ.get("TPU_NAME") or ("local" if placement.on_tpu_vm() else None)
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
        raise errors.HardwareError(no_tpu_message(name, first)) from None
    strategy = tf.distribute.TPUStrategy(resolver)
    return strategy, placement.Placement(
        accelerator="tpu",
        strategy="tpu",
        num_replicas=strategy.num_replicas_in_sync,
        devices=tuple(d.name for d in tf.config.list_logical_devices("TPU")),
        all_reduce="tpu",
        num_workers=max(1, len(resolver.cluster_spec().as_dict().get("worker", []))),
        # On a multi-host pod slice every host runs this program (gcloud
        # --worker=all); only host 0 writes records, metrics and checkpoints.
        is_chief=tpu_host_index() == 0,
    )


def tpu_host_index() -> int:
    """This host's index in a TPU pod slice (0 on single-host TPUs and elsewhere)."""
    for var in ("CLOUD_TPU_TASK_ID", "TPU_WORKER_ID"):
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    return 0
