"""Benchmark aid (not a test): a training step with tpubench's parts against Keras', one process.

Two copies of the same image classifier train side by side on one fixed
synthetic batch, each its own compiled step (no XLA):

* keras     Keras' Dropout (a 32-bit float drawn for every element),
            TensorFlow's batch norm, 1x1 weight gradients as convolutions
            and TensorFlow's fused optimizer kernel;
* tpubench  what a CPU run builds by default: the zoo's `layers.Dropout`
            (8 or 16 random bits an element), 1x1 weight gradients as
            matrix products and, where the kernels build here, tpubench's
            batch norm, its one-pass bf16 bias and ReLU gradient, its
            one-pass fp32 Adadelta and RMSprop and, in bf16, the weights'
            bf16 copies that those updates keep (docs/cpu.md).

With --compare=weight_copy both contenders are tpubench's, and only the
second ("copies") keeps the bf16 copies: the first ("casts") casts the
weights to bf16 and their gradients back every step, as Keras does.

Rounds alternate the two (each round STEPS steps of each, the order turning
every round), in one process, so the machine's drift between processes
does not enter the ratio.  It prints each contender's median milliseconds
a step with the range and the median of the per-round speed ratios.

    python bench/step_parts.py                                 # mnist_cnn, batch 32, fp32
    python bench/step_parts.py --precision=bf16 --rounds=20    # on a CPU with AMX
    python bench/step_parts.py --precision=bf16 --compare=weight_copy
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
    p.add_argument("--model", default="mnist_cnn")
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--steps", type=int, default=40, help="steps of each contender a round")
    p.add_argument("--tiny", action="store_true", help="the model's tiny variant (for tests)")
    p.add_argument("--compare", choices=tuple(CONTENDERS), default="parts")
    return p.parse_args(argv)


# --compare: {name: (tpubench's parts, bf16 weight copies)} for the two contenders.
CONTENDERS = {
    "parts": {"keras": (False, False), "tpubench": (True, True)},
    "weight_copy": {"casts": (True, False), "copies": (True, True)},
}


def _classifier(name: str, tiny: bool):
    """(spec, params, image shape) of an image classifier; SystemExit with one line otherwise."""
    import tensorflow as tf

    from tpubench.core import errors
    from tpubench.model import registry

    try:
        spec = registry.get(name)
    except errors.UsageError as e:
        raise SystemExit(f"error: {e}") from None
    params = registry.resolve_params(spec, {}, tiny=tiny)
    image, label = spec.element_spec(params)
    if image.dtype != tf.float32 or len(image.shape) != 3 or label.shape != []:
        raise SystemExit(f"error: --model={name}: not an image classifier; try mnist_cnn, resnet50")
    return spec, params, list(image.shape)


def make_step(spec, params, images, labels, precision: str, ours: bool, copies: bool = True):
    """A compiled training step of a freshly built model, with Keras' parts or tpubench's
    (and, with COPIES, the bf16 weight copies where the parts keep them)."""
    import keras
    import tensorflow as tf

    from tpubench.model import cpu_ops, layers, model_api, own_kernels, weight_copy

    own = ours and cpu_ops.available()[0]
    keras.utils.set_random_seed(1)
    keras.mixed_precision.set_global_policy("mixed_bfloat16" if precision == "bf16" else "float32")
    saved = layers.Dropout
    layers.Dropout = saved if ours else keras.layers.Dropout  # models look it up as they build
    try:
        with layers.building("channels_last", pointwise_matmul=ours, own_cpu_kernels=own):
            model = spec.build_model(model_api.RunParams(params))
        with own_kernels.use(own):
            opt = spec.build_optimizer(model_api.RunParams(params))
    finally:
        layers.Dropout = saved
        keras.mixed_precision.set_global_policy("float32")
    opt.build(model.trainable_variables)
    kept = weight_copy.attach(model, opt if copies else None, tf.distribute.get_strategy())
    run_params = model_api.RunParams(params)

    @tf.function
    def step():
        with kept.kept():
            with tf.GradientTape() as tape:
                out = spec.model_fn(model, images, labels, model_api.Mode.TRAIN, run_params)
                loss = tf.reduce_mean(out.per_example_loss)
                if out.aux_loss is not None:
                    loss += out.aux_loss
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    return step


def measure(args) -> dict[str, list[float]]:
    """{contender: [ms a step, one per round]}."""
    import tensorflow as tf

    spec, params, shape = _classifier(args.model, args.tiny)
    params = {**params, "global_batch_size": args.batch_size, "seed": 1}
    images = tf.random.stateless_uniform([args.batch_size, *shape], seed=[1, 2])
    classes = int(params.get("num_classes", 10))
    labels = tf.random.stateless_uniform(
        [args.batch_size], seed=[3, 4], maxval=classes, dtype=tf.int32
    )
    steps = {
        name: make_step(spec, params, images, labels, args.precision, ours, copies)
        for name, (ours, copies) in CONTENDERS[args.compare].items()
    }
    for step in steps.values():  # trace and warm up
        for _ in range(3):
            step()
    ms = {name: [] for name in steps}
    order = list(steps)
    for r in range(args.rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            for _ in range(args.steps):
                loss = steps[name]()
            float(loss)
            ms[name].append((time.perf_counter() - start) / args.steps * 1e3)
    return ms


def report(args, ms: dict[str, list[float]]) -> str:
    lines = [
        f"{args.model} train, batch {args.batch_size}, {args.precision}, "
        f"{args.rounds} rounds of {args.steps} steps:"
    ]
    for name, ts in ms.items():
        lines.append(
            f"  {name:>8}: {statistics.median(ts):.2f} ms a step ({min(ts):.2f}-{max(ts):.2f})"
        )
    base, new = list(ms)
    speed = [k / t for k, t in zip(ms[base], ms[new], strict=True)]
    lines.append(
        f"  {new}'s speed / {base}': {statistics.median(speed):.3f}x "
        f"({min(speed):.3f}-{max(speed):.3f})"
    )
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    print(report(args, measure(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
