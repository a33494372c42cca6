"""Benchmark aid (not a test): one part of a training step, tpubench's against TensorFlow's.

Times the part's forward and backward pass (a compiled `tf.function`, no
XLA) for each contender.  --part=dropout: TensorFlow's `stateless_dropout`,
which Keras' Dropout layer runs and which draws a 32-bit float for each
element, against `layers.dropout`, which draws 8 bits (rates that are
multiples of 1/256) or 16 bits.  --part=bias_relu: a layer's bias and ReLU,
relu(x + bias), whose gradient is TensorFlow's `ReluGrad` then
`BiasAddGrad` against tpubench's one-pass kernel (`cpu_ops.bias_relu`).
Rounds alternate the contenders, each round times REPEATS calls per
contender; an empty function of the same signature is timed too and taken
off both, so the ratio is of the part's own time.  It prints each
contender's median milliseconds with their range and the median ratio.

    python bench/one_part.py                      # mnist_cnn's conv dropout: 32x12x12x64, rate 0.25
    python bench/one_part.py --shape=32,128 --rate=0.5 --dtype=bfloat16
    python bench/one_part.py --part=bias_relu --shape=32,24,24,64 --dtype=bfloat16
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--part", choices=("dropout", "bias_relu"), default="dropout")
    p.add_argument("--shape", default="32,12,12,64", help="comma-separated dimensions")
    p.add_argument("--rate", type=float, default=0.25, help="dropout's rate")
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeats", type=int, default=200, help="calls a contender per round")
    args = p.parse_args(argv)
    args.shape = [int(d) for d in args.shape.split(",")]
    if not 0 < args.rate < 1:
        p.error(f"--rate={args.rate}: expected a number strictly between 0 and 1")
    return args


def contenders(part: str, rate: float) -> dict:
    """{name: fn(x, seed, bias)}: "nothing" (the empty function), then TensorFlow's and ours."""
    import tensorflow as tf

    from tpubench.model import layers

    if part == "bias_relu":
        from tpubench.model import cpu_ops

        built, why = cpu_ops.available()
        if not built:
            raise SystemExit(f"error: --part=bias_relu needs tpubench's CPU kernels: {why}")
        return {
            "nothing": lambda x, seed, bias: x + bias,
            "tensorflow": lambda x, seed, bias: tf.nn.relu(tf.nn.bias_add(x, bias)),
            "tpubench": lambda x, seed, bias: cpu_ops.bias_relu(x, bias),
        }
    return {
        "nothing": lambda x, seed, bias: x,
        "tensorflow": lambda x, seed, bias: tf.nn.experimental.stateless_dropout(x, rate, seed),
        "tpubench": lambda x, seed, bias: layers.dropout(x, rate, seed),
    }


def step_fn(fn, weight):
    """The part's forward and backward pass; the gradient reaching it is WEIGHT (dense, as
    a next layer's would be), and the call returns one number, so no tensor the size of the
    input is handed back each call."""
    import tensorflow as tf

    @tf.function
    def step(x, seed, bias):
        with tf.GradientTape() as tape:
            tape.watch([x, bias])
            y = fn(x, tf.stack([seed, 7]), bias)
            loss = tf.reduce_sum(tf.cast(y * weight, tf.float32))
        grads = tape.gradient(loss, [x, bias], unconnected_gradients="zero")
        return tf.add_n([tf.reduce_sum(tf.cast(g, tf.float32)) for g in grads])

    return step


def measure(args) -> dict[str, list[float]]:
    """{contender: [ms a call, one per round]}, the empty function's time taken off."""
    import tensorflow as tf

    dtype = getattr(tf, args.dtype)
    x = tf.random.stateless_normal(args.shape, seed=[1, 2], dtype=dtype)
    bias = tf.random.stateless_normal(args.shape[-1:], seed=[3, 4], dtype=dtype)
    weight = tf.random.stateless_normal(args.shape, seed=[5, 6], dtype=dtype)
    parts = contenders(args.part, args.rate)
    steps = {name: step_fn(fn, weight) for name, fn in parts.items()}
    for step in steps.values():  # trace and warm up
        for i in range(5):
            step(x, tf.constant(i), bias)
    raw = {name: [] for name in steps}
    order = list(steps)
    for r in range(args.rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            for i in range(args.repeats):
                out = steps[name](x, tf.constant(i), bias)
            out.numpy()
            raw[name].append((time.perf_counter() - start) / args.repeats * 1e3)
    base = raw.pop("nothing")
    return {name: [t - b for t, b in zip(ts, base, strict=True)] for name, ts in raw.items()}


def report(args, ms: dict[str, list[float]]) -> str:
    shape = "x".join(map(str, args.shape))
    part = f"dropout {args.rate}" if args.part == "dropout" else "bias and ReLU"
    what = f"{part} on {shape} {args.dtype}"
    lines = [f"{what}, forward and backward, {args.rounds} rounds:"]
    for name, ts in ms.items():
        lines.append(f"  {name:>10}: {statistics.median(ts):.3f} ms ({min(ts):.3f}-{max(ts):.3f})")
    if min(map(statistics.median, ms.values())) <= 0:
        lines.append("  no ratio: a part this small is within the empty step's noise")
        return "\n".join(lines)
    ratios = [a / b for a, b in zip(ms["tensorflow"], ms["tpubench"], strict=True) if b > 0]
    if ratios:
        lines.append(
            f"  tensorflow/tpubench: {statistics.median(ratios):.2f}x "
            f"({min(ratios):.2f}-{max(ratios):.2f})"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    print(report(args, measure(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
