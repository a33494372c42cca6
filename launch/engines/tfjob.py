"""`--engine=tfjob`: one Kubeflow TFJob; the Training Operator gives each pod its TF_CONFIG."""

from __future__ import annotations

from tpubench_launch import engines, tfjob


@engines.REGISTRY.register
class TFJob(engines.Engine):
    name = "tfjob"
    resource = "tfjobs"

    def check(self, r: engines.Request) -> None:
        super().check(r)
        if r.tpu:
            raise tfjob.refuse_tpu(r.tpu)

    def manifests(self, r: engines.Request) -> list[dict]:
        return tfjob.manifests(*r.cluster, r.ttl, size=r.size)
