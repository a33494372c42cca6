"""The executor and engine registries: a new one is one module, and every list of names sees it."""

from __future__ import annotations

import pathlib

import pytest
import smoke

from tpubench.testing import registries
from tpubench_launch import cli, engines, executors
from tpubench_launch.executors import base

ROOT = pathlib.Path(__file__).resolve().parents[2]
SWEEP = "name: tq\ngrid:\n  machines: [gcp:n1-standard-8]\nflags: {model: mnist_mlp}\n"


class _Toy(base.Executor):
    name = "toy"

    def plans(self, sweep, todo, settings, log_dir):
        return [f"plan-{c.id}" for c in todo]

    def preview_title(self, pricing, settings):
        return f"toy preview ({pricing}):"

    def dry_run_lines(self, config, plan, results_dir):
        return [f"toy would run {plan}"]

    def execute(self, sweep, todo, plans, argv, log_dir, out):
        return [(c, 0, "toy") for c in todo]


class _ToyEngine(engines.Engine):
    name = "toyq"
    resource = "toyqs"

    def manifests(self, r):
        return [{"apiVersion": "toy/v1", "kind": "Toy", "metadata": {"name": r.name}}]


@pytest.fixture
def toys():
    with registries.added(executors.REGISTRY, _Toy), registries.added(engines.REGISTRY, _ToyEngine):
        yield


def test_the_shipped_executors_and_engines_are_registered():
    assert executors.REGISTRY.names() == ("aws_batch", "gce", "gke", "local", "skypilot", "tpu-vm")
    assert engines.REGISTRY.names() == ("job", "jobset", "tfjob", "trainjob")


