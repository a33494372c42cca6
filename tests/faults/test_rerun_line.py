"""The echoed `tpubench rerun:` line is safe to paste (issue 11, items 9 and 11).

It is quoted with shlex, so a recorded value holding `;` or `$(...)` stays one
argument; it shows no credential; a record naming --model_module draws a
warning (rerunning imports that file, and needs --trust_code); a record whose values were redacted
is refused instead of run with `<redacted>` in a path.
"""

import shlex

from conftest import old_record, one_line_error, rerun_cli

HOSTILE_LABEL = "x; touch PWNED #"


def _record(tmp_path, flags: dict) -> str:
    return str(old_record(tmp_path, flags))


def test_rerun_line_is_quoted_redacted_and_warns_about_model_modules(tmp_path):
    # As an older tpubench recorded it: a credential in a URL, kept verbatim.
    flags = {
        "run_label": HOSTILE_LABEL,
        "data_dir": "gs://user:tok456@bkt/data",
        "model_module": [str(tmp_path / "my models.py")],
        # An unknown machine stops the rerun before TensorFlow loads.
        "machine": ["gcp:no-such-machine"],
        "tiny": True,
    }
    # Code named by a record runs only with --trust_code (tests/security/test_rerun_trust.py).
    proc = rerun_cli(tmp_path, _record(tmp_path, flags), "--trust_code")
    echoed = [x for x in proc.stderr.splitlines() if x.startswith("tpubench rerun: tpubench")]
    assert len(echoed) == 1, proc.stderr
    argv = shlex.split(echoed[0].removeprefix("tpubench rerun: "))
    assert argv[:2] == ["tpubench", "train"]
    assert f"--run_label={HOSTILE_LABEL}" in argv
    assert "--data_dir=gs://<redacted>@bkt/data" in argv
    assert f"--model_module={tmp_path / 'my models.py'}" in argv
    assert "tok456" not in proc.stderr + proc.stdout
    warnings = [x for x in proc.stderr.splitlines() if "warning" in x and "--model_module" in x]
    assert len(warnings) == 1 and "my models.py" in warnings[0]
    assert not (tmp_path / "PWNED").exists()


def test_rerun_refuses_a_record_with_redacted_values(tmp_path):
    flags = {"data_dir": "gs://<redacted>@bkt/data", "tiny": True}
    proc = rerun_cli(tmp_path, _record(tmp_path, flags))
    line = one_line_error(proc)
    assert proc.returncode == 2
    assert "redacted" in line and "--data_dir" in line
    assert "tpubench rerun: tpubench" not in proc.stderr, "nothing was started"
