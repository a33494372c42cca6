"""`tpubench peak [--reprobe] [--format=json]`: the peaks MFU is measured against.

Shows this CPU's measured matmul peak per native precision at one thread count
(`--num_intra_threads`, default: every core), the cache they live in, and, for each visible
GPU, its datasheet rows beside a measured matmul peak per precision.
"""

from __future__ import annotations

import json
import os

from absl import flags

from tpubench.cli import tflog
from tpubench.core import errors, safe_text
from tpubench.core import precision as precision_lib
from tpubench.hardware import matmul_probe, peaks, probe
from tpubench.storage import cache

FLAGS = flags.FLAGS

FORMATS = ("table", "json")


def collect(reprobe: bool = False, threads: int | None = None) -> dict:
    """Measures (or reads from the cache) every peak shown by `tpubench peak`.

    TensorFlow fixes its thread pool once, so one call probes one thread count:
    `threads` (0/None: this host's cores), set before TensorFlow's first op.
    """
    import tensorflow as tf

    cpu = probe.cpu()
    threads = threads or len(os.sched_getaffinity(0))
    rows = []
    for precision in peaks.cpu_precisions(cpu.get("isa", [])):
        for t in (threads,):
            entry = peaks.cpu_peak(cpu["model"], t, precision, reprobe=reprobe)
            rows.append({k: entry[k] for k in ("precision", "threads", "flops", "method")} | {
                "cached": entry["cached"], "busy_percent": entry.get("busy_percent"),
                "kind": entry.get("kind"), "measured": entry.get("measured"),
                "note": entry.get("note", "")})  # fmt: skip
    gpus = []
    for dev in tf.config.list_physical_devices("GPU"):
        name = tf.config.experimental.get_device_details(dev).get("device_name", dev.name)
        key = peaks.accelerator_key(name)
        sheet_rows = []
        for precision, sheet in peaks.DATASHEET.get(key or "", {}).items():
            measured = None
            if precision in precision_lib.ALL and not gpus:  # probe the first GPU
                measured = (matmul_probe.gpu(precision) or {}).get("flops")
            sheet_rows.append(
                {"precision": precision, "datasheet_tflops": sheet.tflops, "math": sheet.math,
                 "source": sheet.source, "measured_tflops": measured and measured / 1e12}
            )  # fmt: skip
        gpus.append({"name": name, "key": key, "rows": sheet_rows})
        break  # like devices: the first one speaks for the others
    return {
        "cpu": {
            "model": cpu["model"],
            "isa": cpu.get("isa", []),
            "amx": cpu.get("amx", "absent"),
            "peaks": rows,
        },
        "cache": cache.path(peaks.CACHE_FILE),
        "gpus": gpus,
    }


def render(data: dict, fmt: str) -> str:
    if fmt not in FORMATS:
        raise errors.unknown("--format", fmt, FORMATS)
    if fmt == "json":
        return json.dumps(data, indent=2)
    native = ", ".join(peaks.cpu_precisions(data["cpu"]["isa"]))
    out = [
        f"CPU {data['cpu']['model']} (native: {native}; AMX: {data['cpu'].get('amx', 'absent')})"
    ]
    for r in data["cpu"]["peaks"]:
        how = r.get("kind") or ("cached" if r["cached"] else "measured now")
        if r["cached"] and r.get("measured"):
            how += f" of {r['measured']}"
        out.append(
            f"  {r['precision']:<5} {r['threads']:>3} thread(s)  {r['flops'] / 1e9:>10,.1f} GFLOP/s"
            f"  ({r['method']}; {how})"
        )
        if r.get("note"):
            out.append(f"        {r['note']}")
    out.append(f"cache: {data['cache']} (refresh: tpubench peak --reprobe)")
    for g in data["gpus"]:
        out.append(f"GPU {g['name']} (datasheet key {g['key'] or 'unknown'})")
        for r in g["rows"]:
            measured = (
                f"measured {r['measured_tflops']:,.1f} "
                f"({100 * r['measured_tflops'] / r['datasheet_tflops']:.0f}% of the datasheet)"
                if r["measured_tflops"]
                else "not measured"
            )
            out.append(
                f"  {r['precision']:<10} datasheet {r['datasheet_tflops']:>8,.1f} TFLOP/s "
                f"({r['math']}); {measured}"
            )
    if not data["gpus"]:
        out.append("no GPU visible: datasheet rows are in docs/cost.md")
    return "\n".join(out)


def define():
    flags.DEFINE_bool("reprobe", False, "Measure the CPU peaks afresh (on a quiet machine).")
    flags.DEFINE_string("format", "table", "Output format: table or json.")
    flags.DEFINE_integer(
        "num_intra_threads",
        0,
        "Thread count to probe besides 1 (0: this host's cores).",
        lower_bound=0,
    )


def main(args: list[str], full_argv: list[str]) -> int:
    if args:
        raise errors.UsageError(f"tpubench peak takes no arguments, got {' '.join(args)!r}")
    if FLAGS.format not in FORMATS:
        raise errors.unknown("--format", FLAGS.format, FORMATS)

    def threads():
        import tensorflow as tf

        if FLAGS.num_intra_threads:
            tf.config.threading.set_intra_op_parallelism_threads(FLAGS.num_intra_threads)

    tflog.import_tensorflow(threads)
    text = render(collect(FLAGS.reprobe, FLAGS.num_intra_threads), FLAGS.format)
    print(safe_text.block(text))  # the cached peaks file is read back
    return 0
