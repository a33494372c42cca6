"""`--engine=jobset`: one JobSet for the whole run, restarted whole after a failure."""

from __future__ import annotations

from tpubench_launch import engines, jobset


@engines.REGISTRY.register
class JobSet(engines.Engine):
    name = "jobset"
    resource = "jobsets"

    def check(self, r: engines.Request) -> None:
        pass  # every request, --max-restarts included

    def manifests(self, r: engines.Request) -> list[dict]:
        if r.tpu:
            return jobset.tpu_manifests(
                r.name,
                r.image,
                r.tpu,
                r.tpu_topology,
                r.args,
                r.queue,
                r.ttl,
                r.max_restarts,
                size=r.size,
            )
        return jobset.cluster_manifests(*r.cluster, r.ttl, r.max_restarts, size=r.size)
