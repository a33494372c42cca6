"""Restoring a run's checkpoint into its Runner: the newest intact one, or none.

`checkpoints.py` chooses the checkpoint (listed and read back whole); this
module restores it: every variable of the model takes a value of its
shape or the run stops with one line, a checkpoint from an older tpubench
without the dropout state is restored with a warning, and the record gets
its resume fields.  `parts` is what a Runner's checkpoint holds.
"""

from __future__ import annotations

import re

from tpubench.core import errors
from tpubench.run import checkpoints

DROPOUT = "dropout_rng"  # the dropout layers' seed states (model/randomness.py)


def does_not_fit(path: str, model_dir: str, e: Exception) -> errors.UsageError:
    """The one line for a checkpoint that does not give this model all its values."""
    text = str(e)
    count = re.search(r"Found (\d+) Python objects", text)
    name = re.search(r"path=([^\s,>]+)", text) or re.search(r"name (\S+?)(?::0)?\.?$", text)
    shapes = re.search(
        r"shape (\(.*?\)) when attempting to restore variable with shape (\(.*?\))", text
    )
    if shapes:
        what = f"it holds {shapes.group(1)} for a variable of shape {shapes.group(2)}"
    else:
        what = (
            f"{count.group(1) if count else 'some'} of this model's variables have no value there"
        )
    example = f", e.g. {name.group(1)}" if name else ""
    return errors.UsageError(
        f"--model_dir={model_dir}: checkpoint {path} does not fit this model ({what}{example}): "
        "it was made by another model or other --params (--tiny?); give a fresh --model_dir"
    )


def parts(runner, dropout_state: bool = True) -> dict:
    """What RUNNER's checkpoint holds: the network and the step, and in training the
    optimizer and, unless DROPOUT_STATE is False, where each dropout layer's masks are."""
    from tpubench.model import randomness

    out = {"model": runner.model, "global_step": runner.global_step}
    if runner.optimizer is not None:  # inference restores the network and step only
        out["optimizer"] = runner.optimizer
        states = randomness.seed_states(runner.model) if dropout_state else []
        if states:
            out[DROPOUT] = states
    return out


def holds_dropout_state(path: str) -> bool:
    """Whether the checkpoint PATH holds its run's dropout state (an older tpubench's
    does not)."""
    import tensorflow as tf

    return any(name.startswith(f"{DROPOUT}/") for name, _ in tf.train.list_variables(path))


def restore(runner, model_dir: str, ckpt_dir: str, is_chief: bool, warn) -> tuple:
    """(CheckpointManager over CKPT_DIR, the record's resume fields) once RUNNER holds the
    newest intact checkpoint of MODEL_DIR/checkpoints, or its initial values if none.

    Every worker restores the chief's checkpoint (the others only write
    throw-away copies to CKPT_DIR): a worker that started from step 0 would run
    more loops than the chief and wait for it forever.  WARN takes each note
    about damaged files or a state file not used.
    """
    import tensorflow as tf

    from tpubench.storage import inflight

    chief_dir = checkpoints.directory(model_dir)
    with inflight.op("checkpoint restore", chief_dir):
        if is_chief:
            for path in checkpoints.remove_abandoned(chief_dir):
                warn(f"removed {path}, left by a checkpoint save that never finished")
        choice = checkpoints.choose(chief_dir)  # listed and read back, not the state file's word
    if choice.path is None and choice.damaged:
        raise checkpoints.all_damaged(choice, model_dir)
    fields: dict = {}
    if choice.path is not None:
        for note in checkpoints.notes(choice, chief_dir):
            warn(note)
        if choice.damaged:
            fields["damaged_checkpoints"] = [{"file": f, "why": why} for f, why in choice.damaged]
        if choice.state_file and is_chief:
            checkpoints.repair_state(ckpt_dir, choice.path)
    manager = tf.train.CheckpointManager(runner.checkpoint(), ckpt_dir, max_to_keep=2)
    if choice.path is not None:
        whole = holds_dropout_state(choice.path)
        try:  # every variable of this model takes a value of its shape, or nothing trains
            runner.checkpoint(whole).restore(choice.path).assert_existing_objects_matched()
        except (AssertionError, ValueError) as e:
            raise does_not_fit(choice.path, model_dir, e) from None
        if not whole and DROPOUT in parts(runner):
            warn(
                f"checkpoint {choice.path} holds no dropout state (an older tpubench saved "
                "it): the dropout masks start again from the first step's"
            )
        fields["resumed_from_step"] = int(runner.global_step.numpy())
        fields["resumed_from_checkpoint"] = choice.path
    return manager, fields


def check_steps_left(step: int, total_steps: int, model_dir: str) -> None:
    """A checkpoint restored at STEP leaves steps to train of TOTAL_STEPS, or a UsageError."""
    if step >= total_steps:
        raise errors.UsageError(
            f"--model_dir={model_dir} already holds a checkpoint at step {step} "
            f"and --train_steps is {total_steps}: nothing to train (raise --train_steps, "
            "or give a fresh --model_dir)"
        )
