"""Benchmark (not a test): tpubench's training loop against the alternatives.

What is measured: steady-state training examples/sec of the same registered
model, global batch, synthetic batch (tpubench.data.synthetic, same seed) and
thread pools under four contenders, each run in a fresh subprocess:

* tpubench     `python -m tpubench train --use_synthetic_data ...`; the figure
               is the record's `results.examples_per_sec` (warm-up loops and
               unsettled loops excluded by tpubench itself);
* keras_fit    Keras 3 `model.fit` with its defaults (bench/_keras_fit.py);
* minimal_loop a plain `@tf.function` step in a Python loop
               (bench/_minimal_loop.py);
* tf_cnn       tf_cnn_benchmarks (resnet50 only), when --tf_cnn_dir and
               --tf_cnn_python are given; its `total images/sec`.

The helpers exclude the same number of leading steps as tpubench's warm-up
loop (steps_per_loop, at least 2) and tf_cnn gets --num_warmup_batches equal
to it.  Rounds alternate the contenders (the order rotates every round), and
the other processes' CPU use during every run is recorded, because another
job on this 2-core machine changes every figure.  Printed: per-round
figures, medians, and tpubench/other ratios (median ratio, geometric mean of
per-round ratios with a 95% t-interval) with PASS/MISS against the targets:

  resnet50 batch 32:  >= 1.10x tf_cnn_benchmarks, >= 1.40x Keras fit,
                      >= 0.98x the minimal loop
  mnist_mlp batch 128 (tpubench --steps_per_loop=50): >= 2.0x Keras fit

Run from the repository root (a full run takes about 30-40 minutes here):

    .venv/bin/python bench/overhead.py --output=/tmp/overhead.json \
        [--tf_cnn_dir=DIR --tf_cnn_python=PYTHON] [--rounds=3] [--quick]

tf_cnn_benchmarks is never part of this repository.  To run it beside
tpubench, get tensorflow/benchmarks yourself, e.g.
`git clone https://github.com/tensorflow/benchmarks /tmp/tf-benchmarks`, make
a separate virtual environment with `pip install tensorflow==2.21.0
tf-keras==2.21.0`, and pass `--tf_cnn_dir=/tmp/tf-benchmarks/scripts/
tf_cnn_benchmarks --tf_cnn_python=/path/to/that/venv/bin/python`; the bench
runs it with TF_USE_LEGACY_KERAS=1.  Without both flags it is skipped.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import math
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
RESULT_MARK = "OVERHEAD_RESULT "
CONTENDERS = ("tpubench", "keras_fit", "minimal_loop", "tf_cnn")


@dataclasses.dataclass
class Workload:
    name: str
    model: str
    batch: int
    steps: int
    steps_per_loop: int
    targets: dict  # contender -> minimum tpubench/contender ratio
    tf_cnn_model: str | None = None  # tf_cnn_benchmarks --model, None: not comparable

    @property
    def warmup_steps(self) -> int:
        """Leading steps every contender leaves out: tpubench's one warm-up loop."""
        return max(2, self.steps_per_loop)


def workloads(args) -> list[Workload]:
    resnet = Workload(
        name="resnet50",
        model="resnet50",
        batch=32,
        steps=args.resnet50_steps,
        steps_per_loop=args.resnet50_steps_per_loop,
        targets={"tf_cnn": 1.10, "keras_fit": 1.40, "minimal_loop": 0.98},
        tf_cnn_model=args.tf_cnn_model,
    )
    mnist = Workload(
        name="mnist_mlp",
        model="mnist_mlp",
        batch=128,
        steps=args.mnist_steps,
        steps_per_loop=args.mnist_steps_per_loop,
        targets={"keras_fit": 2.0},
    )
    chosen = {w.name: w for w in (resnet, mnist)}
    return [chosen[n] for n in args.workloads]


# ------------------------------------------------------------------ running
def other_cpu_busy(seconds: float = 2.0) -> float:
    """Fraction (0..1) of the machine's CPU that was busy over SECONDS (no child runs)."""
    import psutil

    return psutil.cpu_percent(interval=seconds) / 100.0


def wait_until_quiet(max_busy: float, max_wait: float, log) -> float:
    """Waits (up to MAX_WAIT s) for other processes' CPU use below MAX_BUSY; returns it."""
    deadline = time.monotonic() + max_wait
    busy = other_cpu_busy()
    while busy > max_busy and time.monotonic() < deadline:
        log(f"    machine {busy:.0%} busy with other work; waiting (load {os.getloadavg()[0]:.2f})")
        time.sleep(20)
        busy = other_cpu_busy()
    return busy


