"""`tpubench data ACTION`: prepare, list, bench and check datasets.

Flags arrive here already parsed into plain values (flags only at the
edge); each action returns the text to print.
"""

from __future__ import annotations

import json

from absl import flags

from tpubench.cli import argv_checks, configs, tflog
from tpubench.cli import flag_groups as groups
from tpubench.core import errors, safe_text
from tpubench.core.config import DataBenchConfig

FLAGS = flags.FLAGS

ACTIONS = {
    "prepare": "write sharded TFRecords + manifest.json (local or gs://) from a source",
    "list": "list the sources `prepare` accepts (and text datasets, when registered)",
    "bench": "run a model's input pipeline alone: examples/sec and MB/s",
    "check": "read every shard of --data_dir and report corrupted or truncated files",
}


def list_sources(fmt: str) -> str:
    from tpubench.data import prepare as prepare_lib
    from tpubench.data import sources

    rows = [{"dataset": k, "what": v} for k, v in sources.KINDS.items()]
    rows += [{"dataset": k, "what": f"text: {v}"} for k, v in prepare_lib.text_kinds().items()]
    if fmt == "json":
        return json.dumps(rows, indent=2)
    import textwrap

    from tpubench.cli import console_format

    width = max(len(r["dataset"]) for r in rows)
    lines = [f"{'dataset':<{width}}  what"]
    for r in rows:  # descriptions wrap under themselves, within the terminal (100 at most)
        lines += textwrap.wrap(
            f"{r['dataset']:<{width}}  {r['what']}",
            console_format.width(),
            subsequent_indent=" " * (width + 2),
            break_on_hyphens=False,
        )
    lines.append("")
    lines.append("tpubench data prepare --dataset=NAME --output=DIR_OR_GS [--source=...]")
    return "\n".join(lines)


def prepare(dataset, output, options, num_shards, overwrite, fmt) -> str:
    from tpubench.data import prepare as prepare_lib

    if not dataset:
        raise errors.UsageError("--dataset is required (see `tpubench data list`)")
    if not output:
        raise errors.UsageError("--output is required: a local directory or gs://BUCKET/PATH")
    report = prepare_lib.prepare(dataset, output, options, num_shards, overwrite)
    if fmt == "json":
        m = report.manifest
        return json.dumps(
            {
                "manifest": m.to_dict() | {"data_dir": m.data_dir},
                "seconds": round(report.seconds, 3),
                "upload_seconds": round(report.upload_seconds, 3),
                "bytes": report.bytes,
                "examples": report.examples,
                "mb_per_sec": round(report.mb_per_sec, 3),
            },
            indent=2,
        )
    return "\n".join(report.lines())


def check(data_dir: str, fmt: str) -> tuple[str, int]:
    """(text, exit code): 0 when every shard reads cleanly, 3 when some are damaged."""
    from tpubench.data import integrity
    from tpubench.data import manifest as manifest_lib

    if not data_dir:
        raise errors.UsageError("--data_dir is required")
    manifest = manifest_lib.read(data_dir)
    damage = integrity.scan(manifest)
    files = sum(len(s.files) for s in manifest.splits.values())
    if fmt == "json":
        return json.dumps(
            {
                "data_dir": data_dir,
                "files": files,
                "damaged": [d.__dict__ | {"skipped": d.skipped} for d in damage],
            },
            indent=2,
        ), (3 if damage else 0)
    lines = [f"{data_dir}: {files} shard(s) of {manifest.name!r} read"]
    for d in damage:
        lost = f", {d.skipped} record(s) after it lost" if d.skipped is not None else ""
        lines.append(f"  DAMAGED {d.describe()}: {d.readable} good record(s) before it{lost}")
    lines.append("  all shards read cleanly" if not damage else f"  {len(damage)} damaged shard(s)")
    return "\n".join(lines), (3 if damage else 0)


def bench(cfg: DataBenchConfig, argv: list[str], flag_values: dict) -> str:
    """Times the model's input pipeline over cfg.data_dir; the table or JSON to print
    (and a run record in cfg.results_dir when it is given: run/data_bench.py)."""
    from tpubench.run import data_bench  # the command's edge: the run session fits the params

    if not cfg.data_dir:
        raise errors.UsageError("--data_dir is required: a directory from `tpubench data prepare`")
    out = data_bench.bench(cfg, argv, flag_values)
    result, saved = out.result, out.record_path
    if cfg.format == "json":
        extra = {"record_path": saved} if saved else {}
        return json.dumps(
            result.to_dict() | {"model": out.model, "batch_size": out.batch} | extra, indent=2
        )
    cpu = result.host_cpu
    lines = [
        f"input pipeline of {out.model!r} over {cfg.data_dir} ({out.data_format}, "
        f"split {out.split}, batch {out.batch})",
        f"  {result.examples_per_sec:,.1f} examples/s   {result.mb_per_sec:,.2f} MB/s of "
        f"records   ({result.examples:,} examples in {result.seconds:.2f} s after "
        f"{cfg.warmup} warm-up batches; first batch {result.first_batch_seconds:.2f} s)",
        f"  host CPU {cpu.get('system_percent_mean')}% of {cpu.get('cores')} cores "
        f"(this process {cpu.get('process_percent_mean')}%)",
        "  compare with `tpubench train --model=... --use_synthetic_data`: if the model "
        "consumes more examples/s than this, training will be input-bound",
    ]
    return "\n".join(lines + ([f"run record: {saved}"] if saved else []))


