"""Contender for bench/overhead.py: Keras 3 `model.fit` on tpubench's model.

Builds the registered model and optimizer exactly as tpubench does
(bench/_common.py), compiles it with sparse categorical cross-entropy from
logits and Keras's defaults otherwise (steps_per_execution=1, jit_compile
"auto", which is off on a CPU-only machine), and fits it on one synthetic
batch repeated by `tf.data.Dataset.from_tensors(batch).repeat()`.  A callback
timestamps `on_train_batch_end` (once per execution with
--steps_per_execution); examples/sec is taken over the steps after
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
    p.add_argument("--precision", default="fp32", choices=("fp32", "bf16", "fp16"))
    p.add_argument(
        "--jit_compile",
        default="auto",
        choices=("auto", "true", "false"),
        help="compile()'s jit_compile ('auto': Keras's default, XLA on a GPU)",
    )
    p.add_argument("--steps_per_execution", type=int, default=1, help="compile()'s")
    args = p.parse_args()
    import tensorflow as tf

    _common.configure_threads(args.num_intra_threads, args.num_inter_threads)
    import keras

    _, _, model, optimizer, (x, y) = _common.build(
        args.model, args.batch_size, args.seed, args.precision
    )
    jit = {"auto": "auto", "true": True, "false": False}[args.jit_compile]
    # Under mixed_float16 Keras wraps the optimizer in a LossScaleOptimizer itself.
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit,
        steps_per_execution=args.steps_per_execution,
    )
    dataset = tf.data.Dataset.from_tensors((x, y)).repeat()

    ends: list[float] = []

    done: list[int] = []  # steps completed at each stamp (one stamp per execution)

    class Stamp(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            ends.append(time.perf_counter())
            done.append(int(batch) + 1)

    t_fit = time.perf_counter()
    history = model.fit(
        dataset, epochs=1, steps_per_epoch=args.steps, callbacks=[Stamp()], verbose=args.verbose
    )
    t_done = time.perf_counter()
    if args.steps_per_execution == 1:
        result = _common.steady_rate(ends, args.warmup_steps, args.batch_size)
    else:  # one stamp per execution: count the steps between the stamps
        first = next((i for i, n in enumerate(done[:-1]) if n >= args.warmup_steps), len(done) - 2)
        first = max(first, 0)
        seconds = ends[-1] - ends[first]
        steps = done[-1] - done[first]
        result = {
            "examples_per_sec": steps * args.batch_size / seconds if seconds > 0 else None,
            "measured_steps": steps,
            "measured_seconds": seconds,
            "warmup_steps": done[first],
        }
    result.update(
        contender="keras_fit",
        model=args.model,
        batch_size=args.batch_size,
        steps=len(ends),
        startup_seconds=round(t_fit - T0, 3),
        first_step_seconds=round(ends[0] - t_fit, 3),
        after_last_step_seconds=round(t_done - ends[-1], 3),
        final_loss=float(history.history["loss"][-1]),
        precision=args.precision,
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
