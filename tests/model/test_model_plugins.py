"""An installed package adds models through the `tpubench.models` entry-point group: no
--model_module on any command, its names in did-you-mean before TensorFlow loads, and a
broken plug-in is one line naming its package."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from conftest import NO_TF_CLI, one_line_error, run_cli

PLUGIN = """
import dataclasses

from tpubench.model import registry

registry.register(
    dataclasses.replace(
        registry.get("mnist_mlp"), name="digits_plugin", description="an installed package's MLP"
    )
)
"""


def _install(site, entries: str, module: str = PLUGIN) -> dict:
    """A package `acme_models` 1.2 installed in SITE (its dist-info declares ENTRIES)."""
    (site / "acme_models").mkdir(parents=True)
    (site / "acme_models" / "__init__.py").write_text(textwrap.dedent(module))
    info = site / "acme_models-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-models\nVersion: 1.2\n")
    (info / "entry_points.txt").write_text(f"[tpubench.models]\n{entries}\n")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    return {"PYTHONPATH": path}


def test_an_installed_packages_model_trains_with_no_model_module(tmp_path):
    env = _install(tmp_path / "site", "digits_plugin = acme_models")
    proc, record = run_cli(
        "train", "--model=digits_plugin", "--tiny", "--train_steps=3",
        results_dir=tmp_path / "runs", env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert record["status"] == "ok" and record["model"]["name"] == "digits_plugin"
    # A misspelt name gets the plug-in in its did-you-mean, before TensorFlow loads.
    proc = subprocess.run(
        [sys.executable, "-c", NO_TF_CLI, "train", "--model=digits_plugn"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
        cwd=tmp_path,
    )
    line = one_line_error(proc)
    assert proc.returncode == 2 and "did you mean digits_plugin" in line, line


def test_a_broken_plugin_is_one_line_naming_its_package(tmp_path):
    env = _install(tmp_path / "site", "broken_plugin = acme_models", "import no_such_dependency\n")
    runs = tmp_path / "runs"
    proc, _ = run_cli("train", "--model=broken_plugin", "--tiny", results_dir=runs, env=env)
    line = one_line_error(proc)
    assert "model 'broken_plugin' of the installed package acme-models 1.2" in line
    assert "failed to import" in line and "no_such_dependency" in line
    # A plug-in whose module registers another name says so.
    other = _install(tmp_path / "site2", "wrong_name = acme_models")
    proc, _ = run_cli("train", "--model=wrong_name", "--tiny", results_dir=runs, env=other)
    assert "registered no model of that name" in one_line_error(proc)
