"""Which prepared data a run reads: --data_dir, --dataset, embedded data or synthetic.

One rule for every command that runs a model (train, infer,
--compare_synthetic): synthetic data excludes a data_dir and a target; a
data_dir's manifest must hold the dataset asked for; with neither, the
model's embedded offline dataset is prepared once and read.
"""

from __future__ import annotations

from tpubench.core import errors
from tpubench.core.config import DataConfig


def check_target(data: DataConfig, target_accuracy: float | None) -> None:
    """A target accuracy needs real data (checked before TensorFlow starts, and here)."""
    if data.use_synthetic_data and target_accuracy is not None:
        raise errors.UsageError(
            f"--target_accuracy={target_accuracy} needs real data to evaluate on; "
            "synthetic data has no accuracy (drop --use_synthetic_data)"
        )


def resolve(data: DataConfig, spec, target_accuracy: float | None = None):
    """(data_dir, manifest) for DATA and model SPEC, or (None, None) for synthetic data."""
    from tpubench.data import embedded
    from tpubench.data import manifest as manifest_lib

    if data.use_synthetic_data:
        if data.data_dir:
            raise errors.UsageError("--use_synthetic_data and --data_dir exclude each other")
        if data.dataset:
            raise errors.UsageError(
                f"--use_synthetic_data and --dataset={data.dataset} exclude each other "
                "(synthetic batches read no dataset)"
            )
        check_target(data, target_accuracy)
        return None, None
    dataset = data.dataset
    if data.data_dir:
        manifest = manifest_lib.read(data.data_dir)
        if dataset and manifest.name != dataset:
            raise errors.UsageError(
                f"--dataset={dataset} but {data.data_dir} holds {manifest.name!r}"
            )
        return data.data_dir, manifest
    if dataset is None:
        dataset = next((d for d in spec.datasets if d in embedded.NAMES), None)
    elif dataset not in spec.datasets:
        raise errors.UsageError(
            f"--dataset={dataset} does not fit model {spec.name!r}; it trains on: "
            f"{', '.join(spec.datasets) or 'its own data'} (or --use_synthetic_data)"
        )
    if dataset in embedded.NAMES:
        path = embedded.ensure_prepared(dataset)
        return path, manifest_lib.read(path)
    wanted = dataset or (spec.datasets[0] if spec.datasets else "its dataset")
    offline = [d for d in spec.datasets if d in embedded.NAMES]
    raise errors.DataError(
        f"model {spec.name!r} needs --data_dir with prepared {wanted} records, or "
        f"--use_synthetic_data; embedded offline data that fits: {', '.join(offline) or 'none'}"
    )


def readable_records(manifest) -> dict:
    """Under --skip_corrupt: {file: readable records} of damaged shards, and a summary."""
    from tpubench.data import integrity

    damage = integrity.scan(manifest)
    summary = {
        "damaged_files": [
            {
                "file": d.file,
                "kind": d.kind,
                "offset": d.offset,
                "readable": d.readable,
                "skipped": d.skipped,
            }
            for d in damage
        ],
        "examples_skipped": sum(d.skipped or 0 for d in damage),
    }
    return {"readable_records": {d.file: d.readable for d in damage}, "summary": summary}


def damaged_shards(manifest, e: BaseException):
    """A DataError naming the damaged shard when E is a TFRecord data loss, else None."""
    if manifest is None:
        return None
    from tpubench.data import integrity

    if not integrity.is_data_loss(e):
        return None
    damage = integrity.scan(manifest)
    if not damage:
        return errors.DataError(f"data loss reading {manifest.data_dir}: {e}")
    try:
        integrity.raise_for(damage, manifest.data_dir)
    except errors.DataError as found:
        return found
    return None
