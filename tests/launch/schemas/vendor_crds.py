"""Writes a trimmed JSON schema from a CustomResourceDefinition YAML (run by hand, not by tests).

    cd tests/launch/schemas
    git -C JOBSET show v0.12.0:config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml \
      | python vendor_crds.py v1alpha2 > jobset-v1alpha2.json
    git -C TRAINING_OPERATOR show v1.9.0:manifests/base/crds/kubeflow.org_tfjobs.yaml \
      | python vendor_crds.py v1 > tfjob-v1.json
    git -C TRAINER show v2.3.0:manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml \
      | python vendor_crds.py v1alpha1 > trainjob-v1alpha1.json
    git -C TRAINER show v2.3.0:manifests/base/crds/trainer.kubeflow.org_trainingruntimes.yaml \
      | python vendor_crds.py v1alpha1 > trainingruntime-v1alpha1.json

It keeps the served version's openAPIV3Schema as the CRD has it, less every
string `description` (prose, and most of the bytes).  Nothing is added here:
strictness (`additionalProperties: false`) is added when the tests load it,
so the file stays what the project published.
"""

from __future__ import annotations

import json
import sys

import yaml


def trim(node):
    if isinstance(node, dict):
        return {
            k: trim(v) for k, v in node.items() if not (k == "description" and isinstance(v, str))
        }
    if isinstance(node, list):
        return [trim(v) for v in node]
    return node


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: vendor_crds.py VERSION < CRD.yaml > SCHEMA.json", file=sys.stderr)
        return 2
    crd = next(d for d in yaml.safe_load_all(sys.stdin) if d)
    served = {v["name"]: v for v in crd["spec"]["versions"]}
    if argv[1] not in served:
        print(f"version {argv[1]!r} not in the CRD; it has {sorted(served)}", file=sys.stderr)
        return 2
    schema = trim(served[argv[1]]["schema"]["openAPIV3Schema"])
    out = {
        "group": crd["spec"]["group"],
        "kind": crd["spec"]["names"]["kind"],
        "version": argv[1],
        "schema": schema,
    }
    json.dump(out, sys.stdout, sort_keys=True, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
