"""Benchmark aid (not a test): the top kernels (or ops) of a TensorFlow profile, as text.

Reads the newest `*.xplane.pb` under DIR (what `tpubench train
--profile_steps=A,B` writes under `<model_dir>/tensorboard`) and sums the
time of its events by name.  On a GPU the events are the kernels and copies
on the device's streams (`/device:GPU:N`, lines `Stream #...`); without one,
the TensorFlow ops of the host's compute threads (`/host:CPU`, lines `tf_*`),
summed by op type.
Prints the total, the top N names with their count, time and share, and the
time by kind (a kernel-name pattern: convolution/GEMM, batch norm,
element-wise, pooling, transpose, copies, other), per profiled step with --steps.

    python bench/profile_top.py MODEL_DIR [--top=25] [--steps=5] [--keep=DIR]
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import shutil
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# First match wins; checked against the lower-cased kernel or op name.
# Eigen's GPU kernels (EigenMetaKernel) are element-wise expressions whose template names
# can read "TensorConversionOp" (a cast), so they are placed before "conv" is looked for.
KINDS = (
    ("batch norm", re.compile(r"batch_?norm|bn_fw|bn_bw|bn_.*kernel|fusedbatchnorm")),
    ("transpose", re.compile(r"transpose|nhwctonchw|nchwtonhwc|swapdimension|shuffling")),
    ("element-wise", re.compile(r"eigenmetakernel|elementwise")),
    ("pooling", re.compile(r"pool")),
    (
        "convolution/GEMM",
        re.compile(r"conv(?!ersion)|gemm|xmma|cutlass|nvjet|sm\d\d_|wgrad|dgrad|matmul|cudnn"),
    ),
    ("element-wise", re.compile(r"eigen|elementwise|relu|add|mul|cast|bias|scalar|_op_|loop_")),
    ("copies", re.compile(r"memcpy|memset|copy")),
)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir", help="a model_dir, its tensorboard folder, or an .xplane.pb file")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--steps", type=int, default=0, help="steps profiled: also per-step times")
    p.add_argument(
        "--keep", default=None, help="copy the profile into this folder too (under --keep_mb)"
    )
    p.add_argument("--keep_mb", type=float, default=30.0)
    return p.parse_args(argv)


def newest_profile(path: str) -> str | None:
    if os.path.isfile(path):
        return path
    found = glob.glob(os.path.join(path, "**", "*.xplane.pb"), recursive=True)
    return max(found, key=os.path.getmtime) if found else None


def events(path: str) -> tuple[str, collections.Counter, collections.Counter]:
    """(which plane, total picoseconds by name, count by name) of the profile at PATH."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    with open(path, "rb") as f:
        space.ParseFromString(f.read())
    gpus = [p for p in space.planes if p.name.startswith("/device:GPU:")]
    if gpus:
        planes, wanted, where = gpus, "Stream", "GPU streams"
    else:
        planes = [p for p in space.planes if p.name == "/host:CPU"]
        wanted, where = "tf_", "host CPU TensorFlow threads (no GPU in the profile)"
    if gpus and not any(ln.name.startswith(wanted) for p in gpus for ln in p.lines):
        # No line named for a stream: every line of the device but the derived op views.
        wanted, where = "", "GPU lines (no 'Stream' line in this profile)"
    total: collections.Counter = collections.Counter()
    count: collections.Counter = collections.Counter()
    for plane in planes:
        names = {k: m.name for k, m in plane.event_metadata.items()}
        for line in plane.lines:
            if not line.name.startswith(wanted) or line.name.endswith(" Ops"):
                continue
            for e in line.events:
                name = names.get(e.metadata_id, "?")
                if not gpus:  # 'scope/name:OpType' by op type; executor internals left out
                    if ":" not in name or "::" in name:
                        continue
                    name = name.rsplit(":", 1)[1]
                total[name] += e.duration_ps
                count[name] += 1
    return where, total, count


def kind(name: str) -> str:
    low = name.lower()
    return next((k for k, pattern in KINDS if pattern.search(low)), "other")


def report(path: str, top: int, steps: int) -> str:
    where, total, count = events(path)
    all_ps = sum(total.values())
    per = f", {steps} step(s) profiled" if steps else ""
    lines = [f"profile: {path}", f"events on: {where}{per}"]
    if not all_ps:
        return "\n".join([*lines, "no events found"])
    div = steps or 1
    lines.append(
        f"total {all_ps / 1e9:,.1f} ms"
        + (f" ({all_ps / 1e9 / div:,.2f} ms a step)" if steps else "")
    )
    kinds: collections.Counter = collections.Counter()
    for name, ps in total.items():
        kinds[kind(name)] += ps
    lines.append("")
    lines.append(f"{'by kind':<24} {'ms':>10} {'share':>7}")
    for k, ps in kinds.most_common():
        lines.append(f"{k:<24} {ps / 1e9 / div:>10.2f} {ps / all_ps:>7.1%}")
    lines.append("")
    lines.append(
        f"{'ms' + (' a step' if steps else ''):>10} {'share':>7} {'count':>7}  kind / name"
    )
    for name, ps in total.most_common(top):
        shown = name if len(name) <= 140 else name[:137] + "..."
        lines.append(
            f"{ps / 1e9 / div:>10.3f} {ps / all_ps:>7.1%} {count[name]:>7}  {kind(name)} / {shown}"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    path = newest_profile(args.dir)
    if path is None:
        print(f"profile_top: no *.xplane.pb under {args.dir}", file=sys.stderr)
        return 2
    print(report(path, args.top, args.steps))
    if args.keep and os.path.getsize(path) <= args.keep_mb * 1e6:
        os.makedirs(args.keep, exist_ok=True)
        shutil.copy(path, args.keep)
        print(f"kept: {os.path.join(args.keep, os.path.basename(path))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