def _cpu_seconds_total() -> float:
    import psutil

    t = psutil.cpu_times()
    return sum(getattr(t, k, 0.0) for k in ("user", "nice", "system", "irq", "softirq", "steal"))


def run_process(cmd: list[str], env: dict, log_path: str, timeout: float) -> dict:
    """Runs CMD, logging to LOG_PATH; returns rc, wall, and other processes' CPU share."""
    ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    before_all = _cpu_seconds_total()
    t0 = time.perf_counter()
    with open(log_path, "w") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        try:
            rc = subprocess.run(
                cmd, env=env, cwd=REPO_DIR, stdout=out, stderr=subprocess.STDOUT, timeout=timeout
            ).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    wall = time.perf_counter() - t0
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = (after_children.ru_utime - before_children.ru_utime) + (
        after_children.ru_stime - before_children.ru_stime
    )
    foreign = max(0.0, _cpu_seconds_total() - before_all - own)
    return {
        "rc": rc,
        "wall_seconds": round(wall, 3),
        "own_cpu_seconds": round(own, 3),
        "other_cpu_share": round(foreign / (wall * ncpu), 4) if wall > 0 else None,
    }


def _parse_marked(log_path: str) -> dict | None:
    with open(log_path) as f:
        for line in f:
            if line.startswith(RESULT_MARK):
                return json.loads(line[len(RESULT_MARK) :])
    return None


def _tail(path: str, n: int = 15) -> str:
    with open(path, errors="replace") as f:
        return "".join(f.readlines()[-n:])


def _threads(args) -> list[str]:
    return [
        f"--num_intra_threads={args.num_intra_threads}",
        f"--num_inter_threads={args.num_inter_threads}",
    ]


def run_tpubench(w: Workload, args, env, log_path) -> dict:
    tmp = tempfile.mkdtemp(prefix="tpubench-overhead-")
    try:
        cmd = [
            sys.executable,
            "-m",
            "tpubench",
            "train",
            f"--model={w.model}",
            "--use_synthetic_data",
            f"--batch_size={w.batch}",
            f"--train_steps={w.steps}",
            f"--steps_per_loop={w.steps_per_loop}",
            f"--seed={args.seed}",
            f"--results_dir={tmp}/runs",
            f"--model_dir={tmp}/model",
            *_threads(args),
            *args.tpubench_extra,
        ]
        proc = run_process(cmd, env, log_path, args.timeout)
        records = glob.glob(f"{tmp}/runs/*.json")
        if not records:
            return proc | {"error": "no run record written"}
        with open(records[0]) as f:
            record = json.load(f)
        res = record.get("results") or {}
        loops = res.get("loops") or []
        warm = res.get("warmup_loops", 1)
        after = loops[warm:]
        plain = (
            sum(s for s, _ in after) * w.batch / sum(t for _, t in after)
            if after and sum(t for _, t in after) > 0
            else None
        )
        return proc | {
            "examples_per_sec": res.get("examples_per_sec"),
            # every loop after the warm-up one, without tpubench's settling cut
            "examples_per_sec_all_loops": plain,
            "measured_steps": res.get("measured_steps"),
            "step_time_p50": res.get("step_time_p50"),
            "startup_seconds": record.get("startup_seconds"),
            "time_to_first_loop": res.get("time_to_first_loop"),
            "final_loss": res.get("final_loss"),
            "status": record.get("status"),
            "loops": loops,
            "error": record.get("error"),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_helper(script: str, w: Workload, args, env, log_path) -> dict:
    cmd = [
        sys.executable,
        os.path.join(BENCH_DIR, script),
        f"--model={w.model}",
        f"--batch_size={w.batch}",
        f"--steps={w.steps}",
        f"--warmup_steps={w.warmup_steps}",
        f"--seed={args.seed}",
        *_threads(args),
    ]
    proc = run_process(cmd, env, log_path, args.timeout)
    result = _parse_marked(log_path)
    if result is None:
        return proc | {"error": "no result line"}
    return proc | result


def tf_cnn_script(args) -> str | None:
    """Path of tf_cnn_benchmarks.py from --tf_cnn_dir (the script's folder or the repo root)."""
    if not args.tf_cnn_dir:
        return None
    for rel in ("tf_cnn_benchmarks.py", "scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py"):
        path = os.path.join(args.tf_cnn_dir, rel)
        if os.path.isfile(path):
            return path
    return None


def run_tf_cnn(w: Workload, args, env, log_path) -> dict:
    script = tf_cnn_script(args)
    timed = w.steps - w.warmup_steps
    cmd = [
        args.tf_cnn_python,
        script,
        "--device=cpu",
        "--data_format=NHWC",
        f"--model={w.tf_cnn_model}",
        f"--batch_size={w.batch}",
        f"--num_batches={timed}",
        f"--num_warmup_batches={w.warmup_steps}",
        "--variable_update=parameter_server",
        "--local_parameter_device=cpu",
        *_threads(args),
    ]
    env = dict(env, TF_USE_LEGACY_KERAS="1")
    proc = run_process(cmd, env, log_path, args.timeout)
    return proc | tf_cnn_result(log_path, timed)


def tf_cnn_result(log_path: str, timed_steps: int) -> dict:
    """tf_cnn_benchmarks' `total images/sec` from its log, or why there is none."""
    with open(log_path, errors="replace") as f:
        m = re.search(r"total images/sec:\s*([0-9.]+)", f.read())
    if not m:
        return {"error": "no 'total images/sec' line"}
    return {"examples_per_sec": float(m.group(1)), "measured_steps": timed_steps}


# ------------------------------------------------------------------ statistics
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306}