def define():
    f = flags
    groups.define_model_module()
    f.DEFINE_string("dataset", None, "prepare: source name (`tpubench data list`).")
    f.DEFINE_string("output", None, "prepare: output directory, local or gs://BUCKET/PATH.")
    f.DEFINE_string(
        "source",
        None,
        "prepare: folder -> the image folder; tfds:NAME -> the TFDS data_dir (local or gs://).",
    )
    f.DEFINE_string("manual_dir", None, "prepare: TFDS manual-download files (imagenet2012).")
    f.DEFINE_enum(
        "record_format",
        "auto",
        ["auto", "raw", "jpeg"],
        "prepare: raw uint8 or JPEG records (auto: raw for small images, JPEG otherwise).",
    )
    f.DEFINE_integer("image_size", None, "prepare: resize raw records to NxN.", lower_bound=8)
    f.DEFINE_integer("examples", None, "prepare photos: training examples.", lower_bound=8)
    f.DEFINE_integer(
        "num_shards", None, "prepare: shards per split (default by size).", lower_bound=1
    )
    f.DEFINE_float(
        "validation_fraction",
        0.1,
        "prepare folder: fraction held out when there is no validation/ folder.",
        lower_bound=0.0,
        upper_bound=0.9,
    )
    f.DEFINE_bool("overwrite", False, "prepare: replace an existing prepared --output.")
    f.DEFINE_integer(
        "seed",
        0,
        "prepare: crops and order; bench: shuffling.",
        lower_bound=0,
        upper_bound=groups.MAX_SEED,
    )
    f.DEFINE_string("data_dir", None, "bench/check: a prepared directory (local or gs://).")
    f.DEFINE_string("model", "resnet50", "bench: the model whose input_fn runs.")
    f.DEFINE_list("params", [], "bench: model hyperparameter overrides, k=v,k=v.")
    f.DEFINE_bool("tiny", False, "bench: the model's tiny variant.")
    f.DEFINE_integer("batch_size", None, "bench: batch size (default: the model's).", lower_bound=1)
    f.DEFINE_integer("batches", 50, "bench: timed batches.", lower_bound=1)
    f.DEFINE_integer("warmup_batches", 5, "bench: batches before timing starts.", lower_bound=0)
    f.DEFINE_enum("split", "train", ["train", "eval"], "bench: which split to read.")
    f.DEFINE_bool("deterministic_input", False, "bench: deterministic input order.")
    f.DEFINE_bool("cache_input", False, "bench: cache records in memory.")
    groups.define_read_rate()
    f.DEFINE_string(
        "results_dir",
        None,
        "bench: write a run record (kind data_bench) here, local or gs:// (default: none).",
    )
    f.DEFINE_string(
        "run_label",
        None,
        "bench: free text stored in the run record as run_label (needs --results_dir).",
    )
    f.DEFINE_enum("format", "table", ["table", "json"], "Output format.")


def _check_before_tensorflow(action: str) -> None:
    """Errors that need no TensorFlow come at once, not after its 4-second start-up."""
    from tpubench.data import manifest, sources

    if action == "prepare" and FLAGS.dataset:
        sources.check_name(FLAGS.dataset)
    if action in ("check", "bench"):
        manifest.check_local(FLAGS.data_dir)
        _check_buckets(FLAGS.data_dir, FLAGS.results_dir if action == "bench" else None)
    if action == "bench" and FLAGS.run_label is not None and not FLAGS.results_dir:
        raise errors.UsageError(
            "--run_label labels the run record; give --results_dir=DIR too (`data bench` "
            "writes a record only when asked)"
        )


def _check_buckets(data_dir: str | None, results_dir: str | None) -> None:
    """gs:// locations readable (and the records' writable), as train checks them: no
    credentials is the one line every command prints, not TensorFlow's libcurl error."""
    from tpubench.storage import gcs

    if data_dir and gcs.is_gcs(data_dir):
        gcs.check_access(data_dir, write=False)
    if results_dir and gcs.is_gcs(results_dir):
        gcs.check_access(results_dir, write=True)
    elif results_dir:  # a file, or a folder under one, or read-only: one line, nothing run
        from tpubench.storage import files

        files.check_writable_dir(results_dir, "--results_dir")


def main(args: list[str], full_argv: list[str]) -> int:
    if not args or args[0] not in ACTIONS:
        given = args[0] if args else ""
        if given:
            raise errors.unknown("data action", given, ACTIONS)
        raise errors.UsageError(
            "usage: tpubench data ACTION [--flags]; actions: " + ", ".join(ACTIONS)
        )
    action = args[0]
    argv_checks.no_positional(args[1:], f"data {action}")
    if action == "list":
        print(safe_text.block(list_sources(FLAGS.format)))
        return 0
    _check_before_tensorflow(action)
    cfg = None
    if action == "bench":  # its flags' usage errors (--params, --model) cost no TensorFlow
        from tpubench.model import shipped

        cfg = configs.data_bench_config()
        shipped.check_name(cfg.model)
        shipped.check_known(cfg.model, cfg.model_modules)
    tflog.import_tensorflow()
    if action == "prepare":
        text = prepare(
            FLAGS.dataset,
            FLAGS.output,
            configs.data_options(),
            FLAGS.num_shards,
            FLAGS.overwrite,
            FLAGS.format,
        )
        print(safe_text.block(text))  # manifests and file names come from outside
        return 0
    if action == "check":
        text, code = check(FLAGS.data_dir, FLAGS.format)
        print(safe_text.block(text))
        return code
    from tpubench.cli import flags as flags_lib

    text = bench(cfg, full_argv, flags_lib.flag_values())
    print(safe_text.block(text))
    return 0
