"""The package's one-way rule: imports between packages only point down.

cli -> {run, study, tune} -> {report, data, hardware, cost, model, children} -> storage -> core.
Inside the middle layer the order is fixed too (RANKS): model and cost
import neither of the others; hardware names accelerators as the price
catalog does; data measures the host while it reads; report reads what
all of them write.  Across the two trees: tpubench never imports
tpubench_launch (the launcher stands on tpubench, not the other way round;
what the launcher may import is tests/launch/test_boundaries.py's rule), and
launch/ has no import cycle.  Inside run/, the train and infer wings stand
on shared session pieces and never import each other.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "tpubench"
LAUNCH = ROOT.parent / "launch"

# Rank of each package: an import must go to a lower rank or stay in its package.
RANKS = {
    "core": 0,
    "storage": 1,
    "model": 2,
    "cost": 2,
    "children": 2,  # the one child runner: start, pin, signal, stop; argv; labels
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


def _all_imports(path: pathlib.Path):
    """(line, module) of every import in PATH, at any depth (inside functions too);
    `from X import Y` gives X.Y as well, since Y may be a module."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def test_tpubench_never_imports_the_launcher():
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in sorted(ROOT.rglob("*.py"))
        for line, name in _all_imports(path)
        if name.split(".")[0] == "tpubench_launch"
    ]
    assert not wrong, "tpubench imports the launcher:\n" + "\n".join(wrong)


def _launch_graph() -> dict[str, set[str]]:
    """{launch module: the launch modules it imports}, named as under tpubench_launch."""
    modules = {
        ".".join(p.relative_to(LAUNCH).with_suffix("").parts): p for p in LAUNCH.rglob("*.py")
    }
    graph = {}
    for name, path in modules.items():
        graph[name] = {
            target
            for _, imported in _all_imports(path)
            if imported.startswith("tpubench_launch.")
            and (target := imported.removeprefix("tpubench_launch.")) in modules
            and target != name
            and not target.endswith("__init__")
        }
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of GRAPH as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt, [*path, nxt])):
                return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_launch_has_no_import_cycle():
    graph = _launch_graph()
    assert "sweep.file" in graph and "sweep.grid" in graph["sweep.file"]  # the graph is read
    assert _cycle(graph) is None, f"an import cycle in launch/: {' -> '.join(_cycle(graph))}"


# run/ in two wings over shared session pieces: run/train/ never imports run/infer/
# nor the other way round, and the shared pieces (run/*.py) import neither.
RUN_WINGS = ("train", "infer")


def _run_imports(path: pathlib.Path) -> set[str]:
    """The parts of tpubench/run/ that PATH imports, at any depth: a wing's name, or
    the shared module's."""
    out = set()
    for _, name in _all_imports(path):
        parts = name.split(".")
        if parts[:2] == ["tpubench", "run"] and len(parts) > 2:
            out.add(parts[2])
    return out


def test_run_is_two_wings_over_shared_pieces():
    run = ROOT / "run"
    wrong = []
    for wing in RUN_WINGS:
        assert (run / wing / "command.py").exists(), f"run/{wing}/ has no command.py"
        for path in sorted((run / wing).rglob("*.py")):
            crossing = _run_imports(path) & (set(RUN_WINGS) - {wing})
            wrong += [f"{path.relative_to(ROOT)} imports run/{x}/" for x in sorted(crossing)]
    for path in sorted(run.glob("*.py")):
        crossing = _run_imports(path) & set(RUN_WINGS)
        wrong += [f"{path.relative_to(ROOT)} (shared) imports run/{x}/" for x in sorted(crossing)]
    assert not wrong, "imports across run/'s wings:\n" + "\n".join(wrong)


def test_no_module_over_400_lines():
    long = {
        str(p.relative_to(ROOT.parent)): n
        for p in [*ROOT.rglob("*.py"), *LAUNCH.rglob("*.py")]
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


# tests/ mirrors the code: one folder per package of tpubench (tests/cost for
# tpubench/cost, ...), per top-level tree (launch, models, bench, docs) and per
# concern that crosses every package (faults, security).  Only the suite's own
# plumbing and the repository-wide rules sit at the top.
TESTS = ROOT.parent / "tests"
TEST_TREES = {"launch", "models", "bench", "docs"}
TEST_CONCERNS = {"faults", "security"}
TOP_LEVEL_TESTS = {"conftest.py", "smoke.py", "test_layers.py"}  # and the smoke layer


def test_tests_mirror_the_packages():
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    for folder in (p for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        assert folder.name in packages | TEST_TREES | TEST_CONCERNS, (
            f"tests/{folder.name}/ names no package of tpubench, tree or cross-cutting concern"
        )
    loose = sorted(
        p.name
        for p in TESTS.glob("*.py")
        if p.name not in TOP_LEVEL_TESTS and not p.name.startswith("test_smoke")
    )
    assert not loose, f"move {loose} into the folder of the package they test"
    # pytest imports test files by their base name (no __init__.py): two of one name collide.
    names = [p.name for p in TESTS.rglob("test_*.py")]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
