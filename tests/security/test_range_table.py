"""Issue 58 E: every number a user or a file gives has its range in ONE table (core/bounds.py).

The code walk fails when a numeric flag (tpubench's absl flags, the
launcher's argparse arguments) is defined without an entry in
`bounds.FLAGS`; the rest show each reader refusing a value outside its
range with one line naming the value and the accepted range.
"""

import ast
import pathlib
import subprocess
import sys

import pytest
from conftest import one_line_error, run_cli

from tpubench.core import bounds

ROOT = pathlib.Path(__file__).resolve().parents[2]
_ABSL_NUMBERS = ("DEFINE_integer", "DEFINE_float", "DEFINE_multi_integer", "DEFINE_multi_float")
# argparse types that give a number: the launcher's own parsers and the builtins.
_ARGPARSE_NUMBERS = ("int", "float", "_positive", "_seconds")


def _numeric_flags() -> list[tuple[str, str]]:
    """(file, flag name) of every numeric flag defined under tpubench/ and launch/."""
    found = []
    for path in sorted([*ROOT.glob("tpubench/**/*.py"), *ROOT.glob("launch/**/*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            where = str(path.relative_to(ROOT))
            if node.func.attr in _ABSL_NUMBERS:
                name = node.args[0] if node.args else None
                assert isinstance(name, ast.Constant), f"{where}:{node.lineno}: a literal name"
                found.append((where, name.value))
            elif node.func.attr == "add_argument":
                kind = next((k.value for k in node.keywords if k.arg == "type"), None)
                if isinstance(kind, ast.Name) and kind.id in _ARGPARSE_NUMBERS:
                    flag = node.args[0].value
                    found.append((where, flag.lstrip("-").replace("-", "_")))
    return found


def test_every_numeric_flag_has_an_entry_in_the_one_range_table():
    flags = _numeric_flags()
    # The walk finds them (tpubench's and the launcher's); a scenario plug-in's own flags are
    # declared with their ranges by the plug-in (tests/infer's scenario plug-in tests).
    assert len(flags) > 50
    missing = sorted({f"{where}: --{name}" for where, name in flags if name not in bounds.FLAGS})
    assert not missing, "numeric flags without a range in core/bounds.FLAGS:\n" + "\n".join(missing)


def test_every_scenario_plugins_number_declares_its_range():
    """A scenario plug-in's flags are defined from its declarations (cli/scenario_flags.py),
    each number held to the range it declares, and so is each user.conf key it uses."""
    from tpubench.run.infer import scenarios

    for name in scenarios.names():
        plugin = scenarios.get(name)
        for flag in plugin.flags:
            assert flag.range is not None and flag.range.low <= flag.range.high, (name, flag)
        for key, held in plugin.conf_keys.items():
            if held.use in ("expected",) or held.use.startswith("flag "):
                assert held.range is not None, (name, key)


def test_every_range_is_sound():
    for name, (low, high, what) in bounds.FLAGS.items():
        assert low <= high and what, name


@pytest.mark.parametrize(
    "argv, shown",
    [
        # 2**63 used to pass (lower_bound=1 only) and end in an internal error on real data.
        (
            ["train", "--per_replica_batch_size=9223372036854775808"],
            "--per_replica_batch_size=9223372036854775808 is out of range; accepted: 1 to "
            "1,048,576 (examples per replica)",
        ),
        # One over --batch_size's cap used to run out of memory.
        (["train", "--per_replica_batch_size=1048577"], "accepted: 1 to 1,048,576"),
        (["tune", "--batch_sizes=64,9223372036854775808"], "--batch_sizes=9223372036854775808"),
        (["tune", "--max_repeats=100000"], "accepted: 1 to 1,000 (rounds)"),
        (["tune", "--serving_min_queries=10000000000"], "accepted: 1 to 10,000,000 (queries)"),
        (["data", "prepare", "--num_shards=1000000000"], "accepted: 1 to 100,000 (shards"),
    ],
)
def test_a_number_past_its_range_is_one_line_naming_value_and_range(tmp_path, argv, shown):
    proc, record = run_cli(*argv, "--model=mnist_mlp", results_dir=tmp_path, timeout=60)
    line = one_line_error(proc)
    assert proc.returncode == 2 and shown in line, line
    assert record is None


def test_a_per_replica_batch_whose_global_batch_passes_the_cap_is_refused(tmp_path):
    """600,000 is within one replica's range; on 2 replicas the global batch is 1,200,000."""
    proc, _ = run_cli(
        "train",
        "--model=mnist_mlp",
        "--tiny",
        "--use_synthetic_data",
        "--num_cpu_devices=2",
        "--strategy=mirrored",
        "--per_replica_batch_size=600000",
        results_dir=tmp_path,
        timeout=300,
    )
    line = one_line_error(proc)
    assert proc.returncode == 2, line
    assert (
        "--per_replica_batch_size=600,000 on 2 replicas is a global batch of 1,200,000; "
        "accepted: 1 to 524,288 per replica here" in line
    ), line


def _launch(*argv):
    return subprocess.run(
        [sys.executable, "-m", "tpubench_launch.main", *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "argv, shown",
    [
        (
            ["gke", "--name=x", "--image=i", "--workers=100000", "--dry-run"],
            "--workers=100000 is out of range; accepted: 1 to 1,024 (worker tasks)",
        ),
        (["gke", "--name=x", "--image=i", "--gpus=1000", "--dry-run"], "accepted: 0 to 16"),
        (["gke", "--name=x", "--image=i", "--ttl=99999999", "--dry-run"], "--ttl=99999999 is"),
        (["local-cluster", "--workers=0"], "--workers=0 is out of range; accepted: 1 to 1,024"),
        (["local-cluster", "--workers=1", "--grace=1e9"], "--grace=1000000000.0 is out of"),
        (["sweep", "s.yaml", "--max-cost=nan"], "--max-cost=nan is out of range"),
    ],
)
def test_the_launchers_numbers_have_ranges(argv, shown, tmp_path):
    proc = _launch(*argv)
    line = one_line_error(proc)
    assert proc.returncode == 2 and shown in line, line
    assert line.startswith("tpubench-launch "), line


def test_a_sweep_files_flags_are_checked_against_their_ranges(tmp_path):
    sweep = tmp_path / "w.yaml"
    sweep.write_text("runs: [{label: a, flags: {model: mnist_mlp, train_steps: 10000000000000}}]\n")
    proc = _launch("sweep", str(sweep), "--dry-run")
    line = one_line_error(proc)
    assert proc.returncode == 2, line
    assert f"{sweep}: runs (a): flags.train_steps: --train_steps=10000000000000 is out" in line
    assert "accepted: 1 to 1,000,000,000 (steps)" in line
