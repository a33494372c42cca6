"""Every file tpubench or the launcher reads goes through core/safe_files.py (issue 58, class C).

The test walks the source (ast) of tpubench/ and launch/ and fails on any
direct reader: the builtin `open` for reading, `os.open` or `os.fdopen` for
reading, `Path.read_text`/`read_bytes`/`open`, `tarfile.open(NAME)`,
`json.load`, `yaml` loads, `np.load`, `pickle.load`, a gfile `GFile` read,
and TensorFlow's own readers of a path (TFRecord shards, checkpoints),
called or passed on.  Those read whatever the path names: a FIFO waits for
a writer for ever, /dev/zero grows to the memory limit.  The few exceptions
below each say why the file cannot be a user's (a /proc file, a file
shipped inside the package, a file tpubench just wrote in a private temp
dir) or which check of the opener's comes first (TensorFlow's readers).
"""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
TREES = ("tpubench", "launch")

# (file, function, call) -> why it may read without the opener.
ALLOWED = {
    ("tpubench/core/safe_files.py", "open_regular", "os.open"): "the opener itself",
    ("tpubench/core/safe_files.py", "open_regular", "os.fdopen"): "the opener itself",
    ("tpubench/core/bounds.py", "available_memory", "open"): "/proc/meminfo: the kernel's",
    ("tpubench/study/run/execute.py", "_host_cpu_seconds", "open"): "/proc/stat: the kernel's",
    ("tpubench/hardware/probe.py", "_proc_cpuinfo", "open"): "/proc/cpuinfo: the kernel's",
    ("tpubench/model/cpu_ops.py", "_cpu_flags", "read_text"): "/proc/cpuinfo: the kernel's",
    ("tpubench/model/cpu_ops.py", "library_path", "read_bytes"): (
        "the C++ sources shipped inside the package, hashed to name the built op"
    ),
    ("tpubench/model/shipped.py", "load", "read_text"): "a JSON table shipped inside the package",
    ("tpubench/cost/catalog.py", "load", "read_text"): (
        "the price catalog shipped inside the package (importlib.resources)"
    ),
    ("tpubench/cost/catalog_diff.py", "load", "read_text"): (
        "`prices diff shipped`: the price catalog shipped inside the package (importlib.resources)"
    ),
    ("tpubench/core/machine_facts.py", "_rows", "read_text"): (
        "the machine facts' CSV tables shipped inside the package (importlib.resources)"
    ),
    ("launch/wheel.py", "build", "read_text"): (
        "the installed distribution's own metadata (importlib.metadata)"
    ),
    ("tpubench/hardware/capped_stderr.py", "pass_stderr", "os.fdopen"): (
        "the read end of a pipe the parent just made (os.pipe), not a path"
    ),
    ("tpubench/run/infer/harness.py", "run", "open"): (
        "LoadGen's logs in the mkdtemp directory this run made for it"
    ),
    ("tpubench/run/infer/loadgen_log.py", "read_detail", "open"): (
        "LoadGen's detail log in the mkdtemp directory the harness made for it"
    ),
    ("tpubench/storage/any_path.py", "read_bytes", "GFile"): (
        "a gs:// object only, its size checked first (a bucket holds no FIFO or device); "
        "local paths take the opener"
    ),
    ("tpubench/testing/local_gcs_server.py", "*", "open"): (
        "the test server's own state file, in the directory the test made"
    ),
    # TensorFlow reads these paths itself; each is checked a regular file first.
    ("tpubench/data/pipeline.py", "input_fn", "TFRecordDataset"): (
        "shards from manifest.shard_paths, each local one checked a regular file"
    ),
    ("tpubench/data/text_pipeline.py", "_records", "TFRecordDataset"): (
        "shards from manifest.shard_paths, each local one checked a regular file"
    ),
    ("tpubench/data/integrity.py", "scan_file", "TFRecordDataset"): (
        "shards integrity.scan took from manifest.shard_paths (checked)"
    ),
    ("tpubench/storage/writers.py", "purge_events_past", "TFRecordDataset"): (
        "each event file checked by any_path.check_regular the line before"
    ),
    ("tpubench/run/checkpoints.py", "check", "load_checkpoint"): (
        "the prefix's index and data files checked by check_files first"
    ),
    ("tpubench/run/restoring.py", "holds_dropout_state", "list_variables"): (
        "the prefix choose() picked, its files checked by check() on the way"
    ),
    ("tpubench/run/infer/weights.py", "find_checkpoint", "latest_checkpoint"): (
        "the state file checked by any_path.check_regular the line before; the prefix it "
        "names checked by checkpoints.check_files in load()"
    ),
}
# TensorFlow functions that read the path they are given (called, or passed to a dataset).
TF_READERS = {"TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset", "read_file"}
TF_READERS |= {"load_checkpoint", "list_variables", "latest_checkpoint", "NewCheckpointReader"}

LOADERS = {"json.load", "pickle.load", "marshal.load", "np.load", "numpy.load", "np.fromfile"}
LOADERS |= {"np.loadtxt", "tomllib.load", "yaml.load", "yaml.safe_load", "yaml.full_load"}
LOADERS |= {"yaml.unsafe_load", "yaml.load_all", "yaml.safe_load_all"}


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    return "?"


