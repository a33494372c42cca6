"""One registry type: executors, engines, scenarios and models are each a core Registry,
a new kind is one Registry over a package and an entry-point group, and a test adds a
plug-in with tpubench.testing.registries.added, never by patching private state."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tpubench.core import errors, registry
from tpubench.model import registry as models
from tpubench.run.infer import scenarios
from tpubench.testing import registries
from tpubench_launch import engines, executors


def test_executors_engines_scenarios_and_models_are_one_registry_type():
    kinds = (executors.REGISTRY, engines.REGISTRY, scenarios.REGISTRY, models.MODELS)
    assert all(type(r) is registry.Registry for r in kinds)
    assert [r.kind for r in kinds] == ["--executor", "--engine", "--scenario", "model"]


def _kind(tmp_path, monkeypatch, modules: dict, entry_points: str = ""):
    """A new kind of plug-in: package `toykind` with MODULES, and an installed package
    (a dist-info on sys.path, not in the working directory) declaring ENTRY_POINTS."""
    pkg = tmp_path / "site" / "toykind"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "from tpubench.core import registry\n"
        "REGISTRY = registry.Registry('--toy', package=__name__, group='toykind',\n"
        "    make=lambda cls: cls(), plugin=lambda o: isinstance(o, type),\n"
        "    hint='; a new one is a module of toykind')\n"
    )
    for name, text in modules.items():
        (pkg / f"{name}.py").write_text(text)
    if entry_points:
        info = tmp_path / "site" / "acme_toys-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-toys\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[toykind]\n{entry_points}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.chdir(tmp_path)  # the installation lies elsewhere than the working directory
    for name in [m for m in sys.modules if m.split(".")[0] in ("toykind", "acme_toy")]:
        monkeypatch.delitem(sys.modules, name)
    import toykind

    return toykind.REGISTRY


TOY = "import toykind\n@toykind.REGISTRY.register\nclass {cls}:\n    name = {name!r}\n"


def test_a_new_kind_finds_its_package_modules_and_installed_entry_points(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    (site / "acme_toy.py").write_text(TOY.format(cls="Far", name="far"))
    reg = _kind(
        tmp_path,
        monkeypatch,
        {"near": TOY.format(cls="Near", name="near"), "also": TOY.format(cls="A", name="also")},
        "far = acme_toy",
    )
    assert reg.known() == {"far"}  # the entry point's name from metadata, nothing imported
    assert "acme_toy" not in sys.modules
    assert reg.names() == ("also", "far", "near")
    assert type(reg.get("far")).__name__ == "Far" and reg.entry_package("far") == "acme-toys 1.0"
    assert reg.help_text("near") == "near (default), also or far"


def test_an_unknown_name_is_one_line_naming_the_accepted_ones_and_where_they_come_from(
    tmp_path, monkeypatch
):
    reg = _kind(tmp_path, monkeypatch, {"near": TOY.format(cls="Near", name="near")})
    with pytest.raises(errors.UsageError) as e:
        reg.get("neer")
    assert str(e.value) == (
        "unknown --toy 'neer' (did you mean near?); accepted: near; "
        "a new one is a module of toykind"
    )


def test_an_entry_point_that_fails_or_registers_nothing_is_one_line(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    (site / "acme_toy.py").write_text("import no_such_dependency\n")
    (site / "acme_empty.py").write_text("")
    reg = _kind(tmp_path, monkeypatch, {}, "bad = acme_toy\nempty = acme_empty")
    with pytest.raises(errors.UsageError) as e:
        reg.get("bad")
    assert str(e.value).startswith("--toy 'bad' of the installed package acme-toys 1.0")
    assert "failed to import: ModuleNotFoundError" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(errors.UsageError, match="registered no --toy of that name"):
        reg.get("empty")


def test_two_plug_ins_under_one_name_are_refused():
    shipped = type(executors.REGISTRY.get("local"))

    class Other(shipped.__base__):
        name = "local"

    with pytest.raises(ValueError, match="--executor 'local' registered twice"):
        executors.REGISTRY.register(Other)
    assert type(executors.REGISTRY.get("local")) is shipped


class _Toy:
    name = "toy"


def test_added_registers_for_the_block_and_removes_after():
    shipped = executors.REGISTRY.names()
    with registries.added(executors.REGISTRY, _Toy):
        assert "toy" in executors.REGISTRY.names()
        assert type(executors.REGISTRY.get("toy")) is _Toy
    assert executors.REGISTRY.names() == shipped
    with pytest.raises(errors.UsageError, match="unknown --executor 'toy'"):
        executors.REGISTRY.get("toy")


def test_added_removes_what_a_module_loaded_in_the_block_registered(tmp_path):
    shipped = models.names()
    path = tmp_path / "my_model.py"
    path.write_text(
        "import dataclasses\nfrom tpubench.model import registry\n"
        "from tpubench_models import mnist_mlp\n"
        "registry.register(dataclasses.replace(mnist_mlp.SPEC, name='mine_for_a_test'))\n"
    )
    with registries.added(models.MODELS):
        models.load_module(str(path))
        assert models.get("mine_for_a_test").name == "mine_for_a_test"
    assert models.names() == shipped


def test_tpubench_launch_says_where_an_executor_comes_from(tmp_path):
    (tmp_path / "s.yaml").write_text("name: t\ngrid:\n  machines: [gcp:n1-standard-8]\n")
    proc = subprocess.run(
        [sys.executable, "-m", "tpubench_launch.main", "sweep", "s.yaml", "--executor=nope"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    (line,) = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "unknown --executor 'nope'" in line
    assert line.endswith(
        "a new one is a module of tpubench_launch.executors or an installed package's entry "
        "point in the group tpubench_launch.executors"
    )
