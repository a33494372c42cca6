"""The package's one-way rule: imports between packages only point down.

cli -> {run, study} -> {report, data, hardware, cost, model} -> storage -> core.
Inside the middle layer the order is fixed too (RANKS): model and cost
import neither of the others; hardware names accelerators as the price
catalog does; data measures the host while it reads; report reads what
all of them write.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "tpubench"

# Rank of each package: an import must go to a lower rank or stay in its package.
RANKS = {
    "core": 0,
    "storage": 1,
    "model": 2,
    "cost": 2,
    "hardware": 3,
    "data": 4,
    "report": 4,
    "run": 5,
    "study": 5,  # runs `tpubench train/infer` as processes; never imports run
    "tune": 5,
    "cli": 6,
}
LOOSE = {"__init__.py", "__main__.py"}


def _imports(path: pathlib.Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            mod = node.module
            if mod == "tpubench":
                for alias in node.names:
                    yield node.lineno, f"tpubench.{alias.name}"
            elif mod.startswith("tpubench."):
                yield node.lineno, mod
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("tpubench."):
                    yield node.lineno, alias.name


def test_top_of_the_package_holds_only_packages():
    loose = sorted(p.name for p in ROOT.glob("*.py") if p.name not in LOOSE)
    assert not loose, f"modules at the top of tpubench/: {loose}; put each in its package"
    packages = sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").exists())
    assert set(packages) <= set(RANKS) | {"testing"}, packages


def test_imports_between_packages_point_down():
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if len(rel.parts) < 2 or rel.parts[0] == "testing":
            continue
        here = rel.parts[0]
        for line, target in _imports(path):
            there = target.split(".")[1]
            if there == here or there == "testing":
                continue
            if there not in RANKS or RANKS[there] >= RANKS[here]:
                wrong.append(f"{rel}:{line} ({here}) imports {target} ({there})")
    assert not wrong, "imports that do not point down:\n" + "\n".join(wrong)


def test_no_module_over_400_lines():
    long = {
        str(p.relative_to(ROOT)): n
        for p in ROOT.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 400
    }
    assert not long, f"modules over 400 lines: {long}"


def test_model_files_written_before_the_layers_still_import_the_contract():
    from tpubench import model_api, registry
    from tpubench.model import model_api as api
    from tpubench.model import registry as reg

    assert model_api is api and registry is reg
    import tpubench

    try:
        tpubench.flags  # noqa: B018 - only the model contract keeps its old name
    except AttributeError as e:
        assert "no attribute 'flags'" in str(e)
    else:
        raise AssertionError("tpubench.flags should not resolve")


def test_every_package_directory_is_installed():
    """A wheel holds only the packages pyproject lists: a new one left out installs broken."""
    import tomllib

    repo = ROOT.parent
    conf = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(conf["packages"])
    found = set()
    for name, folder in conf["package-dir"].items():
        for init in (repo / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(repo / folder)
            found.add(".".join([name, *rel.parts]))
    assert found - listed == set(), f"packages missing from pyproject.toml: {found - listed}"
    assert listed - found == set(), f"listed packages with no directory: {listed - found}"