def t_quantile(df: int) -> float:
    try:
        from scipy import stats

        return float(stats.t.ppf(0.975, df))
    except ImportError:
        return T975.get(df, 2.262 if df < 15 else 2.0)


def ratio_stats(ours: list[float | None], theirs: list[float | None]) -> dict | None:
    """Median ratio, and the geometric mean of paired per-round ratios with a 95% interval."""
    pairs = [(a, b) for a, b in zip(ours, theirs, strict=True) if a and b]
    if not pairs:
        return None
    logs = [math.log(a / b) for a, b in pairs]
    mean = statistics.fmean(logs)
    out = {
        "median_ratio": statistics.median(a for a, _ in pairs)
        / statistics.median(b for _, b in pairs),
        "geomean_ratio": math.exp(mean),
        "per_round": [a / b for a, b in pairs],
        "rounds": len(pairs),
        "ci95": None,
    }
    if len(pairs) >= 2:
        half = t_quantile(len(pairs) - 1) * statistics.stdev(logs) / math.sqrt(len(pairs))
        out["ci95"] = [math.exp(mean - half), math.exp(mean + half)]
    return out


def verdict(stats: dict | None, target: float) -> str:
    if not stats:
        return "n/a"
    point = stats["median_ratio"]
    margin = (point / target - 1) * 100
    word = "PASS" if point >= target else "MISS"
    ci = stats["ci95"]
    if ci and word == "PASS" and ci[0] < target:
        word += " (interval reaches below target)"
    if ci and word == "MISS" and ci[1] >= target:
        word += " (interval reaches the target)"
    return f"{word} {margin:+.1f}% vs {target:.2f}x"


# ------------------------------------------------------------------ main
def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="smoke run: 1 round, a few steps")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workloads", default="resnet50,mnist_mlp", help="comma-separated")
    p.add_argument(
        "--contenders",
        default=",".join(CONTENDERS),
        help="comma-separated subset of " + ", ".join(CONTENDERS),
    )
    p.add_argument("--resnet50_steps", type=int, default=12)
    p.add_argument("--resnet50_steps_per_loop", type=int, default=2)
    p.add_argument("--mnist_steps", type=int, default=2000)
    p.add_argument("--mnist_steps_per_loop", type=int, default=50)
    ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    p.add_argument("--num_intra_threads", type=int, default=ncpu, help="for every contender")
    p.add_argument("--num_inter_threads", type=int, default=ncpu, help="for every contender")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--tf_cnn_dir", default=None, help="tf_cnn_benchmarks folder (or repo root)")
    p.add_argument("--tf_cnn_python", default=None, help="python of tf_cnn's own venv")
    p.add_argument(
        "--tf_cnn_model",
        default="resnet50",
        help="tf_cnn --model (its resnet50 is v1; tpubench's is v1.5 = resnet50_v1.5)",
    )
    p.add_argument(
        "--tpubench_extra",
        default="",
        help="extra flags for tpubench train, space-separated (e.g. --xla)",
    )
    p.add_argument("--output", default=None, help="write the JSON summary here")
    p.add_argument(
        "--logs_dir", default=None, help="keep every run's log here (default: a tmp dir)"
    )
    p.add_argument("--max_busy", type=float, default=0.25, help="wait while CPU is busier")
    p.add_argument("--max_wait", type=float, default=600.0, help="seconds to wait per run")
    p.add_argument(
        "--max_other_share",
        type=float,
        default=0.10,
        help="a run during which other processes used more of the CPU is repeated",
    )
    p.add_argument("--retries", type=int, default=2, help="repeats of a contaminated run")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    args = p.parse_args(argv)
    args.workloads = [x for x in args.workloads.split(",") if x]
    args.contenders = [x for x in args.contenders.split(",") if x]
    args.tpubench_extra = args.tpubench_extra.split()
    for c in args.contenders:
        if c not in CONTENDERS:
            p.error(f"--contenders: unknown {c!r}; accepted: {', '.join(CONTENDERS)}")
    if args.quick:
        args.rounds = 1
        args.resnet50_steps = min(args.resnet50_steps, 4)
        args.mnist_steps = min(args.mnist_steps, 200)
    return args


