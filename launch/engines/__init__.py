"""How `tpubench-launch gke` runs on Kubernetes: one module per `--engine`, each an `Engine`.

Every engine has the same shape: `check(request)` refuses what it cannot
run before anything is built, `manifests(request)` returns the objects to
apply, `pod_spec(doc)` finds the pod of a one-pod run in them, `resource`
is what `kubectl get` calls them.  A module here holds its engine whole:
the class decorated with `REGISTRY.register` and the builder of its
objects, from the shared Kubernetes pieces of `k8s/`.  The `--engine`
choices and help, the gke executor and the smoke layer's list of commands
read the registry.  A new engine is one module in this package (or an
installed package's `tpubench_launch.engines` entry point) and its test.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from tpubench_launch import errors, plugins
from tpubench_launch.k8s import sizing

REGISTRY = plugins.of_classes(__name__, "--engine")


@dataclasses.dataclass(frozen=True)
class Request:
    """One `tpubench-launch gke` run: the cluster's shape and the pods' size."""

    name: str
    image: str
    args: list  # the flags for `tpubench train`
    workers: int = 1
    ps: int = 0
    gpus: int = 0
    gpu_type: str | None = None
    tpu: str | None = None  # a single-host slice, e.g. gcp:tpu-v5e-8
    tpu_topology: str | None = None
    queue: str | None = None
    ttl: int = 86400
    max_restarts: int = 0
    size: sizing.PodSize | None = None
    run_label: str | None = None  # the record's label (default: name)
    subcommand: str = "train"  # what a one-task run's pod runs: tpubench SUBCOMMAND

    @property
    def multi(self) -> bool:
        return self.workers > 1 or self.ps > 0


class Engine:
    """A Kubernetes workload kind.  Subclasses set `name` and `resource`."""

    name: ClassVar[str]  # the --engine value
    resource: ClassVar[str]  # `kubectl get RESOURCE`

    def check(self, request: Request) -> None:
        """Refuses a request this engine cannot run (before any manifest is built)."""
        if request.max_restarts:
            raise errors.UsageError(
                f"--max-restarts={request.max_restarts} needs --engine=jobset (it is JobSet's "
                "failurePolicy.maxRestarts)"
            )

    def manifests(self, request: Request) -> list[dict]:
        """The objects `kubectl apply` gets for REQUEST."""
        raise NotImplementedError

    def pod_spec(self, doc: dict) -> dict:
        """The pod spec of a one-task run's object DOC (a sweep adds its node selector)."""
        raise NotImplementedError


def default(request: Request) -> str:
    """The engine when none is named: one JobSet for several tasks, one Job for one."""
    return "jobset" if request.multi else "job"


def for_one_pod(request: Request) -> Engine:
    """The engine of a sweep's one-pod run: a JobSet on a TPU slice (it alone holds the
    slice's node pool exclusively), a plain Job on CPUs and GPUs."""
    return REGISTRY.get("jobset" if request.tpu else default(request))
