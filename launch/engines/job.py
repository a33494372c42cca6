"""`--engine=job`: plain Kubernetes Jobs (and headless Services for a cluster's tasks)."""

from __future__ import annotations

from tpubench_launch import engines, gke


@engines.REGISTRY.register
class Job(engines.Engine):
    name = "job"
    resource = "jobs"

    def manifests(self, r: engines.Request) -> list[dict]:
        if r.tpu:
            return gke.tpu_manifests(
                r.name, r.image, r.tpu, r.tpu_topology, r.args, r.queue, r.size
            )
        return gke.gpu_manifests(*r.cluster, size=r.size)