def run_once(c, w, r, args, env, logs_dir, runner, log) -> dict:
    """One contender run; repeated (up to --retries) when other work shared the CPU."""
    attempts = []
    for attempt in range(args.retries + 1):
        busy = wait_until_quiet(args.max_busy, args.max_wait, log)
        suffix = f"-retry{attempt}" if attempt else ""
        log_path = os.path.join(logs_dir, f"{w.name}-r{r + 1}-{c}{suffix}.log")
        t0 = time.strftime("%H:%M:%S")
        res = runner(w, args, env, log_path)
        res.update(
            round=r + 1,
            started=t0,
            busy_before=round(busy, 3),
            load=round(os.getloadavg()[0], 2),
            log=log_path,
        )
        rate = res.get("examples_per_sec")
        share = res.get("other_cpu_share") or 0.0
        if not rate:
            log(f"  round {r + 1} {c:<13} FAILED ({res.get('error')}); log {log_path}")
            log(_tail(log_path))
            return res
        log(
            f"  round {r + 1} {c:<13} {rate:10.2f} ex/s   "
            f"wall {res['wall_seconds']:7.1f}s   other CPU {share:.0%}"
        )
        attempts.append({k: res.get(k) for k in ("examples_per_sec", "other_cpu_share", "log")})
        res["contaminated"] = share > args.max_other_share
        if not res["contaminated"]:
            break
        if attempt < args.retries:
            log(
                f"    other processes used {share:.0%} of the CPU during that run: running it again"
            )
    res["attempts"] = attempts
    return res


