"""Issue 34, class F (the first hour, round 4): the no-TPU line."""

from tpubench.hardware import clusters


def test_the_no_tpu_line_does_not_suggest_the_flag_the_user_gave():
    line = clusters.no_tpu_message("local", "TPU not found " * 30)
    assert "with --tpu=local" in line and "use --tpu=local" not in line
    assert "run on a TPU VM, or pass --accelerator=cpu or gpu" in line


def test_the_no_tpu_line_cuts_tensorflows_message_at_a_word():
    cause = "Failed to connect to all addresses; last error: UNKNOWN " * 10
    line = clusters.no_tpu_message("my-tpu", cause)
    quoted = line.split("(", 1)[1].rsplit("); on a TPU VM", 1)[0]
    assert quoted.endswith(" …") and len(quoted) <= 200
    assert all(word in cause.split() for word in quoted[:-2].split())
    assert "on a TPU VM use --tpu=local" in line


def test_report_and_advise_say_a_folder_does_not_exist(tmp_path):
    from conftest import one_line_error, run_cli

    for argv in (["report"], ["advise", "--model=mnist_mlp", "--deadline=1h"]):
        proc, _ = run_cli(*argv, tmp_path / "runs" / "vcpus")
        line = one_line_error(proc)
        assert proc.returncode == 2 and f"{tmp_path / 'runs' / 'vcpus'} does not exist;" in line
