"""Strict offline checks of rendered manifests: the real CRD schemas, kubernetes-validate,
and the rules no schema states (role names, generated names within 63 characters).

Kubernetes prunes a field its schema does not know without a word; `kubectl
--validate=strict` refuses it.  These checks refuse it too: every object
schema that lists its properties but leaves other keys open gets
`additionalProperties: false` (unless the CRD asks to preserve unknown
fields).
"""

from __future__ import annotations

import copy
import functools
import json
import pathlib
import re

import pytest

SCHEMAS = pathlib.Path(__file__).parent / "schemas"
K8S_VERSION = "1.33"  # Job successPolicy is GA from 1.33
CRDS = {
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): "jobset-v1alpha2.json",
    ("kubeflow.org/v1", "TFJob"): "tfjob-v1.json",
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"): "trainjob-v1alpha1.json",
    ("trainer.kubeflow.org/v1alpha1", "TrainingRuntime"): "trainingruntime-v1alpha1.json",
}
TRAINER_STEP = "trainer.kubeflow.org/trainjob-ancestor-step"
TFJOB_ROLES = {"Chief", "Master", "Worker", "PS", "Evaluator"}
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def strict(schema):
    """SCHEMA with `additionalProperties: false` wherever an object lists properties only."""
    s = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if (
                "properties" in node
                and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")
            ):
                node["additionalProperties"] = False
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(s)
    return s


@functools.cache
def crd_validator(api_version: str, kind: str):
    jsonschema = pytest.importorskip("jsonschema", reason="install the launch-check extra")
    doc = json.loads((SCHEMAS / CRDS[(api_version, kind)]).read_text())
    schema = strict(doc["schema"])
    cls = jsonschema.validators.validator_for({})  # the newest draft the library has
    return cls(schema)


def _k8s_validate(obj: dict) -> None:
    kv = pytest.importorskip("kubernetes_validate", reason="install the launch-check extra")
    kv.validate(obj, K8S_VERSION, strict=True)


def check_metadata(meta: dict, where: str) -> None:
    name = meta.get("name", "")
    assert len(name) <= 63 and _DNS1035.match(name), f"{where}: bad name {name!r}"
    for key, value in meta.get("labels", {}).items():
        prefix, _, short = key.rpartition("/")
        assert len(short) <= 63 and _LABEL_NAME.match(short), f"{where}: label key {key!r}"
        assert len(prefix) <= 253, f"{where}: label prefix {key!r}"
        assert len(str(value)) <= 63 and _LABEL_VALUE.match(str(value)), (
            f"{where}: label {key}={value!r}"
        )
    _k8s_validate({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})


def check(doc: dict) -> None:
    """Raises (AssertionError or a validation error) unless DOC passes every check."""
    key = (doc["apiVersion"], doc["kind"])
    where = f"{doc['kind']} {doc['metadata'].get('name')}"
    check_metadata(doc["metadata"], where)
    if key not in CRDS:
        _k8s_validate(doc)  # Job, Service: kubernetes-validate knows them
        return
    errors = sorted(crd_validator(*key).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, f"{where}: " + "; ".join(
        f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:5]
    )
    if doc["kind"] == "JobSet":
        _check_jobset_spec(doc["spec"], doc["metadata"]["name"], where)
    elif doc["kind"] == "TrainingRuntime":
        # Trainer names the JobSet (and so the pods) after the TrainJob: the run's name.
        spec = doc["spec"]["template"]["spec"]
        _check_jobset_spec(spec, doc["metadata"]["labels"]["tpubench/run"], where)
        trainer = [r for r in spec["replicatedJobs"] if r["name"] == "node"]
        assert len(trainer) == 1, f"{where}: no replicatedJob named node"
        (node,) = trainer
        assert node["template"]["metadata"]["labels"][TRAINER_STEP] == "trainer", where
        pod = node["template"]["spec"]["template"]["spec"]
        assert [c["name"] for c in pod["containers"]] == ["node"], f"{where}: container node"
    elif doc["kind"] == "TrainJob":
        ref = doc["spec"]["runtimeRef"]
        assert ref["kind"] in ("TrainingRuntime", "ClusterTrainingRuntime"), where
        assert ref.get("apiGroup", "trainer.kubeflow.org") == "trainer.kubeflow.org", where
    else:
        specs = doc["spec"]["tfReplicaSpecs"]
        assert set(specs) <= TFJOB_ROLES, f"{where}: replica types {sorted(specs)}"
        assert len(set(specs) & {"Chief", "Master"}) <= 1
        for role, spec in specs.items():
            names = [c["name"] for c in spec["template"]["spec"]["containers"]]
            assert "tensorflow" in names, f"{where}: {role} has no container named tensorflow"
            pod = f"{doc['metadata']['name']}-{role.lower()}-{spec['replicas'] - 1}"
            assert len(pod) <= 63, f"{where}: {pod!r} too long"
            _k8s_validate(
                {
                    "apiVersion": "v1",
                    "kind": "PodTemplate",
                    "metadata": {"name": "t"},
                    "template": spec["template"],
                }
            )


def _check_jobset_spec(spec: dict, name: str, where: str) -> None:
    """Each replicatedJob a valid batch/v1 Job; each pod name (plus JobSet's suffix) <= 63."""
    for rjob in spec["replicatedJobs"]:
        template = rjob["template"]
        meta = {**template.get("metadata", {}), "name": f"{name}-x"}
        _k8s_validate(
            {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": template["spec"]}
        )
        last = template["spec"].get("completions", 1) - 1
        pod = f"{name}-{rjob['name']}-{rjob.get('replicas', 1) - 1}-{last}"
        assert len(pod + "-abcde") <= 63, f"{where}: pod name {pod!r} too long"
