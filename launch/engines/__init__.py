"""How `tpubench-launch gke` runs on Kubernetes: one module per `--engine`, each an `Engine`.

Every engine has the same shape: `check(request)` refuses what it cannot
run before anything is built, `manifests(request)` returns the objects to
apply, `resource` is what `kubectl get` calls them.  A module here defines
its engine class decorated with `REGISTRY.register`; the `--engine` choices
and help and the smoke layer's list of commands read `REGISTRY.names()`.
A new engine is one module in this package (and its test).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from tpubench_launch import errors, k8s, plugins

REGISTRY = plugins.Registry(__name__, __path__, "--engine")


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
    size: k8s.PodSize | None = None

    @property
    def multi(self) -> bool:
        return self.workers > 1 or self.ps > 0

    @property
    def cluster(self) -> tuple:
        """The leading arguments of every CPU/GPU cluster builder (gke, jobset, tfjob)."""
        return (
            self.name,
            self.image,
            self.workers,
            self.ps,
            self.gpus,
            self.gpu_type,
            self.args,
            self.queue,
        )


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


def default(request: Request) -> str:
    """The engine when none is named: one JobSet for several tasks, one Job for one."""
    return "jobset" if request.multi else "job"
