"""The executor and engine registries: a new one is one module, and every list of names sees it."""

from __future__ import annotations

import pathlib

import pytest
import smoke

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
def toys(monkeypatch):
    executors.REGISTRY.names()  # the shipped ones first, as a fresh process finds them
    engines.REGISTRY.names()
    monkeypatch.setattr(executors.REGISTRY, "_found", dict(executors.REGISTRY._found))
    monkeypatch.setattr(engines.REGISTRY, "_found", dict(engines.REGISTRY._found))
    executors.REGISTRY.register(_Toy)
    engines.REGISTRY.register(_ToyEngine)


def test_the_shipped_executors_and_engines_are_registered():
    assert executors.REGISTRY.names() == ("gce", "gke", "local", "skypilot", "tpu-vm")
    assert engines.REGISTRY.names() == ("job", "jobset", "tfjob")


def test_a_registered_executor_is_an_accepted_value(toys, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(SWEEP)
    verbs = cli.parser()._subparsers._group_actions[0].choices  # noqa: SLF001
    sweep_help = " ".join(verbs["sweep"].format_help().split())
    assert "--executor EXECUTOR local (default), gce, gke, skypilot, toy or tpu-vm" in sweep_help
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