def _mode(call: ast.Call, position: int) -> str | None:
    """The mode argument when a constant text ('r' when absent), else None (unknown)."""
    arg = call.args[position] if len(call.args) > position else None
    arg = next((k.value for k in call.keywords if k.arg == "mode"), arg)
    if arg is None:
        return "r"
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def _writes(mode: str | None) -> bool:
    return mode is not None and any(c in mode for c in "wax") and "+" not in mode


def _reads(call: ast.Call) -> str | None:
    """What CALL is when it reads a file by itself (its short name), else None.

    CALL may be an attribute too: a TensorFlow reader named (TF_READERS).
    """
    if isinstance(call, ast.Attribute):
        return call.attr if call.attr in TF_READERS else None
    name = _name(call.func)
    short = name.rsplit(".", 1)[-1]
    if name == "open" or name == "io.open":
        return None if _writes(_mode(call, 1)) else "open"
    if name == "os.fdopen":
        return None if _writes(_mode(call, 1)) else "os.fdopen"
    if name == "os.open":
        text = ast.unparse(call.args[1]) if len(call.args) > 1 else ""
        return None if ("O_WRONLY" in text or "O_CREAT" in text) else "os.open"
    if name in LOADERS:
        return None if name == "yaml.load" and _in_safe_yaml(call) else name
    if short in ("read_text", "read_bytes") and isinstance(call.func, ast.Attribute):
        owner = _name(call.func.value)
        return None if owner in ("safe_files", "any_path", "record_text", "gcs") else short
    if short == "GFile":
        return None if _writes(_mode(call, 1)) else "GFile"
    if short == "open" and isinstance(call.func, ast.Attribute):
        if name == "tarfile.open" and any(k.arg == "fileobj" for k in call.keywords):
            return None  # reads a file object the opener gave
        return name
    return None


def _in_safe_yaml(call: ast.Call) -> bool:
    return getattr(call, "_file", "") == "tpubench/core/safe_yaml.py"


def _readers() -> list[tuple[str, str, str, int]]:
    """(file, function, call, line) of every direct reader in the trees."""
    found = []
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            module = ast.parse(path.read_text(), rel)
            for func, node in _calls(module):
                node._file = rel
                what = _reads(node)
                if what:
                    found.append((rel, func, what, node.lineno))
    return found


def _calls(module: ast.Module):
    """(enclosing function name, node) for every call and attribute in MODULE."""

    def walk(node, func):
        for child in ast.iter_child_nodes(node):
            inner = func
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = child.name
            if isinstance(child, (ast.Call, ast.Attribute)):
                yield inner, child
            yield from walk(child, inner)

    yield from walk(module, "<module>")


def _allowed(rel: str, func: str, what: str) -> bool:
    return (rel, func, what) in ALLOWED or (rel, "*", what) in ALLOWED


def test_every_reader_in_tpubench_and_the_launcher_goes_through_the_one_opener():
    direct = [f"{r}:{line} {func}(): {what}" for r, func, what, line in _readers()]
    direct = [
        d
        for d, (r, func, what, _) in zip(direct, _readers(), strict=True)
        if not _allowed(r, func, what)
    ]
    assert not direct, (
        "files read without core/safe_files.py (a FIFO would hang them, /dev/zero fill "
        "memory); read through safe_files.read_text/read_bytes/open_regular/read_tail, or "
        "add a justified entry to ALLOWED:\n" + "\n".join(direct)
    )


def test_each_allowed_exception_is_still_there_and_says_why():
    seen = {(r, func, what) for r, func, what, _ in _readers()}
    seen |= {(r, "*", what) for r, _, what, _ in _readers()}
    stale = [key for key in ALLOWED if key not in seen]
    assert not stale, f"exceptions that match no reader any more (remove them): {stale}"
    assert all(len(why) > 10 for why in ALLOWED.values())


def test_the_walk_finds_each_kind_of_reader():
    source = """
def f(p, yaml, np, json, tf):
    open(p)
    open(p, "rb")
    open(p, "w")
    p.read_text()
    p.read_bytes()
    p.open()
    json.load(fh)
    yaml.safe_load(fh)
    np.load(p)
    os.open(p, os.O_RDONLY)
    os.open(p, os.O_CREAT | os.O_WRONLY)
    tf.io.gfile.GFile(p, "r")
    safe_files.read_text(p, "", 1, "x")
    tf.data.TFRecordDataset(p)
    ds.interleave(tf.data.TFRecordDataset)
    tf.train.load_checkpoint(p)
"""
    module = ast.parse(source)
    kinds = [_reads(call) for _, call in _calls(module)]
    assert [k for k in kinds if k] == [
        "open",
        "open",
        "read_text",
        "read_bytes",
        "p.open",
        "json.load",
        "yaml.safe_load",
        "np.load",
        "os.open",
        "GFile",
        "TFRecordDataset",
        "TFRecordDataset",
        "load_checkpoint",
    ]
