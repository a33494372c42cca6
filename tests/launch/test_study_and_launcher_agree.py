"""Every shipped study on every renting executor: the study's plan and the launcher agree.

The study planner (tpubench/study/run/remote.py) says which cells an executor can
run; the launcher (`tpubench-launch sweep`) refuses the configurations its
executor does not host.  Both ask the one check (tpubench/core/hosting.py) of
what the executor declares, so for each (study, executor) pair the cells the
plan calls runnable are exactly the cells whose sweep runs the launcher
accepts: each cell's `runs:` entry, as the study writes it, is planned by the
executor (`plans`, as a dry run does), in-process.
"""

import pytest
import yaml

from tpubench.core import errors as core_errors
from tpubench.core import safe_yaml
from tpubench.study import api
from tpubench.study.run import cells, remote
from tpubench.study.spec import spec
from tpubench_launch import executors
from tpubench_launch.executors import base
from tpubench_launch.sweep import file as sweep_file

# A machine per setup label of the shipped studies: the GPUs or vCPUs it asks for.
GCP_MACHINES = {
    "Cloud TPU": "gcp:tpu-v2-8",
    "CPU (this host)": "gcp:n1-standard-8",
}


def _machine(setup, ex) -> str:
    if ex.providers == ("aws",) and setup.device != "tpu":  # AWS machines for AWS Batch
        if (setup.devices or 0) > 1:
            return "aws:p4d.24xlarge"
        sizes = {4: "xlarge", 8: "2xlarge", 16: "4xlarge", 32: "8xlarge", 96: "metal"}  # priced
        return f"aws:g4dn.{sizes[min(n for n in sizes if n >= (setup.vcpus or 1))]}"
    if setup.machine:
        return setup.machine
    if setup.label in GCP_MACHINES:
        return GCP_MACHINES[setup.label]
    vcpus = max(8, setup.vcpus or 0)
    if setup.device in ("gpu", "auto"):
        return f"gcp:n1-standard-{vcpus}+{max(1, setup.devices or 1) + 1}xgcp:v100"
    return f"gcp:n1-standard-{vcpus}"


def _settings(ex) -> dict:
    """The executor's own example settings (its required keys, its bucket's scheme)."""
    doc = yaml.safe_load(ex.example)["cloud"]
    if "package" in ex.cloud_keys():
        doc["package_index_version"] = "1.0.0"
    return doc


def _cloud_file(tmp_path, ex, study) -> str:
    doc = _settings(ex)
    doc["machines"] = {p.label: _machine(p, ex) for part in study.parts for p in part.setups}
    path = tmp_path / f"{ex.name}-{study.name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _launcher_accepts(tmp_path, ex, entries: dict, said: dict) -> set[str]:
    """The cell ids whose `runs:` entry EX plans without refusing it (SAID: id -> its line)."""
    doc = {"name": "agree", "runs": list(entries.values()), "cloud": _settings(ex)}
    path = tmp_path / f"sweep-{ex.name}.yaml"
    path.write_text(safe_yaml.dumps(doc))  # as the study writes its sweep file
    sw = sweep_file.load(str(path), ex.name, str(tmp_path / "runs"), trust_code=True)
    settings = ex.settings(sw, dry_run=True)
    accepted = set()
    for c in sw.configs:
        try:
            ex.plans(sw, [c], settings, str(tmp_path / "logs"))
        except core_errors.UsageError as e:
            said[c.record_label] = str(e)
            continue
        accepted.add(c.record_label)
    return accepted


RENTING = [n for n in executors.REGISTRY.names() if executors.REGISTRY.get(n).rents]


@pytest.mark.parametrize("name", spec.shipped())
def test_every_study_on_every_renting_executor_plans_what_the_launcher_accepts(tmp_path, name):
    study = api.load(name, api.Options())
    disagree = []
    for executor in RENTING:
        ex = executors.REGISTRY.get(executor)
        assert isinstance(ex, base.CloudExecutor)
        cloud = remote.load_cloud(_cloud_file(tmp_path, ex, study), executor, trust_code=True)
        data = ex.scheme + "bkt/photos"  # the study's photos where its machines read them
        p = remote.make_plan(study, "smoke", executor, cloud, data, str(tmp_path / executor))
        planned = {c.id for c in p.cells if c.id not in p.blocked}
        entries = {}
        for c in cells.expand(study, "smoke"):
            if c.part.command in ("train", "infer", "tune"):  # what a sweep file holds
                try:
                    entries[c.id] = remote.run_entry(c, cloud, data)
                except core_errors.TpubenchError:
                    continue  # no entry the study could write: refused on both sides
        said = {}
        accepted = _launcher_accepts(tmp_path, ex, entries, said) if entries else set()
        for cid in sorted(planned ^ accepted):
            side = "planned, launcher refuses" if cid in planned else "launcher runs, not planned"
            disagree.append(f"{executor}: {cid}: {side} ({p.blocked.get(cid) or said.get(cid)})")
    assert disagree == [], "\n".join(disagree)
