"""How many examples an epoch holds: the data manifest's count, less what is not read.

On synthetic data an epoch is the model's own dataset size; on real data it
is the manifest's count for the split, less the records --skip_corrupt
leaves unread past the damage in a shard.  Training's plan (epochs, data
ratio) and the eval steps every worker runs in full batches read it.
"""

from __future__ import annotations


def examples_per_epoch(spec, manifest, params: dict, split: str = "train") -> int:
    """Examples the model draws from SPLIT (the model's own figure on synthetic data).

    Under --skip_corrupt (`readable_records` in PARAMS) the records past the
    damage in a shard are not read, so they are not counted either.
    """
    from tpubench.model import model_api

    if manifest is None:
        return spec.examples_per_epoch[split]
    examples = model_api.examples_in(spec, manifest, split, params)
    return examples - _unread(manifest, split, params, examples)


def _unread(manifest, split: str, params: dict, examples: int) -> int:
    """Records of SPLIT that --skip_corrupt leaves unread, where one record is one example."""
    from tpubench.data import manifest as manifest_lib

    readable = params.get("readable_records") or {}
    part = manifest.split(split)
    if not readable or examples != part.examples or not part.file_examples:
        return 0  # nothing damaged, or examples are windows over a token stream
    paths = [manifest_lib.join(manifest.data_dir, f) for f in part.files]
    return sum(
        max(0, n - int(readable[path]))
        for path, n in zip(paths, part.file_examples, strict=True)
        if path in readable
    )
