"""Bad values get one line naming the value and what is accepted, and exit 2 (issue 11, item 8).

Flag-level values are refused before TensorFlow loads; `--params` values
once the model is known.  `--num_cpu_devices=100000` used to hang and
`--flagfile=/dev/zero` used to grow to 24 GB: each runs here under a time
limit and a 1 GiB address-space limit, so a regression fails instead of
taking the machine down.
"""

import os
import resource
import subprocess
import sys

import pytest
from conftest import one_line_error, record_files, run_cli

from tpubench.core import errors
from tpubench.model import registry

TINY = ["--tiny", "--train_steps=1", "--use_synthetic_data"]


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def cli_limited(tmp_path, *args):
    """`tpubench ARGS` that must fail before TensorFlow loads: 1 GiB, 60 s at most."""
    env = dict(os.environ)
    env.pop("TF_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "tpubench", *map(str, args), f"--results_dir={tmp_path}/runs"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        preexec_fn=_limited,
    )


@pytest.mark.parametrize(
    "args, needles",
    [
        (["--seed=-1"], ["--seed=-1", "[0, 2147483647]"]),
        (["--num_cpu_devices=100000"], ["--num_cpu_devices=100000", "[1, 256]"]),
        (["--flagfile=/dev/zero"], ["--flagfile=/dev/zero", "not a regular file"]),
    ],
    ids=["seed", "num_cpu_devices", "flagfile_device"],
)
def test_flag_values_are_refused_before_anything_runs(tmp_path, args, needles):
    proc = cli_limited(tmp_path, "train", *args, *TINY)
    line = one_line_error(proc)
    assert proc.returncode == 2
    for needle in needles:
        assert needle in line
    assert not record_files(tmp_path / "runs"), "nothing ran, so no record"


def test_a_huge_or_nested_flagfile_is_refused(tmp_path):
    huge = tmp_path / "huge.flags"
    with open(huge, "wb") as f:
        f.truncate(50 * 2**20)
    proc = cli_limited(tmp_path, "train", f"--flagfile={huge}")
    line = one_line_error(proc)
    assert proc.returncode == 2 and str(huge) in line and "1,048,576" in line

    outer = tmp_path / "outer.flags"
    outer.write_text("# my flags\n--tiny\n--flagfile=/dev/zero\n")
    proc = cli_limited(tmp_path, "train", "--flagfile", outer)
    line = one_line_error(proc)
    assert proc.returncode == 2 and "--flagfile=/dev/zero" in line


def test_a_path_that_is_not_utf8_is_refused(tmp_path):
    bad = os.fsdecode(os.fsencode(str(tmp_path)) + b"/r\xffsults")
    proc = cli_limited(tmp_path, "train", f"--model_dir={bad}", *TINY)
    line = one_line_error(proc)
    assert proc.returncode == 2
    assert "r\\xffsults" in line and "UTF-8" in line
    assert not os.path.exists(os.fsencode(str(tmp_path)) + b"/r\xffsults")


@pytest.mark.parametrize(
    "key, value, accepted",
    [
        ("hidden_units", "0", "an integer from 1 to 1,048,576"),
        ("num_classes", "0", "an integer from 1 to 1,048,576"),
        ("dropout", "1.5", "[0, 1)"),
        ("dropout", "-0.1", "[0, 1)"),
        ("learning_rate", "-0.01", "> 0"),
        ("learning_rate", "nan", "finite"),
    ],
)
def test_params_out_of_range(key, value, accepted):
    spec = registry.get("mnist_mlp")
    with pytest.raises(errors.UsageError) as e:
        registry.resolve_params(spec, {key: value})
    assert f"{key}=" in str(e.value) and accepted in str(e.value)


def test_params_in_range_are_kept():
    spec = registry.get("mnist_mlp")
    params = registry.resolve_params(
        spec, {"hidden_units": "1", "dropout": "0", "learning_rate": "0.5", "num_classes": "3"}
    )
    assert (params["hidden_units"], params["dropout"], params["learning_rate"]) == (1, 0.0, 0.5)
    assert params["num_classes"] == 3


def test_a_seed_in_params_points_to_the_seed_flag(tmp_path):
    """Nine models listed `seed` among their hyperparameters, read nothing from it, and
    `--params seed=5` trained with --seed's 42 without a word."""
    proc, record = run_cli("train", "--params=seed=5", *TINY, results_dir=tmp_path)
    line = one_line_error(proc)
    assert proc.returncode == 2
    assert line == (
        "tpubench train: error: --params: seed=5 is not a hyperparameter: --seed seeds the "
        "run (its weights, dropout and input order); use --seed=5"
    )
    assert record is None  # a usage error: refused before anything loads or is written
    for name in registry.names():
        assert "seed" not in registry.get(name).default_params, name


@pytest.mark.parametrize(
    "key, value, hint",
    [
        ("global_batch_size", "64", "--batch_size sets it; use --batch_size=64"),
        ("batch_size", "8", "--per_replica_batch_size sets it; use --per_replica_batch_size=8"),
        ("data_dir", "/x", "--data_dir sets it; use --data_dir=/x"),
        ("deterministic", "true", "--deterministic_input sets it"),
    ],
)
def test_a_key_the_run_sets_points_to_its_flag(key, value, hint):
    """Like seed, the run sets these over any --params value, even where a model declares one."""
    spec = registry.get("mnist_mlp")
    with pytest.raises(errors.UsageError) as e:
        registry.resolve_params(spec, {key: value})
    assert str(e.value) == f"--params: {key}={value} is not a hyperparameter: {hint}"


def test_params_out_of_range_through_the_cli(tmp_path):
    proc, record = run_cli("train", "--params=dropout=1.5", *TINY, results_dir=tmp_path)
    line = one_line_error(proc)
    assert proc.returncode == 2
    assert "dropout=1.5" in line and "[0, 1)" in line
    assert record["status"] == "failed" and "dropout=1.5" in record["error"]
