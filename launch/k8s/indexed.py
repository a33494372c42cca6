"""Pods of an Indexed Job: their hostnames and a TF_CONFIG that reads the pod's index.

Both the JobSet and the TrainJob engine (whose runtime is a JobSet
template) run one pod per task in an Indexed Job. JobSet's headless
service names every pod `NAME-ROLE-JOBINDEX-PODINDEX.NAME`; each pod's
TF_CONFIG is the same cluster list plus its task index, which Kubernetes
fills in from the Job completion index: `$(JOB_COMPLETION_INDEX)` expands
only from a variable defined earlier in the list, so the pod defines it
first (the same downward-API field the Job controller would otherwise
append last).
"""

from __future__ import annotations

import json

from tpubench_launch import topology

COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
INDEX_VAR = "JOB_COMPLETION_INDEX"


def pod_hostname(name: str, role: str, pod_index: int, job_index: int = 0) -> str:
    """The hostname JobSet gives a pod: <jobset>-<replicatedJob>-<jobIndex>-<podIndex>."""
    return f"{name}-{role}-{job_index}-{pod_index}"


def index_env() -> dict:
    """The pod's Job completion index as $(JOB_COMPLETION_INDEX): it must come before TF_CONFIG."""
    path = f"metadata.annotations['{COMPLETION_INDEX_ANNOTATION}']"
    return {"name": INDEX_VAR, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def tf_config_template(tasks: list[topology.Task], role: str) -> str:
    """TF_CONFIG for every pod of ROLE, its index left to Kubernetes' $(VAR) expansion."""
    marker = -7  # an index no task has; replaced by the variable reference
    text = json.dumps(
        {"cluster": topology.cluster_spec(tasks), "task": {"type": role, "index": marker}},
        separators=(",", ":"),
    )
    return text.replace(f'"index":{marker}', f'"index":$({INDEX_VAR})')
