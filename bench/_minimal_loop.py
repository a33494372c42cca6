"""Contender for bench/overhead.py: the smallest honest TF2 training loop.

The same registered model, optimizer and synthetic batch as tpubench
(bench/_common.py); a plain `@tf.function` train step (GradientTape, mean
sparse cross-entropy from logits plus the model's regularisation losses,
`apply_gradients`) called from a Python loop on the one batch held as
constant tensors.  No strategy, no dataset, no callbacks.  Each step's end is
timestamped after reading the loss (which waits for the step); examples/sec
is taken over the steps after --warmup_steps.

    .venv/bin/python bench/_minimal_loop.py --model=resnet50 --batch_size=32 \
        --steps=12 --warmup_steps=2

Prints one `OVERHEAD_RESULT {json}` line.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import _common  # noqa: E402


def main() -> None:
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("--jit_compile", action="store_true", help="compile the step with XLA")
    args = p.parse_args()
    import tensorflow as tf

    _common.configure_threads(args.num_intra_threads, args.num_inter_threads)
    _, _, model, optimizer, (x, y) = _common.build(args.model, args.batch_size, args.seed)
    x = tf.constant(x)
    y = tf.reshape(tf.constant(y), [-1])
    variables = model.trainable_variables

    @tf.function(jit_compile=args.jit_compile)
    def train_step(features, labels):
        with tf.GradientTape() as tape:
            logits = model(features, training=True)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            )
            if model.losses:
                loss += tf.add_n(model.losses)
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables, strict=True))
        return loss

    ends: list[float] = []
    t_loop = time.perf_counter()
    loss = None
    for _ in range(args.steps):
        loss = float(train_step(x, y))
        ends.append(time.perf_counter())
    result = _common.steady_rate(ends, args.warmup_steps, args.batch_size)
    result.update(
        contender="minimal_loop",
        model=args.model,
        batch_size=args.batch_size,
        steps=len(ends),
        startup_seconds=round(t_loop - T0, 3),
        first_step_seconds=round(ends[0] - t_loop, 3),
        final_loss=loss,
        jit_compile=args.jit_compile,
        threads=[
            tf.config.threading.get_intra_op_parallelism_threads(),
            tf.config.threading.get_inter_op_parallelism_threads(),
        ],
    )
    _common.emit(result, T0)


if __name__ == "__main__":
    main()
