"""The steps that carry an older run record forward to the current schema.

`records.migrate` applies them one version at a time, in memory: files on
disk are never rewritten, and every reader sees one shape.  Each step takes
a copy of a schema-n record (a mapping that `records.migrate` checked is a
record) and returns it in the shape of schema n+1; a section of the wrong
type is left as it is, for the typed view and the report's checks to name.
"""

from __future__ import annotations

# Where a schema-1 record kept its batch besides the top level.  config's keys
# were the flags (None: the model's default), model.params' the runner's keys
# (`batch_size` the per-replica batch, TPUEstimator's name).
_V1_CONFIG_BATCH = ("batch_size", "per_replica_batch_size", "batch_sizes")
_V1_PARAMS_BATCH = ("batch_size", "global_batch_size", "per_replica_batch_size")


def v1_to_v2(record: dict) -> dict:
    """Schema 1 -> 2: the batch once per meaning, at the top level.

    `global_batch_size` (one step over every replica) and
    `per_replica_batch_size` (one replica's batch) stay where schema 1 had them;
    a record without them takes them from its model params (what ran), and a
    global batch from config.batch_size (--batch_size, the global batch) when
    the params name none.  The copies go: config.batch_size,
    config.per_replica_batch_size and config.batch_sizes (the flags as given,
    still in `flags` and `argv`) and model.params' batch_size,
    global_batch_size and per_replica_batch_size.
    """
    config, model = record.get("config"), record.get("model")
    params = model.get("params") if isinstance(model, dict) else None
    params = params if isinstance(params, dict) else {}
    asked = config if isinstance(config, dict) else {}
    found = {
        "global_batch_size": _count(
            record.get("global_batch_size"),
            params.get("global_batch_size"),
            asked.get("batch_size"),
        ),
        "per_replica_batch_size": _count(
            record.get("per_replica_batch_size"),
            params.get("per_replica_batch_size"),
            params.get("batch_size"),
        ),
    }
    out = dict(record)
    for key, value in found.items():
        if key not in out and value is not None:
            out[key] = value
    if isinstance(config, dict):
        out["config"] = {k: v for k, v in config.items() if k not in _V1_CONFIG_BATCH}
    if isinstance(model, dict) and isinstance(model.get("params"), dict):
        kept = {k: v for k, v in model["params"].items() if k not in _V1_PARAMS_BATCH}
        out["model"] = model | {"params": kept}
    return out


def _count(*values) -> int | None:
    """The first of VALUES that is a positive integer (not a bool), else None."""
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


# What a record written before loadgen.traits was, by its scenario: the only place a
# scenario is known by name outside its own module (newer records carry their traits).
_OLD_TRAITS = {
    "server": {"bounded_by_latency": True, "one_query": False},
    "offline": {"bounded_by_latency": False, "one_query": True},
}


def loadgen_traits(record: dict) -> dict:
    """RECORD with loadgen.traits filled in for an `infer --scenario` record written
    before scenarios recorded them (any schema); other records are returned as they are."""
    loadgen, scenario = record.get("loadgen"), record.get("scenario")
    if not isinstance(loadgen, dict) or not isinstance(scenario, str) or "traits" in loadgen:
        return record
    traits = _OLD_TRAITS.get(scenario, {"bounded_by_latency": False, "one_query": False})
    return record | {"loadgen": loadgen | {"traits": dict(traits)}}
