"""The `sizing` finding (PTB LSTM: vCPUs x memory caps) and the disk-class cells."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
import study_records
from test_study_verdicts import HOST, _m

from tpubench.core import errors
from tpubench.storage import records
from tpubench.study.report import findings, forms, report
from tpubench.study.run import cell_records, cells, execute, measured
from tpubench.study.spec import spec

LSTM = "PTB LSTM training needs about 2 vCPUs and 1 GB of memory"
GRID = [(v, m) for v in (1, 2, 4) for m in ("512 MiB", "1 GiB", "2 GiB", "4 GiB")]


def _results(tmp_path, rates: dict, capped=(), repeats=3):
    """gpu_host_sizing at full scale: RATES maps (vcpus, memory label) -> mean rate; the
    CAPPED cells have a record that failed at its memory cap."""
    study = spec.load("gpu_host_sizing", forms.FORMS, findings.CHECKS)
    all_cells = cells.expand(study, "full")
    got = {}
    for c in all_cells:
        if c.part.name != "lstm":
            continue
        key = (c.setup.vcpus, c.setup.label.split(" vCPU ")[1])
        if key in rates:
            r = rates[key]
            got[c.id] = _m(c, [r * 0.99, r, r * 1.01][:repeats])
        if key in capped:
            record = {
                "schema_version": 1,
                "run_id": f"r-{c.id}",
                "kind": "train",
                "status": "failed",
                "run_label": c.id,
                "memory_limit_bytes": 1,
                "error": "the run died (SIGABRT) under its memory cap of 512 MiB (...)",
            }
            (tmp_path / f"r-{c.id}.json").write_text(json.dumps(record))
    found = records.by_label(str(tmp_path))  # as collect() reads them
    capped_ids = measured.capped_cells(all_cells, got, found)
    return measured.Results(
        study, "full", HOST, str(tmp_path), tuple(all_cells), got, {}, repeats=3, capped=capped_ids
    )


def _lstm(results):
    return next(v for v in findings.check_all(results) if v.finding == LSTM)


def _grid(knee_vcpus: int, knee_memory: str):
    memories = ["512 MiB", "1 GiB", "2 GiB", "4 GiB"]
    out = {}
    for v, m in GRID:
        rate = 100.0 * min(v, knee_vcpus)
        if memories.index(m) < memories.index(knee_memory):
            rate *= 0.7  # a tight cap slows it (a smaller allocator arena, say)
        out[(v, m)] = rate
    return out


def test_sizing_holds_at_2_vcpus_and_1_gib_with_the_smallest_cap_failed(tmp_path):
    rates = {k: v for k, v in _grid(2, "1 GiB").items() if k[1] != "512 MiB"}
    capped = [(v, "512 MiB") for v in (1, 2, 4)]
    v = _lstm(_results(tmp_path, rates, capped))
    assert v.verdict == "holds", v
    assert "stops gaining at 2 vCPUs and needs a 1 GiB cap" in v.measured
    assert "failed at its cap: 512 MiB" in v.measured


def test_sizing_does_not_hold_when_only_4_gib_is_within_5_percent(tmp_path):
    rates = {k: v for k, v in _grid(2, "4 GiB").items() if k[1] != "512 MiB"}
    capped = [(v, "512 MiB") for v in (1, 2, 4)]
    v = _lstm(_results(tmp_path, rates, capped))
    assert v.verdict == "does not hold here", v
    assert "needs a 4 GiB cap" in v.measured


def test_sizing_waits_for_every_cell_and_for_the_repeats(tmp_path):
    rates = _grid(2, "1 GiB")
    del rates[(4, "4 GiB")]
    v = _lstm(_results(tmp_path, rates))
    assert v.verdict.startswith("not measured (needs"), v
    v = _lstm(_results(tmp_path / "..", _grid(2, "1 GiB"), repeats=2))
    assert v.verdict == "not judged (needs 3 runs per cell; has 2)"


def test_a_2_vcpu_host_says_what_it_measured_and_needs_only_the_4_vcpu_cells(tmp_path):
    # What a 2-core host records: 1 and 2 vCPUs, 512 MiB dying at its cap.
    rates = {k: v for k, v in _grid(2, "1 GiB").items() if k[1] != "512 MiB" and k[0] != 4}
    results = _results(tmp_path, rates, capped=[(1, "512 MiB"), (2, "512 MiB")])
    four = {c.id for c in results.cells if c.part.name == "lstm" and c.setup.vcpus == 4}
    results = dataclasses.replace(results, blocked={i: "4 vCPUs; this host has 2" for i in four})
    v = _lstm(results)
    # The capped cells are results: the verdict needs the 4-vCPU cells only, not a rerun.
    assert v.verdict == "not measured (needs 4 vCPUs; this host has 2)", v
    assert "so far: 1 vCPU 100.0/s, 2 vCPU 200.0/s, the best of each count's caps" in v.measured
    assert "failed at its cap: 512 MiB" in v.measured
    text = report.render(results, [])
    assert re.search(
        r"cell\(s\) at --scale=full: 6 measured, 2 failed at their memory cap, 4 not", text
    )
    row = next(x for x in text.splitlines() if x.startswith("| ptb_lstm"))
    assert row.split(" | ")[1:3] == ["died at its cap", "100.0 (97.5–102.5)"]


def test_a_run_at_its_cap_is_a_result_the_study_does_not_rerun(tmp_path):
    study = spec.load("gpu_host_sizing", forms.FORMS, findings.CHECKS)
    one, two = [c for c in cells.expand(study, "full") if c.setup.memory][:2]
    cap = "the run reached its memory cap of 512 MiB (--memory_limit, RLIMIT_DATA): ..."
    for cell, run_id, error in ((one, "r1", cap), (two, "r2", "NotFoundError: gone")):
        rec = study_records.record(cell, run_id, None, status="failed")
        rec.update(memory_limit_bytes=2**29, error=error)
        (tmp_path / f"{run_id}.json").write_text(json.dumps(rec))
    splits = cell_records.of_cells([one, two], str(tmp_path))
    assert execute.done_counts(splits) == {one.id: 1, two.id: 0}


def test_setups_carry_the_memory_cap_and_the_read_rate_as_flags():
    study = spec.load("gpu_host_sizing", forms.FORMS, findings.CHECKS)
    by_label = {c.setup.label: c for c in cells.expand(study, "full")}
    lstm = by_label["2 vCPU 1 GiB"].flags(HOST, "out", None)
    assert lstm["memory_limit"] == "1GiB" and lstm["num_intra_threads"] == 2
    slow = by_label["standard cloud disk"].flags(HOST, "out", "photos")
    assert slow["read_mb_per_s"] == 60 and slow["data_dir"] == "photos"
    assert "read_mb_per_s" not in by_label["local disk"].flags(HOST, "out", "photos")
    # Smoke runs the scale's named setups only.
    smoke = {c.setup.label for c in cells.expand(study, "smoke") if c.part.name == "lstm"}
    assert smoke == {"2 vCPU 1 GiB"}


@pytest.mark.parametrize(
    "setup, words",
    [
        ("{label: a, memory: lots}", "memory='lots' is not a size"),
        ("{label: a, read_mb_per_s: 0}", "read_mb_per_s=0 must be a number of MB/s from 0.1"),
    ],
)
def test_bad_memory_or_read_rate_in_a_study_file(tmp_path, setup, words):
    path = tmp_path / "s.yaml"
    path.write_text(
        "form: {kind: knee, part: p}\nparts:\n  - name: p\n    models: [mnist_mlp]\n"
        f"    setups:\n      - {setup}\n"
        "    scale: {smoke: {train_steps: 2}, full: {train_steps: 2}}\n"
    )
    with pytest.raises(errors.UsageError) as e:
        spec.load(str(path), forms.FORMS, findings.CHECKS)
    assert words in str(e.value)
