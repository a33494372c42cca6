"""Benchmark aid (not a test): tpubench's dropout against TensorFlow's, side by side.

Times one dropout forward and backward pass (a compiled `tf.function`, no
XLA) for each contender: TensorFlow's `stateless_dropout`, which Keras'
Dropout layer runs and which draws a 32-bit float for each element, and
`layers.dropout`, which draws 8 bits (rates that are multiples of 1/256)
or 16 bits.  Rounds alternate the two, each round times REPEATS calls per
contender; an empty function of the same signature is timed too and taken
off both, so the ratio is of the dropout's own time.  It prints each
contender's median milliseconds with their range and the median ratio.

    python bench/dropout.py                       # mnist_cnn's conv dropout: 32x12x12x64, rate 0.25
    python bench/dropout.py --shape=32,128 --rate=0.5 --dtype=bfloat16
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
    p.add_argument("--shape", default="32,12,12,64", help="comma-separated dimensions")
    p.add_argument("--rate", type=float, default=0.25)
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeats", type=int, default=200, help="calls a contender per round")
    args = p.parse_args(argv)
    args.shape = [int(d) for d in args.shape.split(",")]
    if not 0 < args.rate < 1:
        p.error(f"--rate={args.rate}: expected a number strictly between 0 and 1")
    return args


def contenders(rate: float) -> dict:
    import tensorflow as tf

    from tpubench.model import layers

    return {
        "nothing": lambda x, seed: x,
        "tensorflow": lambda x, seed: tf.nn.experimental.stateless_dropout(x, rate, seed),
        "tpubench": lambda x, seed: layers.dropout(x, rate, seed),
    }


def step_fn(fn):
    import tensorflow as tf

    @tf.function
    def step(x, seed):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x, tf.stack([seed, 7]))
            loss = tf.reduce_sum(tf.cast(y, tf.float32))
        return tape.gradient(loss, x)

    return step


def measure(args) -> dict[str, list[float]]:
    """{contender: [ms a call, one per round]}, the empty function's time taken off."""
    import tensorflow as tf

    x = tf.random.stateless_normal(args.shape, seed=[1, 2], dtype=getattr(tf, args.dtype))
    steps = {name: step_fn(fn) for name, fn in contenders(args.rate).items()}
    for step in steps.values():  # trace and warm up
        for i in range(5):
            step(x, tf.constant(i))
    raw = {name: [] for name in steps}
    order = list(steps)
    for r in range(args.rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            for i in range(args.repeats):
                out = steps[name](x, tf.constant(i))
            out.numpy()
            raw[name].append((time.perf_counter() - start) / args.repeats * 1e3)
    base = raw.pop("nothing")
    return {name: [t - b for t, b in zip(ts, base, strict=True)] for name, ts in raw.items()}


def report(args, ms: dict[str, list[float]]) -> str:
    shape = "x".join(map(str, args.shape))
    what = f"dropout {args.rate} on {shape} {args.dtype}"
    lines = [f"{what}, forward and backward, {args.rounds} rounds:"]
    for name, ts in ms.items():
        lines.append(f"  {name:>10}: {statistics.median(ts):.3f} ms ({min(ts):.3f}-{max(ts):.3f})")
    if min(map(statistics.median, ms.values())) <= 0:
        lines.append("  no ratio: a dropout this small is within the empty step's noise")
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
