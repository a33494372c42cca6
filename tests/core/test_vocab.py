"""One spelling per enumeration: core/vocab.py, read by tpubench and the launcher alike."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tpubench.core import basis, errors, precision, vocab
from tpubench.study.run import executors as study_executors
from tpubench.study.spec import validate
from tpubench_launch import executors
from tpubench_launch.sweep import grid as sweep


def test_the_launchers_sweep_words_are_tpubenchs():
    for key, values in (("strategy", vocab.STRATEGIES), ("precision", precision.ALL)):
        with pytest.raises(errors.UsageError) as e:
            sweep.check_keys({key: "bogus"}, "s.yaml")
        listed = values if key == "precision" else sorted(values)  # core/precision.parse's order
        assert str(e.value).endswith("accepted: " + ", ".join(listed))
        for value in values:
            sweep.check_keys({key: value}, "s.yaml")
    clusters = [s for s in vocab.STRATEGIES if sweep.Config("c", {"strategy": s}, {}).is_cluster]
    assert clusters == list(vocab.CLUSTER_STRATEGIES)


def test_a_studys_executors_are_the_launchers_renting_ones_as_it_publishes_them():
    renting = {n for n in executors.REGISTRY.names() if executors.REGISTRY.get(n).rents}
    assert set(study_executors.names()) == {"local", *renting}
    assert {"gce", "gke", "tpu-vm", "skypilot"} <= renting


def test_study_files_accept_subsets_of_the_flags_values():
    assert set(validate.STRATEGIES) <= set(vocab.STRATEGIES)
    assert set(validate.ALL_REDUCE) <= set(vocab.ALL_REDUCE)
    assert set(validate.VARIABLES) == {"cpu", "gpu"}


@pytest.mark.parametrize(
    ("flag", "values"),
    [
        ("accelerator", vocab.ACCELERATORS),
        ("strategy", vocab.STRATEGIES),
        ("all_reduce", vocab.ALL_REDUCE),
        ("precision", precision.ALL),
        ("pricing", basis.CHOSEN),
    ],
)
def test_train_refuses_a_value_outside_the_vocabulary_and_lists_it(flag, values, tmp_path):
    """What `tpubench train --FLAG=bogus` says is the vocabulary, whole and in one line."""
    proc = subprocess.run(
        [sys.executable, "-m", "tpubench", "train", f"--{flag}=bogus"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    line = next(x for x in proc.stderr.splitlines() if "bogus" in x)
    assert all(v in line for v in values), line


def test_mirrored_all_reduce_error_lists_the_single_host_algorithms():
    from tpubench.hardware import strategy

    with pytest.raises(errors.UsageError) as e:
        strategy._cross_device_ops("ring", "gpu")  # noqa: SLF001 - the message is what a user sees
    assert str(e.value).endswith("accepted: " + ", ".join(vocab.MIRRORED_ALL_REDUCE))


def test_the_launchers_cost_preview_prints_tpubenchs_money_and_clock():
    from tpubench.core import durations, money
    from tpubench_launch import preview

    row = preview.Row("cfg-1", "mnist_mlp", 0.0475, 3725.4, "estimate")
    line = preview.render([row], "title").splitlines()[2].split()
    assert line == ["cfg-1", money.usd(0.0475), durations.clock(3725.4),
                    money.usd(0.0475 * 3725.4 / 3600), "estimate", "mnist_mlp"]  # fmt: skip
    assert line[1:4] == ["$0.0475", "1:02:05", "$0.0492"]


def test_durations_for_people():
    from tpubench.core import durations

    assert durations.clock(3725.4) == "1:02:05" and durations.clock(59.6) == "0:01:00"
    shown = [durations.short(s) for s in (42.14, 750, 3.2 * 3600, 4.1 * 86400, None)]
    assert shown == ["42.1 s", "12.5 min", "3.2 h", "4.1 d", "n/a"]


def test_infer_refuses_a_cluster_strategy_naming_the_ones_it_serves_under(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "tpubench", "infer", "--tiny", "--strategy=parameter_server"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert (
        "does not run under the parameter_server strategy; accepted: one_device, mirrored, "
        "central_storage, tpu "
        "(or auto without a multi-task TF_CONFIG)"
    ) in proc.stderr
