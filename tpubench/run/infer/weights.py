"""Weights for inference: random, or a training run's checkpoint."""

from __future__ import annotations

from tpubench.core import errors
from tpubench.run import checkpoints
from tpubench.storage import any_path


def load(runner, spec, cfg) -> dict:
    """The record's `weights`: random, or restored from --checkpoint / --model_dir."""
    if not (cfg.checkpoint or cfg.model_dir):
        return {
            "source": "random_init",
            "seed": cfg.seed,
            "note": "random initial weights: timings are valid, predictions are not",
        }
    flag = "--checkpoint" if cfg.checkpoint else "--model_dir"
    path = find_checkpoint(cfg.checkpoint or cfg.model_dir, flag)
    checkpoints.check_files(path)
    try:
        status = runner.checkpoint().restore(path)
        status.assert_existing_objects_matched()
        status.expect_partial()  # the optimizer's slots are not needed to predict
    except Exception as e:  # noqa: BLE001 - shape mismatches, missing variables, bad files
        first = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        raise errors.UsageError(
            f"{flag}: checkpoint {path} does not fit model {spec.name!r} with these "
            f"--params/--tiny ({first}); give the training run's --model, --tiny and --params"
        ) from None
    return {"source": "checkpoint", "path": path, "step": int(runner.global_step.numpy())}


def find_checkpoint(path: str, flag: str) -> str:
    """A checkpoint prefix from a prefix, a checkpoint directory or a training model_dir."""
    import tensorflow as tf

    if tf.io.gfile.exists(path + ".index"):
        return path
    for directory in (checkpoints.directory(path), path):
        if tf.io.gfile.isdir(directory):
            any_path.check_regular(directory.rstrip("/") + "/checkpoint", checkpoints.STATE_WHAT)
            latest = tf.train.latest_checkpoint(directory)
            if latest:
                return latest
    raise errors.DataError(
        f"{flag}={path} holds no checkpoint (expected a prefix like DIR/checkpoints/ckpt-300, a "
        "directory with a `checkpoint` file, or a training run's model_dir); drop it for random "
        "weights"
    )
