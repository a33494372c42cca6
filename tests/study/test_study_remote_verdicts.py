"""A remote cell's findings: the records the launcher copies home, one per repeat, each
labelled with the cell id, are judged like local runs (one record per cell is not enough)."""

from __future__ import annotations

import study_records

from tpubench.study.report import findings, forms
from tpubench.study.run import cells, measured
from tpubench.study.spec import spec

BILSTM = "the GPU trains the bidirectional LSTM at most 0.6x as fast as any CPU machine"
EVERY = ("1 GPU", "8 vCPU", "16 vCPU", "32 vCPU", "64 vCPU")


def test_records_of_a_remote_cells_repeats_give_it_a_verdict(tmp_path):
    """What the launcher copies home (3 records per label) is judged like local runs."""
    study = spec.load("cpu_vs_gpu", forms.FORMS, findings.CHECKS)
    all_cells = cells.expand(study, "full")
    host = cells.Host((0, 1), 0, "", False)  # this host runs none of them

    def verdict(runs: int) -> str:
        r = tmp_path / f"runs{runs}"
        r.mkdir()
        for c in all_cells:
            if c.model.model == "imdb_bilstm" and c.setup.label in EVERY:
                rate = 100.0 if c.setup.label == "1 GPU" else 200.0
                for k in range(runs):
                    study_records.write(r, c, f"{c.id}-{k}", rate + k)
        results = measured.collect(study, all_cells, host, str(r), "full", lambda c: None, "on gce")
        return next(v for v in findings.check_all(results) if v.finding == BILSTM).verdict

    assert verdict(1) == "not judged (needs 3 runs per cell; has 1)"  # one run per cell
    assert verdict(3) == "holds"