def main(argv=None) -> int:
    args = parse_args(argv)
    logs_dir = args.logs_dir or tempfile.mkdtemp(prefix="overhead-logs-")
    os.makedirs(logs_dir, exist_ok=True)

    def log(msg=""):
        print(msg, flush=True)

    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # what tpubench sets for itself
    env.pop("TF_USE_LEGACY_KERAS", None)

    tf_cnn_note = None
    if "tf_cnn" in args.contenders:
        script = tf_cnn_script(args)
        if not args.tf_cnn_dir or not args.tf_cnn_python:
            tf_cnn_note = (
                "tf_cnn_benchmarks skipped: pass --tf_cnn_dir and --tf_cnn_python "
                "(see this script's docstring for how to get it)"
            )
        elif script is None:
            tf_cnn_note = (
                f"tf_cnn_benchmarks skipped: no tf_cnn_benchmarks.py under {args.tf_cnn_dir}"
            )
        elif not os.access(args.tf_cnn_python, os.X_OK):
            tf_cnn_note = f"tf_cnn_benchmarks skipped: {args.tf_cnn_python} is not executable"
        if tf_cnn_note:
            log(tf_cnn_note)

    summary = {
        "argv": sys.argv,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "threads": {"intra": args.num_intra_threads, "inter": args.num_inter_threads},
        "load_average_at_start": os.getloadavg(),
        "logs_dir": logs_dir,
        "tf_cnn_note": tf_cnn_note,
        "workloads": {},
    }
    log(
        f"threads intra={args.num_intra_threads} inter={args.num_inter_threads}; "
        f"load average {os.getloadavg()[0]:.2f}; logs in {logs_dir}"
    )
    runners = {
        "tpubench": run_tpubench,
        "keras_fit": lambda w, a, e, p: run_helper("_keras_fit.py", w, a, e, p),
        "minimal_loop": lambda w, a, e, p: run_helper("_minimal_loop.py", w, a, e, p),
        "tf_cnn": run_tf_cnn,
    }
    all_ok = True
    interrupted = False
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # kill PID: report, then stop
    for w in workloads(args):
        names = [
            c
            for c in CONTENDERS
            if c in args.contenders
            and not (c == "tf_cnn" and (tf_cnn_note or not w.tf_cnn_model or w.name != "resnet50"))
        ]
        log(
            f"\n== {w.name}: batch {w.batch}, {w.steps} steps, tpubench steps_per_loop="
            f"{w.steps_per_loop}, first {w.warmup_steps} steps excluded, {args.rounds} round(s)"
        )
        runs: dict[str, list[dict]] = {c: [] for c in names}
        try:
            for r in range(args.rounds):
                order = names[r % len(names) :] + names[: r % len(names)]
                for c in order:
                    res = run_once(c, w, r, args, env, logs_dir, runners[c], log)
                    runs[c].append(res)
                    if not res.get("examples_per_sec"):
                        all_ok = False
        except KeyboardInterrupt:
            interrupted = True
            log("\ninterrupted: reporting the runs that finished")
        summary["workloads"][w.name] = report(w, names, runs, args, log)
        if interrupted:
            break
    summary["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    summary["interrupted"] = interrupted
    if args.output:
        with open(args.output, "w") as f:
            json.dump(summary, f, indent=1)
        log(f"\nsummary: {args.output}")
    return 130 if interrupted else 0 if all_ok else 1


def report(w: Workload, names, runs, args, log) -> dict:
    rounds = max((len(runs[c]) for c in names), default=0)
    # by round; a round a stopped run did not reach is None
    by_round = {c: runs[c] + [{}] * (rounds - len(runs[c])) for c in names}
    rates = {c: [x.get("examples_per_sec") for x in by_round[c]] for c in names}
    log(f"\n{w.name} examples/sec (batch {w.batch})")
    log("  round " + "".join(f"{c:>14}" for c in names))
    for r in range(rounds):
        cells = "".join(
            f"{(rates[c][r] or math.nan):13.2f}{'*' if by_round[c][r].get('contaminated') else ' '}"
            for c in names
        )
        log(f"  {r + 1:<5} {cells}")
    medians = {c: statistics.median([x for x in rates[c] if x] or [math.nan]) for c in names}
    log("  median" + "".join(f"{medians[c]:14.2f}" for c in names))
    if "tpubench" in names:
        plain = [x.get("examples_per_sec_all_loops") for x in runs["tpubench"]]
        plain = [x for x in plain if x]
        if plain:
            log(
                f"  (tpubench over every loop after warm-up, no settling cut: median "
                f"{statistics.median(plain):.2f})"
            )
    busy = [x.get("other_cpu_share") or 0.0 for c in names for x in runs[c]] or [0.0]
    log(
        f"  other processes' CPU share during runs: max {max(busy):.0%}, "
        f"mean {statistics.fmean(busy):.0%}"
        + (
            f"  (* = above {args.max_other_share:.0%} after {args.retries} retries)"
            if any(x.get("contaminated") for c in names for x in runs[c])
            else ""
        )
    )
    ratios = {}
    if "tpubench" in names:
        log("  tpubench / other      median-ratio   geomean [95% interval]         target")
        for c in names:
            if c == "tpubench":
                continue
            s = ratio_stats(rates["tpubench"], rates[c])
            target = w.targets.get(c)
            v = verdict(s, target) if target else "(no target)"
            if s:
                ci = s["ci95"]
                ci_text = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "[n/a: 1 round]"
                log(
                    f"  vs {c:<16} {s['median_ratio']:8.3f}x   "
                    f"{s['geomean_ratio']:.3f}x {ci_text:<18} {v}"
                )
            else:
                log(f"  vs {c:<16} n/a")
            ratios[c] = (s or {}) | {"target": target, "verdict": v}
    return {
        "model": w.model,
        "batch": w.batch,
        "steps": w.steps,
        "steps_per_loop": w.steps_per_loop,
        "warmup_steps": w.warmup_steps,
        "tf_cnn_model": w.tf_cnn_model if "tf_cnn" in names else None,
        "medians": medians,
        "ratios": ratios,
        "runs": runs,
    }


if __name__ == "__main__":
    sys.exit(main())
