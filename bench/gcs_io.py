"""Benchmark (not a test): what gs:// writes cost a short training run.

The same short mnist_mlp run (synthetic data) three ways, each in a fresh
process:

* local        --model_dir and --results_dir on local disk;
* gcs_sync     both on gs:// through the local GCS server (tpubench.testing.
               local_gcs) with LATENCY seconds added to every request, and
               --noasync_remote_writes: metric flushes and checkpoint saves
               run between loops, as before;
* gcs_async    the same with --async_remote_writes (the default): metric
               writes on a background thread, checkpoints through
               TensorFlow's async checkpoint thread.

Printed per mode (median over --rounds, rounds alternate the modes): the
process's wall time, the record's training wall time (loops and pauses),
its pauses, the I/O the training thread was blocked on (all of it, and the
part that is the run's end waiting for its last checkpoint and metrics),
and the wall-time ratios against local.

    .venv/bin/python bench/gcs_io.py [--latency=0.1] [--train_steps=1500]
        [--checkpoint_every_steps=500] [--rounds=1] [--before_src=DIR]

--before_src adds a fourth mode, `before`: the gs:// run by an earlier
tpubench source tree (e.g. `git archive COMMIT | tar -x -C DIR`, put first
on PYTHONPATH), against the same server and latency.

The server runs in this process; nothing leaves the machine.  Wall times
include TensorFlow's start-up, so the ratio of the training wall times says
more than the ratio of process wall times.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

MODES = ("local", "gcs_sync", "gcs_async")  # and "before" with --before_src


def _run(mode: str, args, env: dict, workdir: str) -> dict:
    from tpubench.storage import gcs

    tag = uuid.uuid4().hex[:8]
    if mode == "local":
        model_dir, results_dir = f"{workdir}/m-{tag}", f"{workdir}/r-{tag}"
    else:
        model_dir, results_dir = f"gs://tpubench-test/m-{tag}", f"gs://tpubench-test/r-{tag}"
    if mode == "before":
        env = env | {"PYTHONPATH": os.path.abspath(args.before_src)}
    cmd = [
        sys.executable, "-m", "tpubench", "train", "--model=mnist_mlp", "--tiny",
        "--use_synthetic_data", f"--train_steps={args.train_steps}", "--steps_per_loop=10",
        "--log_every_secs=1", f"--model_dir={model_dir}", f"--results_dir={results_dir}",
    ]  # fmt: skip
    if mode != "before":  # an earlier tree may not know the flag
        cmd.append("--noasync_remote_writes" if mode == "gcs_sync" else "--async_remote_writes")
    if args.checkpoint_every_steps:
        cmd.append(f"--checkpoint_every_steps={args.checkpoint_every_steps}")
    t0 = time.perf_counter()
    # Not from the repository root: `python -m` would import ./tpubench first.
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=workdir)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{mode}: exit {proc.returncode}: {proc.stderr.strip()[-500:]}")
    if mode == "local":
        (name,) = [x for x in os.listdir(results_dir) if x.endswith(".json")]
        with open(os.path.join(results_dir, name)) as f:
            record = json.load(f)
    else:
        (url,) = gcs.list_objects(results_dir, ".json")
        record = json.loads(gcs.read_bytes(url))
    r = record["results"]
    return {
        "wall": wall,
        "train_wall": r["train_wall_seconds"],
        "pauses": r["pause_seconds"],
        "blocked": r.get("io_blocked_seconds", 0.0),
        "blocked_final": r.get("io_blocked_final_seconds", 0.0),
        "background": r.get("io_background_seconds", 0.0),
        "warnings": len(record.get("warnings") or []),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per GCS request")
    parser.add_argument("--train_steps", type=int, default=1500)
    parser.add_argument("--checkpoint_every_steps", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--output", help="write the per-round figures here as JSON")
    parser.add_argument("--before_src", help="an earlier tpubench source tree: mode `before`")
    args = parser.parse_args(argv)
    modes = MODES + (("before",) if args.before_src else ())

    from tpubench.testing import local_gcs

    figures: dict[str, list[dict]] = {m: [] for m in modes}
    with (
        tempfile.TemporaryDirectory(prefix="gcs-io-bench-") as workdir,
        local_gcs.LocalGCS() as server,
    ):
        env = dict(os.environ) | server.env()
        os.environ.update(server.env())  # this process reads the gs:// records
        server.delay(r".", args.latency)
        for round_ in range(args.rounds):
            k = round_ % len(modes)
            order = modes[k:] + modes[:k]
            for mode in order:
                figures[mode].append(_run(mode, args, env, workdir))
                f = figures[mode][-1]
                print(
                    f"round {round_ + 1} {mode:<10} wall {f['wall']:7.2f} s  train "
                    f"{f['train_wall']:7.2f} s  blocked {f['blocked']:6.2f} s",
                    flush=True,
                )
    _table(figures, args)
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"args": vars(args), "figures": figures}, f, indent=2)
    return 0


def _table(figures: dict, args) -> None:
    modes = list(figures)
    med = {
        m: {k: statistics.median(f[k] for f in figures[m]) for k in figures[m][0]} for m in modes
    }
    print(
        f"\nmnist_mlp --tiny, {args.train_steps} steps, checkpoint every "
        f"{args.checkpoint_every_steps or '-'} steps, GCS latency {args.latency:.3f} s/request, "
        f"median of {args.rounds} round(s)"
    )
    head = ("", "wall s", "train wall s", "pauses s", "blocked s", "of it at end", "background s")
    print(f"{head[0]:<10} " + " ".join(f"{h:>13}" for h in head[1:]))
    keys = ("wall", "train_wall", "pauses", "blocked", "blocked_final", "background")
    for m in modes:
        print(f"{m:<10} " + " ".join(f"{med[m][k]:>13.2f}" for k in keys))
    base = med["local"]
    print("\nratio to local      wall   train wall")
    for m in modes[1:]:
        wall, train = med[m]["wall"] / base["wall"], med[m]["train_wall"] / base["train_wall"]
        print(f"{m:<16} {wall:>7.2f}x {train:>10.2f}x")
    sync, fast = med["gcs_sync"], med["gcs_async"]
    print(
        f"gcs_sync / gcs_async: wall {sync['wall'] / fast['wall']:.2f}x, "
        f"train wall {sync['train_wall'] / fast['train_wall']:.2f}x"
    )


if __name__ == "__main__":
    sys.exit(main())
