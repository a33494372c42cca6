"""Class A of issue 58: every process tpubench and tpubench-launch start imports only from
the installation, and a plug-in named by a file is code that file chooses.

Each test runs the real commands (the installed `tpubench` and `tpubench-launch`
scripts, as a user types them) in a folder holding planted code: a folder named
like the package, modules named like standard ones (`json.py`, `venv/`,
`ensurepip.py`) and a distribution whose entry points declare a model and an
executor.  Each planted module writes a PLANTED-* file when imported; none may
appear, and each command does what it does in an empty folder.
"""

from __future__ import annotations

import ast
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import textwrap

import pytest
from conftest import NO_TF_CLI, old_record, one_line_error

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPTS = pathlib.Path(sys.executable).parent  # the installed console scripts
DOUBLES = ROOT / "tests" / "launch" / "bin"  # gcloud and kubectl test doubles
MARK = "import os\nopen(os.path.join({here!r}, 'PLANTED-' + __name__), 'w').close()\n"
# Modules a Python child would import from its working directory were it on sys.path.
PLANTED_MODULES = (
    "tpubench/__init__.py",
    "tpubench/__main__.py",
    "tpubench_launch/__init__.py",
    "json.py",
    "ensurepip.py",
    "venv/__init__.py",
    "venv/__main__.py",
)


def _plant_distribution(here: pathlib.Path) -> None:
    """acme-planted 1.0 in HERE: a model and an executor whose module marks its import."""
    info = here / "acme_planted-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-planted\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[tpubench.models]\nplanted_net = acme_planted\n\n"
        "[tpubench_launch.executors]\nplanted = acme_planted\n"
    )
    (here / "acme_planted.py").write_text(MARK.format(here=str(here)))


def _planted(tmp_path, modules=PLANTED_MODULES) -> pathlib.Path:
    here = tmp_path / "downloaded"
    for rel in modules:
        path = here / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(MARK.format(here=str(here)))
    _plant_distribution(here)
    return here


def _marks(here: pathlib.Path) -> list[str]:
    return sorted(p.name for p in here.rglob("PLANTED-*"))


def _script(name: str) -> str:
    path = SCRIPTS / name
    if not path.exists():
        pytest.skip(f"{name} is not installed beside {sys.executable}")
    return str(path)


def _run(argv, cwd, timeout=180, **env):
    full = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    full.update(env)
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=full, timeout=timeout)


def _record(here: pathlib.Path, flags: dict) -> str:
    return old_record(here, flags).name


# An unknown machine ends the rerun's run before TensorFlow loads: its own one line.
QUICK = {"model": "mnist_mlp", "tiny": True, "machine": ["gcp:no-such-machine"]}


def test_rerun_in_a_folder_of_planted_code_runs_only_the_installed_tpubench(tmp_path):
    here = _planted(tmp_path)
    proc = _run([_script("tpubench"), "rerun", _record(here, QUICK)], here)
    assert _marks(here) == [], proc.stderr
    assert proc.returncode == 2, proc.stderr
    assert "tpubench rerun: tpubench train " in proc.stderr  # the flags were read, then run
    assert "tpubench train: error: " in proc.stderr and "no-such-machine" in proc.stderr


