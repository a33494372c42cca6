"""Liveness of `running` records and the model_dir lock, in process (issue 11, items 2, 3).

Real processes for pids (a child that has exited), real files, and the
local GCS server for the gs:// lock object and its generation precondition.
"""

import datetime as dt
import json
import subprocess
import sys

import pytest

from tpubench.run.train import lock
from tpubench.storage import liveness, record_text, records, run_rows


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _record(run_id, **fields):
    return {"schema_version": 1, "run_id": run_id, "kind": "train", "status": "running"} | fields


def test_running_records_are_died_when_the_pid_is_gone_or_the_heartbeat_is_old(tmp_path):
    now = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.timezone.utc)
    old = (now - dt.timedelta(minutes=21)).isoformat()
    fresh = (now - dt.timedelta(minutes=19)).isoformat()
    here = liveness.host()
    cases = {
        "dead-pid": _record("a", pid=_dead_pid(), host=here, heartbeat=fresh),
        "old-beat": _record("b", pid=1, host="other-vm", heartbeat=old),
        "live": _record("c", pid=1, host="other-vm", heartbeat=fresh),
        "this-process": _record("d", pid=__import__("os").getpid(), host=here, heartbeat=fresh),
        "finished": _record("e", pid=_dead_pid(), host=here, heartbeat=old) | {"status": "ok"},
    }
    got = {k: liveness.status(r, now) for k, r in cases.items()}
    assert got == {
        "dead-pid": "died",
        "old-beat": "died",
        "live": "running",
        "this-process": "running",
        "finished": "ok",
    }
    assert "no heartbeat from pid 1 on host other-vm since" in liveness.death(
        cases["old-beat"], now
    )


def test_runs_lists_a_dead_running_record_as_died(tmp_path):
    pid = _dead_pid()
    beat = liveness.now_iso()
    (tmp_path / "x.json").write_text(
        json.dumps(_record("x", pid=pid, host=liveness.host(), heartbeat=beat, started=beat))
    )
    (row,) = run_rows.summary_rows([str(tmp_path)])
    assert row["status"] == "died"


def _holder(run_id):
    return {"run_id": run_id, "since": "2026-11-20T12:00:00+00:00", "record": None}


def test_a_local_lock_is_exclusive_and_taken_over_from_a_dead_holder(tmp_path):
    notes = []
    first = lock.acquire(str(tmp_path / "m"), _holder("one"), False, notes.append)
    with pytest.raises(lock.ModelDirLocked, match=r"in use by run one \(pid \d+ on host"):
        # the same process: pid alive, so the lock is live
        lock.acquire(str(tmp_path / "m"), _holder("two"), False, notes.append)
    first.release()
    assert not (tmp_path / "m" / lock.NAME).exists()
    dead = _dead_pid()
    stale = _holder("gone") | {"pid": dead, "host": liveness.host(), "heartbeat": "x"}
    (tmp_path / "m" / lock.NAME).write_text(json.dumps(stale))
    taken = lock.acquire(str(tmp_path / "m"), _holder("three"), False, notes.append)
    assert json.loads((tmp_path / "m" / lock.NAME).read_text())["run_id"] == "three"
    assert notes == [f"--model_dir={tmp_path / 'm'}: took over the lock of a dead run (pid {dead} "
                     f"is gone on host {liveness.host()})"]  # fmt: skip
    taken.release()


def test_a_gcs_lock_object_is_exclusive_by_its_generation(gcs_env, local_gcs):
    from tpubench.storage import gcs

    model_dir = "gs://tpubench-test/locked-model"
    first = lock.acquire(model_dir, _holder("one"), False, print)
    with pytest.raises(lock.ModelDirLocked, match="in use by run one"):
        lock.acquire(model_dir, _holder("two"), False, print)
    generation = first.generation
    first.refresh()  # the heartbeat replaces the object only while it is ours
    assert first.generation != generation
    assert gcs.replace_if_generation(lock.path_of(model_dir), b"{}", generation) is None
    first.release()
    assert gcs.read_generation(lock.path_of(model_dir)) is None
    # A holder on a lost VM: no heartbeat for 21 minutes.
    old = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=21)).isoformat()
    stale = _holder("lost") | {"pid": 7, "host": "lost-vm", "heartbeat": old}
    assert gcs.create_exclusive(lock.path_of(model_dir), json.dumps(stale).encode())
    notes = []
    taken = lock.acquire(model_dir, _holder("three"), False, notes.append)
    assert "took over the lock of a dead run (no heartbeat from pid 7 on host lost-vm" in notes[0]
    taken.release()


@pytest.mark.parametrize("planted_id", ["../../outside", "x/../../../outside", ".hidden", ""])
def test_a_planted_lock_never_turns_a_read_run_id_into_a_path_outside(tmp_path, planted_id):
    """A dead holder's lock names a `running` record whose run id climbs out of its
    directory: taking the lock over marks nothing, writes nothing outside (issue 42 F)."""
    (tmp_path / "planted").mkdir()
    record = tmp_path / "planted" / "rec.json"
    record.write_text(json.dumps(_record(planted_id, pid=_dead_pid(), host=liveness.host())))
    stale = _holder("gone") | {"pid": _dead_pid(), "host": liveness.host(), "record": str(record)}
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / lock.NAME).write_text(json.dumps(stale))
    before = set(tmp_path.rglob("*"))
    taken = lock.acquire(str(tmp_path / "m"), _holder("three"), False, lambda _: None)
    taken.release()
    assert set(tmp_path.rglob("*")) == before - {tmp_path / "m" / lock.NAME}  # nothing new
    assert not (tmp_path.parent / "outside.json").exists()
    assert json.loads(record.read_text())["status"] == "running"  # no record of its id to mark


def test_a_record_whose_run_id_is_no_file_name_is_refused_by_readers_and_writers(tmp_path):
    (tmp_path / "evil.json").write_text(json.dumps(_record("../evil") | {"status": "ok"}))
    with pytest.raises(record_text.BadRecord, match=r"field 'run_id' '\.\./evil' is not a run id"):
        records.read(str(tmp_path / "evil.json"))
    with pytest.raises(
        record_text.BadRecord, match="would name a file outside the results directory"
    ):
        records.write(_record("a/../../b"), str(tmp_path))
    assert records.path_for(str(tmp_path), "20261128-084050-mnist_mlp-90f8d9").endswith(
        "/20261128-084050-mnist_mlp-90f8d9.json"
    )
