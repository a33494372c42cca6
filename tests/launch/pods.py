"""The pods a controller would make from a rendered JobSet or TFJob, run as local processes.

What each pod gets is worked out here the way the controllers do it, from
the manifest alone:
- JobSet (v1alpha2) + the Job controller: one Indexed Job per replicatedJob
  replica, pod hostname `<jobset>-<rjob>-<jobIndex>-<podIndex>` under the
  subdomain `<jobset>`, the completion index in the pod annotation
  `batch.kubernetes.io/job-completion-index`, and `JOB_COMPLETION_INDEX`
  appended to the container's env unless it defines it itself.
- TFJob (Training Operator 1.x): pods `<name>-<type>-<i>` behind Services of
  the same name, TF_CONFIG (cluster of `<svc>.<namespace>.svc:<tfjob-port>`,
  task, `"environment": "cloud"`) added to the container named `tensorflow`.
Env values are expanded as the kubelet does: `$(VAR)` only from variables
defined earlier in the list, `$$` for a literal `$`, unknown references kept.

Then every pod's address (`host:port`) is mapped to a free localhost port,
the results bucket to a local directory, and `python3` to this interpreter.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import socket
import subprocess
import sys
import time

INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
_REF = re.compile(r"\$\$|\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")


@dataclasses.dataclass
class Pod:
    host: str  # the DNS name other pods reach it by
    role: str  # chief | worker | ps
    index: int
    argv: list[str]
    env: dict[str, str]


def expand(value: str, env: dict[str, str]) -> str:
    def sub(m):
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))

    return _REF.sub(sub, value)


def container_env(container: dict, annotations: dict[str, str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = expand(var["value"], env)
            continue
        path = var["valueFrom"]["fieldRef"]["fieldPath"]
        m = re.fullmatch(r"metadata\.annotations\['([^']+)'\]", path)
        assert m, f"unsupported fieldRef {path}"
        env[var["name"]] = annotations[m.group(1)]
    return env


def jobset_pods(js: dict) -> list[Pod]:
    name = js["metadata"]["name"]
    subdomain = js["spec"].get("network", {}).get("subdomain") or name
    pods = []
    for rjob in js["spec"]["replicatedJobs"]:
        job = rjob["template"]["spec"]
        assert job.get("completionMode") == "Indexed"
        for job_index in range(rjob.get("replicas", 1)):
            for i in range(job.get("completions", 1)):
                (c,) = job["template"]["spec"]["containers"]
                env = container_env(c, {INDEX_ANNOTATION: str(i)})
                env.setdefault("JOB_COMPLETION_INDEX", str(i))  # the Job controller's, last
                host = f"{name}-{rjob['name']}-{job_index}-{i}.{subdomain}"
                pods.append(Pod(host, rjob["name"], i, c["command"] + c["args"], env))
    return pods


def tfjob_pods(tj: dict, namespace: str = "default") -> list[Pod]:
    name = tj["metadata"]["name"]
    specs = tj["spec"]["tfReplicaSpecs"]

    def port(spec):
        for c in spec["template"]["spec"]["containers"]:
            if c["name"] == "tensorflow":
                for p in c.get("ports", []):
                    if p.get("name") == "tfjob-port":
                        return p["containerPort"]
        return 2222

    cluster = {
        rtype.lower(): [
            f"{name}-{rtype.lower()}-{i}.{namespace}.svc:{port(spec)}"
            for i in range(spec["replicas"])
        ]
        for rtype, spec in specs.items()
    }
    pods = []
    for rtype, spec in specs.items():
        (c,) = [c for c in spec["template"]["spec"]["containers"] if c["name"] == "tensorflow"]
        for i in range(spec["replicas"]):
            env = container_env(c, {})
            task = {"type": rtype.lower(), "index": i}
            env["TF_CONFIG"] = json.dumps(
                {"cluster": cluster, "task": task, "environment": "cloud"}
            )
            host = f"{name}-{rtype.lower()}-{i}.{namespace}.svc"
            pods.append(Pod(host, rtype.lower(), i, c["command"] + c["args"], env))
    return pods


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("localhost", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def localize(pods: list[Pod], port: int, bucket: str, local_dir: str) -> list[Pod]:
    """Pods with addresses on localhost ports, BUCKET as LOCAL_DIR and this Python."""
    ports = _free_ports(len(pods))
    addresses = {f"{p.host}:{port}": f"localhost:{n}" for p, n in zip(pods, ports, strict=True)}

    def local(text: str) -> str:
        for remote, here in addresses.items():
            text = text.replace(f'"{remote}"', f'"{here}"')
        return text.replace(bucket, local_dir)

    out = []
    for p in pods:
        argv = [sys.executable if a == "python3" else local(a) for a in p.argv]
        env = {k: local(v) for k, v in p.env.items()}
        out.append(Pod(f"localhost:{ports[len(out)]}", p.role, p.index, argv, env))
    return out


def run(pods: list[Pod], trainers: list[int], log_dir: str, timeout: float) -> list[int | None]:
    """Starts every pod; waits for the TRAINERS (indexes into PODS); stops the rest.

    Returns each pod's exit code (None: stopped after the trainers finished).
    """
    os.makedirs(log_dir, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    procs = []
    for p in pods:
        log = open(os.path.join(log_dir, f"{p.role}{p.index}.log"), "w")  # noqa: SIM115
        procs.append(
            subprocess.Popen(
                p.argv,
                env={**base, **p.env},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        log.close()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            codes = [q.poll() for q in procs]
            if all(codes[i] is not None for i in trainers) or any(
                c not in (None, 0) for c in codes
            ):
                break
            time.sleep(0.2)
        return [q.poll() for q in procs]
    finally:
        for q in procs:
            if q.poll() is None:
                q.kill()
                q.wait()