def test_launcher_runs_in_a_folder_of_planted_code_import_none_of_it(tmp_path):
    """A local dry run asks tpubench for its flags and prices (two children); a GKE run's
    waiter polls the test double's Job: each a Python child of the launcher."""
    here = _planted(tmp_path)
    (here / "s.yaml").write_text("grid:\n  models: [mnist_mlp]\nflags: {train_steps: 5}\n")
    launch = _script("tpubench-launch")
    proc = _run([launch, "sweep", "s.yaml", "--executor=local", "--dry-run"], here)
    assert proc.returncode == 0, proc.stderr
    assert "--model=mnist_mlp" in proc.stdout
    (here / "gk.yaml").write_text(
        "runs:\n  - {label: mlp, machine: gcp:n1-standard-8, flags: {model: mnist_mlp}}\n"
        "cloud: {bucket: gs://bkt/tb, image: 'img:1'}\n"
    )
    proc = _run(
        [launch, "sweep", "gk.yaml", "--executor=gke", "--trust-code"],
        here,
        PATH=f"{DOUBLES}:{os.environ['PATH']}",
        GCLOUD_DOUBLE_LOG=str(tmp_path / "gcloud.jsonl"),
        KUBECTL_DOUBLE_LOG=str(tmp_path / "kubectl.jsonl"),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "-P -m tpubench_launch.k8s.wait" in proc.stdout  # the waiter's line, then its run
    assert _marks(here) == []


def _wrapper(path: pathlib.Path) -> None:
    """PATH runs this test's Python (tpubench installed) with the arguments it is given."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    path.chmod(0o755)


def test_what_a_vm_or_a_pod_runs_imports_only_its_installation(tmp_path):
    """The launcher's VM script, pod command and node snippets, run as written by a real
    Python in a home holding planted code (a stand-in VM home or image WORKDIR)."""
    from tpubench_launch import package
    from tpubench_launch.executors import cloud, skypilot
    from tpubench_launch.k8s import objects

    home = _planted(tmp_path)
    _wrapper(home / "bin" / "python3")
    _wrapper(home / package.VENV / "bin" / "python")
    env = {"HOME": str(home), "PATH": f"{home}/bin:/usr/bin:/bin"}
    # A VM's task: the exact script (`cd ~; tpubench-venv/bin/python -I -m tpubench ...`).
    script = cloud.run_script(["--machine=gcp:n1-standard-2"], "t.log", command="prices")
    vm = _run(["bash", "-c", script], home, **env)
    assert vm.returncode == 0 and "gcp:n1-standard-2" in vm.stdout, vm.stdout + vm.stderr
    # A pod: the container's command with the image's python3 (here this Python).
    pod = objects.container("img:1", ["--machine=gcp:n1-standard-2"], subcommand="prices")
    argv = [str(home / "bin" / "python3"), *pod["command"][1:], *pod["args"]]
    done = _run(argv, home)
    assert done.returncode == 0 and "gcp:n1-standard-2" in done.stdout, done.stderr
    # A SkyPilot node's TF_CONFIG snippet (json, planted here) and the VM's install checks.
    snippet = skypilot.tf_config_script(2222) + 'printf %s "$TF_CONFIG"'
    done = _run(
        ["bash", "-c", snippet], home, **env, SKYPILOT_NODE_IPS="10.0.0.1 10.0.0.2",
        SKYPILOT_NODE_RANK="1",
    )  # fmt: skip
    assert json.loads(done.stdout)["task"] == {"type": "worker", "index": 1}, done.stderr
    install = package.install_script(package.Package("index", None, "1.0", None), "cpu")
    assert "python3 -I -c 'import ensurepip'" in install and "python3 -I -m venv " in install
    for words in (["-I", "-c", "import ensurepip"], ["-I", "-m", "venv", "--help"]):
        assert _run(["python3", *words], home, **env).returncode == 0
    assert _marks(home) == []


def test_a_plugin_in_the_working_directory_is_never_imported(tmp_path):
    """`python -c` and `python -m` put the working directory on sys.path; a distribution
    found there declares no model and no executor."""
    here = _planted(tmp_path, modules=())
    proc = _run([sys.executable, "-c", NO_TF_CLI, "train", "--model=planted_net"], here)
    line = one_line_error(proc)
    assert proc.returncode == 2 and "unknown model 'planted_net'" in line
    assert f"acme-planted 1.0 in the working directory ({here})" in line
    assert "plug-ins load only from the installation" in line
    listing = _run([sys.executable, "-m", "tpubench", "models"], here)
    assert listing.returncode == 0 and "planted_net" not in listing.stdout
    code = "from tpubench_launch import cli; raise SystemExit(cli.main(['executors']))"
    launcher = _run([sys.executable, "-c", code], here)
    assert launcher.returncode == 0 and "planted" not in launcher.stdout, launcher.stderr
    assert not (here / "runs").exists()
    assert _marks(here) == []


def _installed_plugin(tmp_path) -> dict:
    """acme-models 1.2 on PYTHONPATH (an installed package): model digits_plugin."""
    site = tmp_path / "site"
    (site / "acme_models").mkdir(parents=True)
    (site / "acme_models" / "__init__.py").write_text(
        textwrap.dedent(
            """
            import dataclasses
            from tpubench.model import registry
            registry.register(dataclasses.replace(registry.get("mnist_mlp"), name="digits_plugin"))
            """
        )
    )
    info = site / "acme_models-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-models\nVersion: 1.2\n")
    (info / "entry_points.txt").write_text("[tpubench.models]\ndigits_plugin = acme_models\n")
    paths = (str(site), os.environ.get("PYTHONPATH"))
    return {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def test_a_file_naming_a_plugin_model_needs_trust_code(tmp_path):
    """A record, a study file and a sweep file that name a model tpubench does not ship:
    refused in one line without the trust flag, warned of with it."""
    env = _installed_plugin(tmp_path)
    here = tmp_path / "w"
    here.mkdir()
    rerun = [_script("tpubench"), "rerun", _record(here, QUICK | {"model": "digits_plugin"})]
    proc = _run(rerun, here, **env)
    line = one_line_error(proc)
    assert proc.returncode == 2 and "tpubench rerun: tpubench" not in proc.stderr
    assert "names model digits_plugin, which tpubench does not ship" in line
    assert "acme_models of the installed package acme-models 1.2" in line
    assert "--trust_code" in line
    proc = _run([*rerun, "--trust_code"], here, **env)
    assert "warning: --trust_code given: the run imports and runs the plug-in acme_models" in (
        proc.stderr
    )
    assert "tpubench rerun: tpubench train " in proc.stderr and "no-such-machine" in proc.stderr

    (here / "st.yaml").write_text(
        "title: t\nform: {kind: knee}\nparts:\n  - name: p\n    models: [digits_plugin]\n"
        "    setups: [{label: one, vcpus: 1}]\n    scale: {smoke: {tiny: true}}\n"
    )
    study = [_script("tpubench"), "study", "run", "st.yaml", "--scale=smoke", "--dry-run"]
    line = one_line_error(_run(study, here, **env))
    assert line.endswith(
        "st.yaml: parts (p): models: model=digits_plugin is no model shipped with tpubench: a "
        "plug-in, whose installed package every command it runs would import and run; "
        "refused: check which package provides it, then pass --trust_code"
    )
    proc = _run([*study, "--trust_code"], here, **env)
    assert proc.returncode == 0, proc.stderr
    assert "makes the runs import and run the plug-in that provides model digits_plugin" in (
        proc.stderr
    )

    (here / "s.yaml").write_text("runs:\n  - {label: a, flags: {model: digits_plugin}}\n")
    sweep = [_script("tpubench-launch"), "sweep", "s.yaml", "--executor=local", "--dry-run"]
    line = one_line_error(_run(sweep, here, **env))
    assert "s.yaml: runs (a): flags.model=digits_plugin is no model shipped" in line
    assert line.endswith("pass --trust-code")
    proc = _run([*sweep, "--trust-code"], here, **env)
    assert proc.returncode == 0 and "--model=digits_plugin" in proc.stdout, proc.stderr
    # A name nothing here provides chooses no code: no trust asked (its run says unknown model).
    (here / "s.yaml").write_text("runs:\n  - {label: a, flags: {model: made_up_net}}\n")
    proc = _run(sweep, here, **env)
    assert proc.returncode == 0 and "--model=made_up_net" in proc.stdout, proc.stderr
    # A built-in model typed in any of them needs nothing; the user's own command line
    # choosing a plug-in is the user's choice (tests/model/test_model_plugins.py).
    assert not (here / "runs").exists() or not list((here / "runs").rglob("*.json"))


# The one module that builds a Python command line (children/command.py).
ONE_PLACE = ROOT / "tpubench" / "children" / "command.py"


# `python -m`, `python3 -I -c`, `venv/bin/python -m` in a string: a shell line that starts one.
PYTHON_IN_TEXT = re.compile(r"(^|[\s/\"'(])python[0-9.]*\s+(-[A-Za-z]+\s+)*-[mc]\b")


def _said(tree) -> set[int]:
    """The strings that only say what a command is (docstrings, argparse's prog=)."""
    said = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            said.add(id(body[0].value))
        if isinstance(node, ast.keyword) and node.arg == "prog":
            said.add(id(node.value))
    return said


def _python_starts(path: pathlib.Path) -> list[str]:
    """Lines of PATH that start a Python (argv or shell text), or load the start method
    that re-imports __main__."""
    tree = ast.parse(path.read_text())
    said = _said(tree)
    found = []
    for node in ast.walk(tree):
        text = node.value if isinstance(node, ast.Constant) else None
        if isinstance(text, str) and id(node) not in said and PYTHON_IN_TEXT.search(text):
            found.append(f"{node.lineno}: {node.value[:60]!r}")
        if isinstance(node, ast.Attribute) and node.attr == "executable":
            if isinstance(node.value, ast.Name) and node.value.id == "sys":
                found.append(f"{node.lineno}: sys.executable")
        elif isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            first = node.elts[0]
            if (
                isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and pathlib.PurePath(first.value).name.startswith("python")
            ):
                found.append(f"{node.lineno}: [{first.value!r}, ...]")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            if any(n.split(".")[0] == "multiprocessing" for n in names):
                found.append(f"{node.lineno}: multiprocessing")
    return found


def test_only_the_child_command_module_builds_a_python_command_line():
    """So `-P`/`-I` are in every one: a new child goes through children/command.py."""
    files = [p for d in ("tpubench", "launch", "models") for p in (ROOT / d).rglob("*.py")]
    wrong = [
        f"{p.relative_to(ROOT)}:{where}"
        for p in files
        if p != ONE_PLACE
        for where in _python_starts(p)
    ]
    assert wrong == [], "start Python through tpubench/children/command.py:\n" + "\n".join(wrong)
    assert _python_starts(ONE_PLACE)  # the check sees what it looks for