def test_a_registered_executor_is_an_accepted_value(toys, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(SWEEP)
    verbs = cli.parser()._subparsers._group_actions[0].choices  # noqa: SLF001
    sweep_help = " ".join(verbs["sweep"].format_help().split())
    assert (
        "--executor EXECUTOR local (default), aws_batch, gce, gke, skypilot, toy or tpu-vm"
        in sweep_help
    )
    assert cli.main(["sweep", "s.yaml", "--executor=nope", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "unknown --executor 'nope'" in err and "toy" in err  # the error lists it too
    assert cli.main(["sweep", "s.yaml", "--executor=toy", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "toy preview (on_demand):" in out
    (line,) = [x for x in out.splitlines() if x.startswith("toy would run")]
    assert line.startswith("toy would run plan-")  # its plan, made before the dry run printed
    assert "tpubench-launch sweep --executor=toy" in smoke.expected()  # needs a smoke test


def test_a_registered_engine_is_an_accepted_value(toys, capsys):
    argv = ["gke", "--name=sm", "--image=img:1", "--dry-run", "--", "--results_dir=gs://b/r"]
    assert cli.main([*argv[:3], "--engine=toyq", *argv[3:]]) == 0
    out = capsys.readouterr().out
    assert "kind: Toy" in out and "name: sm" in out
    with pytest.raises(SystemExit) as e:
        cli.main([*argv[:3], "--engine=nope", *argv[3:]])
    assert e.value.code == 2
    assert "'toyq'" in capsys.readouterr().err  # argparse's choices list it
    assert "tpubench-launch gke --engine=toyq" in smoke.expected()


def test_an_engine_without_restarts_refuses_max_restarts(toys, capsys):
    argv = ["gke", "--name=sm", "--image=img:1", "--engine=toyq", "--max-restarts=2", "--dry-run"]
    assert cli.main([*argv, "--", "--results_dir=gs://b/r"]) == 2
    assert "--max-restarts=2 needs --engine=jobset" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "registry"), [("--executor", executors.REGISTRY), ("--engine", engines.REGISTRY)]
)
def test_docs_cli_md_names_every_executor_and_engine(flag, registry):
    text = (ROOT / "docs" / "cli.md").read_text()
    section = text.split("### `tpubench-launch ")[1:]
    (row,) = [x for s in section for x in s.splitlines() if x.startswith(f"| `{flag}` |")]
    missing = [n for n in registry.names() if f"`{n}`" not in row]
    assert not missing, f"docs/cli.md's {flag} row does not name {missing}"


# An executor nobody in this tree wrote: one file in an installed package, registered
# through the `tpubench_launch.executors` entry-point group, nothing else edited.
AWS_BATCH = """
from tpubench_launch import executors
from tpubench_launch.executors import base


@executors.REGISTRY.register
class AwsBatch(base.Executor):
    name = "aws-batch"
    title = "AWS Batch"
    devices = ("cpu", "gpu")
    subcommands = ("train",)

    def plans(self, sweep, todo, settings, log_dir):
        return [f"aws batch submit-job --job-name={c.id}" for c in todo]

    def preview_title(self, pricing, settings):
        return f"AWS Batch preview ({pricing}):"

    def dry_run_lines(self, config, plan, results_dir):
        return [plan]

    def execute(self, sweep, todo, plans, argv, log_dir, out):
        return [(c, 0, "submitted") for c in todo]
"""


def test_an_installed_executor_in_one_file_is_listed_and_usable(tmp_path):
    import json
    import os
    import subprocess
    import sys

    site = tmp_path / "site"
    site.mkdir()
    (site / "acme_batch.py").write_text(AWS_BATCH)
    info = site / "acme_batch-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-batch\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[tpubench_launch.executors]\naws-batch = acme_batch\n")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path}
    launch = [sys.executable, "-m", "tpubench_launch.main"]

    def run(*args):
        return subprocess.run(
            [*launch, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
        )

    listed = run("executors", "--json")
    assert listed.returncode == 0, listed.stderr
    (batch,) = [e for e in json.loads(listed.stdout) if e["name"] == "aws-batch"]
    assert batch["devices"] == ["cpu", "gpu"] and batch["subcommands"] == ["train"]
    assert batch["title"] == "AWS Batch" and batch["rents"] is False
    assert {"gce", "gke", "local", "skypilot", "tpu-vm"} <= {
        e["name"] for e in json.loads(listed.stdout)
    }
    (tmp_path / "s.yaml").write_text(SWEEP)
    dry = run("sweep", "s.yaml", "--executor=aws-batch", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "AWS Batch preview (on_demand):" in dry.stdout
    (line,) = [x for x in dry.stdout.splitlines() if x.startswith("aws batch submit-job")]
    assert line.startswith("aws batch submit-job --job-name=cfg-")
    helped = " ".join(run("sweep", "--help").stdout.split())
    assert "aws-batch" in helped


def test_executors_json_publishes_what_each_executor_hosts(capsys):
    import json

    assert cli.main(["executors", "--json"]) == 0
    found = {e["name"]: e for e in json.loads(capsys.readouterr().out)}
    assert found["gce"]["clusters"] == ["multi_worker", "parameter_server"]
    assert found["gce"]["multi_host"] and found["gce"]["devices"] == ["cpu", "gpu"]
    assert found["tpu-vm"]["tpu_slices"] == ["single-host", "multi-host"]
    # The generations whose slices each runs: GKE has node pools for v4 and later only.
    assert found["tpu-vm"]["tpu_generations"] == ["v2", "v3", "v4", "v5p", "v5e", "v6e"]
    assert found["gke"]["tpu_generations"] == ["v4", "v5e", "v5p", "v6e"]
    assert found["gce"]["tpu_generations"] == []  # it runs no TPU
    assert found["gke"]["required"] == ["bucket", "image"]
    assert found["gke"]["own_settings"] == ["image", "namespace", "queue"]
    assert found["gke"]["subcommands"] == ["train", "infer"]
    assert found["skypilot"]["clusters"] == ["multi_worker"] and found["skypilot"]["multi_host"]
    assert found["gce"]["one_machine_clusters"] == ["multi_worker", "parameter_server"]
    assert found["skypilot"]["one_machine_clusters"] == []
    assert found["local"]["rents"] is False and found["skypilot"]["rents"] is True


def test_executors_json_publishes_the_cloud_keys_each_reads_and_which_choose_code(capsys):
    import json

    from tpubench_launch import trust
    from tpubench_launch.executors import gcp

    assert cli.main(["executors", "--json"]) == 0
    found = {e["name"]: e for e in json.loads(capsys.readouterr().out)}
    assert found["gke"]["settings"] == list(gcp.SETTINGS)
    assert found["gce"]["settings"] == [
        k for k in gcp.SETTINGS if k not in found["gke"]["own_settings"]
    ]
    assert found["local"]["settings"] == [] and found["local"]["code_keys"] == {}
    assert found["gke"]["code_keys"] == trust.CODE_SETTINGS
    assert "image" not in found["tpu-vm"]["code_keys"] and "package" in found["tpu-vm"]["code_keys"]
    assert found["gce"]["example"] == gcp.EXAMPLE and found["skypilot"]["required"] == ["bucket"]
    assert all("problem" not in e for e in found.values())  # only with --check-cloud


def test_executors_check_cloud_says_each_executor_s_first_refused_value(tmp_path, capsys):
    import json

    bad = tmp_path / "c.yaml"
    bad.write_text("project: proj-42\nzone: nowhere\nmachines: {a: gcp:n1-standard-8}\n")
    args = ["executors", "--json", f"--check-cloud={bad}", "--prefix=--cloud=c.yaml: "]
    assert cli.main(args) == 0
    found = {e["name"]: e for e in json.loads(capsys.readouterr().out)}
    said = "--cloud=c.yaml: cloud.zone='nowhere' is refused; accepted: a zone such as us-central1-a"
    assert found["gce"]["problem"] == said and found["gke"]["problem"] == said
    assert found["local"]["problem"] is None  # it reads no cloud settings
    assert cli.main(["executors", f"--check-cloud={bad}"]) == 2  # as text: the one line
    assert capsys.readouterr().err.strip().endswith(f"error: {bad}: {said.split(': ', 1)[1]}")
    good = tmp_path / "g.yaml"
    good.write_text("zone: us-central1-a\n")
    assert cli.main(["executors", "--json", f"--check-cloud={good}"]) == 0
    assert {e["problem"] for e in json.loads(capsys.readouterr().out)} == {None}


@pytest.mark.parametrize(
    "text,expected",
    [
        (None, "cannot read cloud file {path}: No such file or directory"),
        ("a: [\n", "{path} is not valid YAML at line 2"),
        ("- a\n", "{path}: a mapping of cloud settings, not a list"),
    ],
)
def test_executors_check_cloud_refuses_a_bad_file_in_one_line(tmp_path, capsys, text, expected):
    path = tmp_path / "c.yaml"
    if text is not None:
        path.write_text(text)
    assert cli.main(["executors", "--json", f"--check-cloud={path}"]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert captured.out == "" and line.startswith("tpubench-launch executors: error: ")
    assert expected.format(path=path) in line, line


def test_executors_lines_name_the_tpu_generations(capsys):
    assert cli.main(["executors"]) == 0
    lines = {x.split(":", 1)[0]: x for x in capsys.readouterr().out.splitlines()}
    assert lines["gke"].startswith(
        "gke: cpu, gpu, tpu (single-host TPU slices: v4, v5e, v5p, v6e); clusters: none;"
    )
    assert lines["gce"].startswith("gce: cpu, gpu; clusters:")
