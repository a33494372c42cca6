"""tpubench/core/hosting.py on its own: each kind of refusal as its exact one line.

The one check the launcher's sweep, `executors --check-cloud` and the study
planner all ask: an executor's declaration (the dict `tpubench-launch
executors --json` prints) against what one run needs.
"""

import pytest

from tpubench.core import hosting

VM = {
    "name": "vm",
    "providers": ["gcp"],
    "devices": ["cpu", "gpu"],
    "tpu_slices": [],
    "clusters": ["multi_worker", "parameter_server"],
    "multi_host": True,
    "one_machine_clusters": ["multi_worker"],
    "subcommands": ["train", "infer", "tune"],
}
PODS = {
    "name": "pods",
    "providers": ["gcp"],
    "devices": ["cpu", "gpu", "tpu"],
    "tpu_slices": ["single-host"],
    "tpu_generations": ["v4", "v5e"],
    "clusters": [],
    "multi_host": False,
    "one_machine_clusters": [],
    "subcommands": ["train", "infer"],
}
AWS = {**VM, "name": "aws", "providers": ["aws"], "clusters": [], "multi_host": False}
EVERYONE = [VM, PODS, AWS]


def need(machine="gcp:n1-standard-8", **kw):
    return hosting.Need(machine=machine, provider=hosting.provider_of(machine), **kw)


@pytest.mark.parametrize(
    ("declared", "asked", "line"),
    [
        (
            PODS,
            need(subcommand="tune"),
            "--executor=pods runs `train, infer`, not `tune`; --executor=vm does",
        ),
        (
            AWS,
            need(),
            "--executor=aws rents aws machines, not gcp:n1-standard-8 (gcp); "
            "--executor=pods or --executor=vm does",
        ),
        (
            VM,
            need("gcp:tpu-v4-8", device="tpu", tpu_generation="v4"),
            "--executor=vm runs on cpu, gpu, not tpu (gcp:tpu-v4-8); --executor=pods does",
        ),
        (
            PODS,
            need("gcp:tpu-v2-8", device="tpu", tpu_generation="v2"),
            "--executor=pods runs TPU v4, v5e slices, not gcp:tpu-v2-8",
        ),
        (
            PODS,
            need("gcp:tpu-v4-32", device="tpu", tpu_generation="v4", tpu_hosts=4),
            "--executor=pods runs single-host TPU slices, not gcp:tpu-v4-32 (4 hosts)",
        ),
        (
            PODS,
            need("gcp:tpu-v4-8", device="tpu", tpu_generation="v4", cluster="multi_worker"),
            "--executor=pods runs a TPU slice as one TPUStrategy run, not a multi_worker cluster",
        ),
        (
            PODS,
            need(cluster="multi_worker"),
            "--executor=pods runs no clusters across machines, "
            "not multi_worker; --executor=vm does",
        ),
        (
            VM,
            need(cluster="parameter_server", one_machine=True),
            "--executor=vm runs "
            "multi_worker clusters on one machine (one_machine: true), not parameter_server",
        ),
    ],
)
def test_each_refusal_is_one_line_naming_the_value_and_who_hosts_it(declared, asked, line):
    said = hosting.refusal(declared, asked, EVERYONE)
    assert said == line and "\n" not in said


@pytest.mark.parametrize(
    ("declared", "asked"),
    [
        (VM, need("gcp:n1-standard-8+1xgcp:t4", device="gpu", cluster="multi_worker")),
        (VM, need(cluster="multi_worker", one_machine=True)),
        (PODS, need("gcp:tpu-v5e-8", device="tpu", tpu_generation="v5e", subcommand="infer")),
        (AWS, need("aws:g4dn.xlarge", device="gpu", subcommand="tune")),
        (AWS, need("", device="cpu")),  # no machine named: no provider to refuse
    ],
)
def test_what_an_executor_declares_it_hosts(declared, asked):
    assert hosting.refusal(declared, asked, EVERYONE) is None


def test_no_other_executor_hosts_it_and_the_line_says_none():
    said = hosting.refusal(VM, need(subcommand="data_bench"), [VM, AWS])
    assert said == "--executor=vm runs `train, infer, tune`, not `data_bench`"


def test_provider_of_names_whose_machine_it_is():
    assert hosting.provider_of("gcp:n1-standard-8+1xgcp:t4") == "gcp"
    assert hosting.provider_of("AWS:g4dn.xlarge") == "aws"
    assert hosting.provider_of("n1-standard-8") is None
