"""Benchmark aid (not a test): what a training step asks of the GPU, per precision, read on CPU.

Builds tpubench's real train loop (`run/runner.Runner`, synthetic batch,
one device, no XLA) for each precision, traces it, and counts the ops of the
traced graph (nested functions included) by type and dtype.  Then it applies
the rules by which TensorFlow's graph optimizer (grappler's remapper,
tensorflow/core/grappler/optimizers/remapper.cc: FindFusedBatchNormEx and
FindFusedBatchNormGradEx) fuses batch norm with what follows it on a GPU in
training:

* forward, `FusedBatchNormV3 -> Relu` and `FusedBatchNormV3 -> AddV2 -> Relu`
  become one cuDNN call (`_FusedBatchNormEx`) only when the data type is
  float16, the layout NHWC, the channels a multiple of 4, the batch norm's
  output has one consumer and cuDNN's persistent batch norm is on
  (`TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT=1`, which tpubench sets);
* backward, `ReluGrad -> FusedBatchNormGradV3` (and the residual's gradient)
  becomes `_FusedBatchNormGradEx` under the same conditions, and never while
  XLA auto-clustering is on.

The CPU build of TensorFlow cannot show this itself (the remapper's cuDNN
check is compiled out without CUDA), so the rules are applied here to the
traced graph.  The output is what a GPU runs as separate kernels in each
precision: every unfused Relu, ReluGrad and residual AddV2 is one
element-wise kernel over a whole activation tensor.

    python bench/step_graph.py [--model=resnet50] [--tiny] [--batch_size=8] \
        [--precisions=fp16,bf16] [--data_format=channels_last] [--json=FILE]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

FIRST_OUTPUTS = ("y", "z", "activations", "output")  # the ops matched below
ELEMENTWISE = ("Relu", "ReluGrad", "AddV2", "Cast", "Mul", "Sub", "Transpose", "Pad")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet50")
    p.add_argument("--tiny", action="store_true", help="the model's tiny variant")
    p.add_argument("--batch_size", type=int, default=8)
    p.add_argument("--precisions", default="fp16,bf16")
    p.add_argument(
        "--data_format", default="channels_last", choices=("channels_last", "channels_first")
    )
    p.add_argument("--json", default=None, help="also write the counts here")
    return p.parse_args(argv)


def _dtype(node) -> str:
    for key in ("T", "DstT", "dtype"):
        if key in node.attr and node.attr[key].type:
            import tensorflow as tf

            return tf.dtypes.as_dtype(node.attr[key].type).name
    return "-"


def traced_nodes(args, precision: str) -> list:
    """Every NodeDef of the traced train loop for PRECISION, nested functions included."""
    import tensorflow as tf

    from tpubench.core import precision as precision_lib
    from tpubench.model import registry
    from tpubench.run import runner as runner_lib

    spec = registry.get(args.model)
    params = registry.resolve_params(spec, {}, tiny=args.tiny)
    params.update(batch_size=args.batch_size, global_batch_size=args.batch_size, seed=1)
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    runner = runner_lib.Runner(
        spec,
        params,
        strategy,
        precision_lib.parse(precision, "--precisions"),
        False,
        data_format=args.data_format,
    )
    batch = runner.synthetic_inputs(seed=1)
    loop = runner.make_train_loop(lambda: batch)
    graph = loop.get_concrete_function(tf.TensorSpec([], tf.int32)).graph.as_graph_def()
    nodes = list(graph.node)
    for fn in graph.library.function:
        nodes.extend(fn.node_def)
    return nodes


def _source(inp: str) -> tuple[str, bool]:
    """An input 'name', 'name:1' (graph) or 'name:y:0' (function body) -> (name, from output 0)."""
    if inp.startswith("^"):
        return inp[1:], False
    parts = inp.split(":")
    if len(parts) == 3:  # a function body names the output argument: y, z, ...
        return parts[0], parts[1] in FIRST_OUTPUTS and parts[2] == "0"
    return parts[0], len(parts) == 1 or parts[1] == "0"


def gpu_fusions(nodes) -> dict:
    """Counts the batch-norm fusions grappler's remapper would make on a GPU (see module doc).

    Shape conditions (channels % 4) are not checked: every batch norm of the
    ResNets has a multiple of 4 channels.
    """
    by_name = {n.name: n for n in nodes}
    consumers = collections.defaultdict(list)  # name -> consumers of its output 0
    for n in nodes:
        for inp in n.input:
            src, first = _source(inp)
            if first:
                consumers[src].append(n.name)

    def fusable_bn(name: str) -> bool:
        n = by_name.get(name)
        if n is None or n.op not in ("FusedBatchNormV3", "FusedBatchNormV2"):
            return False
        fmt = n.attr["data_format"].s.decode() if "data_format" in n.attr else "NHWC"
        return (
            _dtype(n) == "float16"
            and fmt == "NHWC"
            and n.attr["is_training"].b
            and len(consumers[name]) == 1
        )

    bn_relu = bn_add_relu = 0
    fused_relus = set()
    for n in nodes:
        if n.op != "Relu" or not n.input:
            continue
        src, _ = _source(n.input[0])
        if fusable_bn(src):
            bn_relu += 1
            fused_relus.add(n.name)
            continue
        add = by_name.get(src)
        if (
            add is not None
            and add.op in ("AddV2", "Add")
            and len(consumers[src]) == 1
            and any(fusable_bn(_source(i)[0]) for i in add.input[:2])
        ):
            bn_add_relu += 1
            fused_relus.add(n.name)
    # Backward: a batch norm's gradient fed by the ReluGrad of a fused Relu
    # (ReluGrad's second input is that Relu's output).
    relu_grads = set()  # one fused gradient per ReluGrad (the residual's feeds two)
    for n in nodes:
        if n.op not in ("FusedBatchNormGradV3", "FusedBatchNormGradV2") or not n.input:
            continue
        grad = by_name.get(_source(n.input[0])[0])
        if grad is None or grad.op != "ReluGrad" or len(grad.input) < 2:
            continue
        if _dtype(n) == "float16" and _source(grad.input[1])[0] in fused_relus:
            relu_grads.add(grad.name)
    return {"bn_relu": bn_relu, "bn_add_relu": bn_add_relu, "bn_grad_relu_grad": len(relu_grads)}


def summarize(nodes) -> dict:
    ops = collections.Counter(n.op for n in nodes)
    typed = collections.Counter(f"{n.op}[{_dtype(n)}]" for n in nodes if n.op in ELEMENTWISE)
    bns = collections.Counter(
        f"{n.op}[{_dtype(n)}]" for n in nodes if n.op.startswith("FusedBatchNorm")
    )
    fusions = gpu_fusions(nodes)
    fused = fusions["bn_relu"] + fusions["bn_add_relu"]
    return {
        "ops": sum(ops.values()),
        "op_types": dict(ops.most_common()),
        "elementwise": dict(sorted(typed.items())),
        "batch_norm": dict(sorted(bns.items())),
        "gpu_fusions": fusions,
        # What stays a separate element-wise kernel on a GPU after the fusions.
        "gpu_unfused": {
            "Relu": ops["Relu"] - fused,
            "ReluGrad": ops["ReluGrad"] - fusions["bn_grad_relu_grad"],
            "AddV2 (residual)": _residual_adds(nodes) - fusions["bn_add_relu"],
        },
    }


def _residual_adds(nodes) -> int:
    """AddV2 ops over 4-D activations feeding a Relu (the residual additions)."""
    by_name = {n.name: n for n in nodes}
    return sum(
        1
        for n in nodes
        if n.op == "Relu"
        and n.input
        and by_name.get(_source(n.input[0])[0]) is not None
        and by_name[_source(n.input[0])[0]].op in ("AddV2", "Add")
    )


def main(argv=None) -> int:
    args = parse_args(argv)
    out = {}
    for precision in (x for x in args.precisions.split(",") if x):
        out[precision] = summarize(traced_nodes(args, precision))
    names = list(out)
    print(
        f"{args.model}{' --tiny' if args.tiny else ''}, batch {args.batch_size}, "
        f"{args.data_format}: the traced train loop, op counts"
    )
    rows = [("ops in the graph", *(out[p]["ops"] for p in names))]
    keys = sorted({k for p in names for k in out[p]["batch_norm"]})
    keys += sorted({k for p in names for k in out[p]["elementwise"]})
    for k in keys:
        rows.append(
            (k, *(out[p]["batch_norm"].get(k, out[p]["elementwise"].get(k, 0)) for p in names))
        )
    for k in ("bn_relu", "bn_add_relu", "bn_grad_relu_grad"):
        rows.append((f"GPU fusion {k}", *(out[p]["gpu_fusions"][k] for p in names)))
    for k in ("Relu", "ReluGrad", "AddV2 (residual)"):
        rows.append((f"GPU separate {k}", *(out[p]["gpu_unfused"][k] for p in names)))
    width = max(len(r[0]) for r in rows)
    print(f"{'':<{width}}  " + "  ".join(f"{p:>8}" for p in names))
    for r in rows:
        print(f"{r[0]:<{width}}  " + "  ".join(f"{v:>8}" for v in r[1:]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
