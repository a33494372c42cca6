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


CAP = 300  # lines, for every Python module and C++ source


def test_no_module_over_300_lines():
    long = {
        str(p.relative_to(ROOT.parent)): n
        for p in [*ROOT.rglob("*.py"), *LAUNCH.rglob("*.py"), *MODELS.rglob("*.py")]
        if (n := len(p.read_text().splitlines())) > CAP
    }
    assert not long, f"modules over {CAP} lines: {long}"


def test_no_cpp_source_over_300_lines():
    sources = [p for ext in ("*.cc", "*.h") for p in ROOT.rglob(ext)]
    assert any(p.name == "batch_norm_cpu.cc" for p in sources)  # the glob finds the kernels
    long = {
        str(p.relative_to(ROOT.parent)): n
        for p in sources
        if (n := len(p.read_text().splitlines())) > CAP
    }
    assert not long, f"C++ sources over {CAP} lines: {long}"


def _walk(cls: ast.ClassDef, start: str) -> tuple[int, list[str]]:
    """Statements in CLS.START and in every method of CLS it reaches through self.X(...),
    docstrings left out; and the names of those methods."""
    methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen or name not in methods:
            continue
        seen.add(name)
        for node in ast.walk(methods[name]):
            call = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            if call and isinstance(node.func.value, ast.Name) and node.func.value.id == "self":
                todo.append(node.func.attr)
    count = 0
    for name in seen:
        body = methods[name].body
        doc = body[:1] if ast.get_docstring(methods[name]) is not None else []
        count += sum(
            1
            for top in body
            if top not in doc
            for node in ast.walk(top)
            if isinstance(node, ast.stmt)
        )
    return count, sorted(seen)


# Job.run's walk: 114 statements over 12 methods before issue 60 moved the
# record's sections (describe.py), the lock (lock.for_run), the runner and
# writers (assemble.py), the loops' run (loop.run) and failed saves
# (saver.Failures) to the modules that own them.
JOB_WALK_MAX = 70


def test_job_run_walk_is_short():
    tree = ast.parse((ROOT / "run" / "train" / "job.py").read_text())
    job = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Job")
    count, methods = _walk(job, "run")
    assert "_train" in methods  # the walk follows self.X(...) calls
    assert count <= JOB_WALK_MAX, f"Job.run reaches {count} statements through {methods}"


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


# ------------------------------------------------------------------ one name per thing
# A name lives in the module that defines it; callers import that module.  A
# re-export (a module-level `NAME = other.NAME`, an imported name listed in
# __all__ or imported only for others to import from here) gives one thing two
# names, and callers drift between them.  The check covers tpubench/, models/
# and launch/; a caller anywhere (tests too) that reads a name from a module
# that only imported it is a re-export in use.
MODELS = ROOT.parent / "models"
FIRST_PARTY = ("tpubench", "tpubench_models", "tpubench_launch")


def _module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    parts[0] = {"models": "tpubench_models", "launch": "tpubench_launch"}.get(parts[0], parts[0])
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, pathlib.Path]:
    trees = (ROOT, MODELS, LAUNCH)
    return {_module_name(p): p for tree in trees for p in sorted(tree.rglob("*.py"))}


