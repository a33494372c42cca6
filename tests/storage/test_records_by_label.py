"""records.by_label: how study, tune and the launcher find a labelled run's records (resume)."""

import json

from tpubench.storage import records


def _record(path, **fields):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schema_version": 1, "run_id": path.stem, **fields}))


def test_records_by_label_oldest_start_first_typed_and_only_records(tmp_path):
    _record(tmp_path / "b.json", run_label="cell-1", status="failed", started="2026-01-02T00:00:00")
    _record(
        tmp_path / "a.json",
        run_label="cell-1",
        status="ok",
        started="2026-01-03T00:00:00",
        results={"examples_per_sec": 12.5},
    )
    _record(tmp_path / "c.json", run_label="cell-2", status="invalid")
    _record(tmp_path / "unlabelled.json", status="ok")
    # Not records, or not where records are: a manifest, a checkpoint's JSON, a
    # prepared data set's, a stray file, a record with a section of the wrong shape.
    (tmp_path / "host_load.json").write_text("{}")
    (tmp_path / "notes.json").write_text("not json")
    _record(tmp_path / "model_dirs" / "cell-1" / "x.json", run_label="cell-1", status="ok")
    _record(tmp_path / "data" / "d" / "y.json", run_label="cell-1", status="ok")
    _record(tmp_path / "bad.json", run_label="cell-1", status="ok", results=[1, 2])

    found = records.by_label(str(tmp_path))

    assert sorted(found) == ["cell-1", "cell-2"]
    first, latest = found["cell-1"]
    assert (first.run.status, latest.run.status) == ("failed", "ok")
    assert latest.path == str(tmp_path / "a.json") and latest.run.results.examples_per_sec == 12.5
    assert latest.record["run_label"] == "cell-1"
    assert [f.run.status for f in found["cell-2"]] == ["invalid"]
    assert "invalid" in records.DONE_STATUSES and "failed" not in records.DONE_STATUSES


def test_a_results_dir_not_made_yet_has_no_records(tmp_path):
    assert records.by_label(str(tmp_path / "not-yet")) == {}
    assert records.scan(str(tmp_path / "not-yet")) == []
