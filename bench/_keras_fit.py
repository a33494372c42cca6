"""Contender for bench/overhead.py: Keras 3 `model.fit` on tpubench's model.

Builds the registered model and optimizer exactly as tpubench does
(bench/_common.py), compiles it with sparse categorical cross-entropy from
logits and Keras's defaults otherwise (steps_per_execution=1, jit_compile
"auto", which is off on a CPU-only machine), and fits it on one synthetic
batch repeated by `tf.data.Dataset.from_tensors(batch).repeat()`.  A callback
timestamps `on_train_batch_end`; examples/sec is taken over the steps after
--warmup_steps.  The progress bar is off (verbose=0), which can only help fit.

    .venv/bin/python bench/_keras_fit.py --model=mnist_mlp --batch_size=128 \
        --steps=2000 --warmup_steps=50

Prints one `OVERHEAD_RESULT {json}` line.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import _common  # noqa: E402


def main() -> None:
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("--verbose", type=int, default=0, help="fit's verbose (0: no progress bar)")
    args = p.parse_args()
    import tensorflow as tf

    _common.configure_threads(args.num_intra_threads, args.num_inter_threads)
    import keras

    _, _, model, optimizer, (x, y) = _common.build(args.model, args.batch_size, args.seed)
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    dataset = tf.data.Dataset.from_tensors((x, y)).repeat()

    ends: list[float] = []

    class Stamp(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            ends.append(time.perf_counter())

    t_fit = time.perf_counter()
    history = model.fit(
        dataset, epochs=1, steps_per_epoch=args.steps, callbacks=[Stamp()], verbose=args.verbose
    )
    t_done = time.perf_counter()
    result = _common.steady_rate(ends, args.warmup_steps, args.batch_size)
    result.update(
        contender="keras_fit",
        model=args.model,
        batch_size=args.batch_size,
        steps=len(ends),
        startup_seconds=round(t_fit - T0, 3),
        first_step_seconds=round(ends[0] - t_fit, 3),
        after_last_step_seconds=round(t_done - ends[-1], 3),
        final_loss=float(history.history["loss"][-1]),
        steps_per_execution=int(getattr(model, "steps_per_execution", 1) or 1),
        jit_compile=bool(getattr(model, "jit_compile", False)),
        threads=[
            tf.config.threading.get_intra_op_parallelism_threads(),
            tf.config.threading.get_inter_op_parallelism_threads(),
        ],
    )
    _common.emit(result, T0)


if __name__ == "__main__":
    main()