def _top_level(tree: ast.Module):
    """Statements at module level, also inside `if`, `try` and `with` blocks."""
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            todo[:0] = [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            for handler in getattr(node, "handlers", []):
                todo[:0] = handler.body


def _imported(tree: ast.Module, here: str) -> dict[str, tuple[str, int]]:
    """{name bound at module level by an import: (the module it comes from, line)}."""
    out = {}
    for node in _top_level(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = (a.name if a.asname else "", node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = here.rsplit(".", node.level)[0] + "." if node.level else ""
            for a in node.names:
                out[a.asname or a.name] = (f"{base}{node.module or ''}", node.lineno)
    return out


def _defined_reexports(path: pathlib.Path, here: str) -> list[str]:
    tree = ast.parse(path.read_text())
    imported = _imported(tree, here)
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    loaded |= {  # names in string annotations (`"ModelSpec"`) count as used
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }
    wrong = []
    for node in _top_level(tree):
        value = getattr(node, "value", None)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and value is not None:
            root = value
            while isinstance(root, ast.Attribute):
                root = root.value
            source = imported.get(getattr(root, "id", None), ("", 0))[0]
            if isinstance(value, (ast.Name, ast.Attribute)) and source.startswith(FIRST_PARTY):
                wrong.append(f"{node.lineno}: {ast.unparse(node).splitlines()[0]}")
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", "") == "__all__" for t in node.targets
        ):
            listed = {
                e.value for e in getattr(node.value, "elts", []) if isinstance(e, ast.Constant)
            }
            wrong += [
                f"{imported[n][1]}: {n} imported and listed in __all__"
                for n in listed & set(imported)
            ]
    for name, (source, line) in imported.items():
        if name not in loaded and source.startswith(FIRST_PARTY):
            wrong.append(f"{line}: {name} imported from {source} and never used here")
    return wrong


def test_no_module_re_exports_a_name():
    wrong = []
    for module, path in _sources().items():
        rel = str(path.relative_to(ROOT.parent))
        wrong += [f"{rel}:{w}" for w in _defined_reexports(path, module)]
    assert not wrong, "re-exports (import the name from where it is defined):\n" + "\n".join(wrong)


def _reads_of_imported_names(path: pathlib.Path, imported_by: dict) -> list[str]:
    """`module.NAME` and `from module import NAME` in PATH where NAME is only imported there."""
    tree = ast.parse(path.read_text())
    local: dict[str, str] = {}  # local name -> first-party module it stands for
    wrong = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.name in imported_by:
                    local[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                whole = f"{node.module}.{a.name}"
                if whole in imported_by:
                    local[a.asname or a.name] = whole
                elif a.name in imported_by.get(node.module, ()):
                    wrong.append(f"{node.lineno}: from {node.module} import {a.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module = local.get(node.value.id)
            if module and node.attr in imported_by[module]:
                wrong.append(f"{node.lineno}: {node.value.id}.{node.attr} ({module})")
    return wrong


def test_no_caller_reads_a_name_from_a_module_that_only_imported_it():
    sources = _sources()
    imported_by = {}
    for module, path in sources.items():
        names = _imported(ast.parse(path.read_text()), module)
        own = {n for n, (source, _) in names.items() if source.startswith(FIRST_PARTY)}
        imported_by[module] = own - {
            m.rsplit(".", 1)[1] for m in sources if m.startswith(module + ".")
        }
    callers = [
        *sources.values(),
        *sorted(TESTS.rglob("*.py")),
        *sorted((ROOT.parent / "bench").rglob("*.py")),
    ]
    wrong = []
    for path in callers:
        rel = str(path.relative_to(ROOT.parent))
        wrong += [f"{rel}:{w}" for w in _reads_of_imported_names(path, imported_by)]
    assert not wrong, "names read through a module that imported them:\n" + "\n".join(wrong)


def test_the_re_export_finders_find_each_kind(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(
        "from absl import flags\n"
        "from tpubench.core import vocab\n"
        "from tpubench.core.errors import TpubenchError, UsageError\n"
        "__all__ = ['TpubenchError']\n"
        "DEVICES = vocab.ACCELERATORS\n"
        "FLAGS = flags.FLAGS\n"  # absl's own idiom: not a name of ours
    )
    found = _defined_reexports(path, "tpubench.core.m")
    assert found == [
        "3: TpubenchError imported and listed in __all__",
        "5: DEVICES = vocab.ACCELERATORS",
        "3: UsageError imported from tpubench.core.errors and never used here",
    ]
    caller = tmp_path / "c.py"
    caller.write_text("from tpubench.core import m\nfrom tpubench.core.m import vocab\nm.DEVICES\n")
    imported_by = {"tpubench.core.m": {"vocab", "TpubenchError"}}
    assert _reads_of_imported_names(caller, imported_by) == ["2: from tpubench.core.m import vocab"]


def _first_party_reads(path: pathlib.Path):
    """(line, alias, module, attribute) of each `alias.attribute` read in PATH where ALIAS is
    a first-party module the file imports and never rebinds."""
    import importlib

    tree = ast.parse(path.read_text())
    rebound = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    rebound |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments) for a in n.args}
    modules = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in FIRST_PARTY:
            for a in node.names:
                try:
                    modules[a.asname or a.name] = importlib.import_module(f"{node.module}.{a.name}")
                except ImportError:
                    continue  # a name, not a module
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and node.value.id not in rebound
        ):
            yield node.lineno, node.value.id, modules[node.value.id], node.attr


def test_every_name_read_from_a_first_party_module_exists():
    """A name removed or moved (an alias gone) fails here, not as an AttributeError in a run."""
    import importlib

    wrong = []
    for path in [*ROOT.rglob("*.py"), *LAUNCH.rglob("*.py"), *MODELS.rglob("*.py")]:
        for line, alias, module, attr in _first_party_reads(path):
            if hasattr(module, attr):
                continue
            try:
                importlib.import_module(f"{module.__name__}.{attr}")
            except ImportError:
                wrong.append(f"{path.relative_to(ROOT.parent)}:{line} {alias}.{attr}")
    assert not wrong, "names read from modules that do not define them:\n" + "\n".join(wrong)
