"""Class B of issue 25: rerun runs only what the record's own run could have run.

Only the flags of the subcommand being rerun, by exact name, with values of
the flag's type; a key naming anything else is refused in one escaped line;
`--model_module` (code) needs `--trust_code`.  Every refusal comes before
anything starts (no `tpubench rerun: tpubench ...` line is echoed).
"""

import json

import pytest
from conftest import one_line_error, rerun_cli
from hostile import raw_controls

# An unknown machine stops the rerun run before TensorFlow loads, so a
# record that passes the checks costs a second here.
BASE = {"tiny": True, "machine": ["gcp:no-such-machine"]}


def _record(tmp_path, flags, sub="train"):
    path = tmp_path / "old-run.json"
    rec = {
        "schema_version": 1,
        "run_id": "20250101-000000-mnist_mlp-abcdef",
        "kind": sub,
        "status": "ok",
        "argv": ["tpubench", sub],
        "flags": flags,
        "config": {"results_dir": str(tmp_path / "again")},
    }
    path.write_text(json.dumps(rec))
    return str(path)


def _refused(proc) -> str:
    line = one_line_error(proc)
    assert proc.returncode == 2, proc.stderr
    assert "tpubench rerun: tpubench" not in proc.stderr, "nothing may start"
    assert raw_controls(proc.stderr) == []
    return line


@pytest.mark.parametrize(
    "key",
    [
        "flagfile",
        "undefok",
        "model_module=/tmp/evil.py --tiny",  # a key that smuggles a flag through its name
        "Model",  # not the exact name
        "no_such_flag",
        "helpfull",
    ],
)
def test_keys_that_are_not_train_flags_are_refused(tmp_path, key):
    line = _refused(rerun_cli(tmp_path, _record(tmp_path, BASE | {key: "x"})))
    assert repr(key) in line or key in line
    assert "not a flag of `tpubench train`" in line


def test_a_key_with_escapes_is_refused_and_shown_escaped(tmp_path):
    key = "x\x1b[2K\r\x1b]0;title\x07"
    line = _refused(rerun_cli(tmp_path, _record(tmp_path, BASE | {key: "1"})))
    assert "\\x1b[2K\\r" in line


@pytest.mark.parametrize(
    ("key", "value", "accepted"),
    [
        ("tiny", "yes", "true or false"),
        ("train_steps", "10; touch PWNED", "a whole number"),
        ("train_steps", 2**200, "at most"),
        ("train_steps", 0, "at least 1"),
        ("learning_rate_scale", 1.0, "not a flag"),
        ("precision", "fp128", "one of"),
        ("machine", "gcp:n1", "a list of text"),
        ("seed", True, "a whole number"),
        ("target_accuracy", float("nan"), "a finite number"),
        ("run_label", ["a"], "text"),
    ],
)
def test_values_of_the_wrong_type_are_refused(tmp_path, key, value, accepted):
    line = _refused(rerun_cli(tmp_path, _record(tmp_path, BASE | {key: value})))
    assert key in line and accepted in line
    assert not (tmp_path / "PWNED").exists()


def test_model_module_needs_trust_code(tmp_path):
    module = tmp_path / "my models.py"
    rec = _record(tmp_path, BASE | {"model_module": [str(module)]})
    line = _refused(rerun_cli(tmp_path, rec))
    assert "--model_module" in line and "--trust_code" in line and "my models.py" in line
    proc = rerun_cli(tmp_path, rec, "--trust_code")
    assert "tpubench rerun: tpubench train" in proc.stderr  # it starts
    assert "no-such-machine" in proc.stderr  # and stops on the machine, as recorded


def test_a_genuine_infer_record_still_reruns(tmp_path):
    flags = {"tiny": True, "machine": ["gcp:no-such-machine"], "batch_size": ["1", "8"]}
    proc = rerun_cli(tmp_path, _record(tmp_path, flags, sub="infer"))
    assert "tpubench rerun: tpubench infer" in proc.stderr, proc.stderr
