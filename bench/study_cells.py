"""Benchmark aid (not a test): a shipped study cut down to some of its cells, and run in passes.

    python bench/study_cells.py cut NAME OUT.yaml [SELECTION]
    python bench/study_cells.py run NAME [SELECTION] --results_dir=DIR [--scale=full]
        [--repeats=N] [--seconds=S]

`cut` writes a copy of study NAME (a shipped name or a path) keeping only
the cells SELECTION names, chosen by what each setup is, never by cell id,
so that it keeps working when setups are renamed or added:

  --device=gpu|cpu|tpu   setups on this device (a setup without `device:`
                         is a CPU; `device: auto`, the GPU where there is
                         one, counts as a GPU); default: every setup
  --part=A,B             these parts (default: every part)
  --models=A,B           these models of each part kept (default: all)
  --setups=L1,L2         these setup labels (default: all)
  --max_devices=N        setups of at most N devices (what a 1-GPU host runs)
  --as_device=cpu        the kept setups rewritten to run on this device
                         instead (a rehearsal: a GPU study's cells on a CPU;
                         variables on a GPU go to the CPU, NCCL is dropped)
  --scale=full --set=KEY=VALUE ...
                         the scale's flags changed (train_steps, batch_size,
                         jpeg_examples...; VALUE read as YAML) in each kept
                         part whose command takes KEY (a KEY that no study
                         command takes is an error); a changed flag is a
                         new cell id

Parts left without setups are dropped; so are the published comparisons,
and the findings that read a part, setup or model no longer there (each
finding is checked the way `tpubench study run` checks it).  The study's
`repeats`, the runs per cell a verdict needs, is kept.

`run` cuts the study the same way into DIR.yaml, then runs its cells in
passes: every cell once, then every cell a second time, up to --repeats
(default: the study's), so that a budget that ends early still leaves one
run of every cell rather than three of the first few.  Within a pass one
model's cells come before the next model's.  With --seconds the passes end
when the time left would not hold another run of that model (the longest
so far; FIRST_RUN before any), and a run still going when the time is up
is stopped the way `tpubench study run` stops one on SIGTERM (a record it
writes says interrupted); RESERVE seconds of S are kept for that and for
the report.  The report is then written by `tpubench study report`'s code
with the study's own repeats, so a finding whose cells all ran, but fewer
times than a verdict needs, reads `not judged (needs 3 runs per cell; has
1)`.  DIR/passes.json says how many runs each
cell got, how many the verdicts need and why the passes ended.

Exit codes: 0 (also when the budget ended the passes), 1 a cell failed,
2 a bad argument, 3 no cell of the study is selected.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
import time

import yaml

from tpubench.core import errors
from tpubench.study import api
from tpubench.study.run import cell_records, execute, plan, this_host
from tpubench.study.spec import spec, validate

# Seconds of --seconds kept back: a stopped run writing its record, then the report.
RESERVE = 15
# Seconds a first run is taken to need before one has been timed (a fresh TensorFlow process).
FIRST_RUN = 20
SELECT = ("device", "part", "models", "setups", "max_devices", "as_device")
SCALE_KEYS = ("jpeg_examples",)  # what a scale takes besides its command's flags
GPU_ONLY_REDUCTIONS = ("nccl",)


def device_of(setup: dict) -> str:
    return setup.get("device") or "cpu"


def on(setup: dict, device: str | None) -> bool:
    """Whether SETUP runs on DEVICE (`auto`, the GPU where there is one, counts as a GPU)."""
    return not device or device_of(setup) in (device, "auto" if device == "gpu" else device)


def _names(text: str | None) -> list[str] | None:
    return [x.strip() for x in text.split(",") if x.strip()] if text else None


def _model_name(item) -> str:
    return item["model"] if isinstance(item, dict) else item


def _rewritten(setup: dict, device: str) -> dict:
    out = dict(setup, device=device)
    if device != "gpu":
        if out.get("variables") == "gpu":
            out["variables"] = "cpu"
        if out.get("all_reduce") in GPU_ONLY_REDUCTIONS:
            out.pop("all_reduce")
    return out


def _scale(scale: dict, models: list[str], labels: list[str], changes: dict) -> dict:
    """A part's scale entry with its model and setup lists cut to what is kept."""
    out = dict(scale or {})
    if "models" in out:
        out["models"] = [m for m in out["models"] if m in models] or models[:1]
    if "setups" in out:
        out["setups"] = [s for s in out["setups"] if s in labels]
        if not out["setups"]:
            out.pop("setups")
    out.update(changes)
    return out


def cut(doc: dict, sel: dict) -> dict:
    """DOC with only the cells SEL selects (keys of SELECT, plus scale and set)."""
    want_parts, want_models = _names(sel.get("part")), _names(sel.get("models"))
    want_setups = _names(sel.get("setups"))
    max_devices, as_device = sel.get("max_devices"), sel.get("as_device")
    changes = sel.get("set") or {}
    known = validate.known_flags() if changes else None  # {command: its flags}
    parts = []
    for part in doc.get("parts") or []:
        if want_parts and part.get("name") not in want_parts:
            continue
        setups = [
            s
            for s in part.get("setups") or []
            if on(s, sel.get("device"))
            and (not want_setups or s.get("label") in want_setups)
            and (max_devices is None or int(s.get("devices", 1)) <= max_devices)
        ]
        models = [
            m for m in part.get("models") or [] if not want_models or _model_name(m) in want_models
        ]
        names = [_model_name(m) for m in models]
        setups = [dict(s) for s in setups]
        for s in setups:  # a setup's own model list, cut the same way
            if s.get("models"):
                s["models"] = [m for m in s["models"] if m in names]
        setups = [s for s in setups if "models" not in s or s["models"]]
        if not setups or not models:
            continue
        if as_device:
            setups = [_rewritten(s, as_device) for s in setups]
        labels = [s["label"] for s in setups]
        # --set: the keys this part's command takes (a train flag is no infer flag)
        takes = known and known.get(part.get("command", "train"))
        mine = {k: v for k, v in changes.items() if not takes or k in takes or k in SCALE_KEYS}
        scale = {
            name: _scale(entry, names, labels, mine if name == sel.get("scale") else {})
            for name, entry in (part.get("scale") or {}).items()
        }
        parts.append(dict(part, models=models, setups=setups, scale=scale))
    anywhere = set(SCALE_KEYS).union(*known.values()) if known else set(changes)
    unknown = sorted(set(changes) - anywhere)
    if unknown:  # a key no command takes: a typo, never skipped in silence
        raise errors.UsageError(f"--set={unknown[0]}=...: no study command takes {unknown[0]!r}")
    out = {k: v for k, v in doc.items() if k not in ("parts", "findings", "published")}
    out["parts"] = parts
    kept = {p["name"] for p in parts}
    form = dict(out.get("form") or {})
    labels = {s["label"] for p in parts for s in p["setups"]}
    if form.get("baseline") and form["baseline"] not in labels:
        form.pop("baseline")  # the baseline setup is not among the cells kept
    if form.get("part") and form["part"] not in kept:
        form.pop("part")
    if form:
        out["form"] = form
    candidates = [
        f for f in doc.get("findings") or [] if (f.get("check") or {}).get("part") in kept
    ]
    findings = [f for f in candidates if _loads(dict(out, findings=[f]))]
    if findings:
        out["findings"] = findings
    return out


def _loads(doc: dict) -> bool:
    """Whether DOC reads as a study file (every check `tpubench study run` makes of one)."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    try:
        api.load(f.name, api.Options())
        return True
    except errors.TpubenchError:
        return False
    finally:
        os.unlink(f.name)


def write_cut(name: str, out_path: str, sel: dict) -> dict | None:
    """Study NAME cut by SEL into OUT_PATH; None (nothing written) when no cell is left."""
    path = spec.path_of(name)
    doc = spec.read_yaml(str(path), "study file")
    doc.setdefault("name", path.stem)
    small = cut(doc, sel)
    if not small["parts"]:
        return None
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as f:
        yaml.safe_dump(small, f, sort_keys=False)
    return small


def _order(todo, study) -> list:
    """One model's cells before the next's, in the file's order of parts and models."""
    rank = {
        (p.name, m.model): (i, j) for i, p in enumerate(study.parts) for j, m in enumerate(p.models)
    }
    return sorted(todo, key=lambda c: rank[(c.part.name, c.model.model)])


class _Deadline:
    """SIGTERM to this process when the time is up, while a run goes on (execute passes it
    on to the run, which records itself interrupted); outside a run a SIGTERM or SIGINT
    (an outer timeout) only stops the passes."""

    def __init__(self, seconds: float | None):
        self.end = None if seconds is None else time.monotonic() + seconds
        self.asked = None
        for s in (signal.SIGTERM, signal.SIGINT):
            signal.signal(s, self._ask)

    def _ask(self, signum, frame):
        self.asked = signal.Signals(signum).name

    def left(self) -> float:
        return float("inf") if self.end is None else self.end - time.monotonic()

    def arm(self) -> threading.Timer | None:
        if self.end is None:
            return None
        timer = threading.Timer(max(self.left(), 0.1), os.kill, (os.getpid(), signal.SIGTERM))
        timer.daemon = True
        timer.start()
        return timer


def run(args: dict, out) -> int:
    where = args["results_dir"]
    scale = args.get("scale") or "full"
    deadline = _Deadline(None if args.get("seconds") is None else args["seconds"] - RESERVE)
    path = where.rstrip("/") + ".yaml"
    if write_cut(args["name"], path, dict(args, scale=scale)) is None:
        print(f"study {args['name']}: no cell selected ({_said(args)})", file=out)
        return 3
    study = api.load(path, api.Options(), run=True)
    host = this_host.probe()
    full = plan.make(study, scale, host, where)
    needed = study.runs_per_cell(scale)
    aim = min(args.get("repeats") or needed, needed)
    print("\n".join(plan.header(study, full, scale, host, where)), file=out)
    print(f"passes: {aim} of the {needed} run(s) per cell a verdict needs", file=out, flush=True)
    order = _order(full.todo, study)
    done = execute.done_counts(cell_records.of_cells(full.cells, where))
    counts = {c.id: done.get(c.id, 0) for c in full.cells}
    took: dict = {}  # (part, model) -> its longest run's seconds
    failed, cut_short = set(), set()
    state = {"study": study.name, "file": os.path.basename(path), "scale": scale}
    # repeats: the study's; needed: what a verdict needs at this scale (smoke judges nothing)
    state.update(repeats=study.repeats, needed=needed, aimed=aim, stopped=None, cells={})

    def save():
        state["cells"] = {
            c.id: {"cell": c.describe(), "runs": counts[c.id], "failed": c.id in failed}
            for c in order
        }
        with open(os.path.join(where, "passes.json"), "w") as f:
            json.dump(state, f, indent=1)

    os.makedirs(where, exist_ok=True)
    save()
    jpeg = [c for c in order if c.data == "jpeg"]
    jpeg_at = None
    if jpeg:
        examples = max(c.part.scale[scale].get("jpeg_examples", 2048) for c in jpeg)
        jpeg_at = execute.jpeg_dir(where, examples)
        execute.prepare_jpeg(jpeg_at, examples, out)
    for k in range(1, aim + 1):
        for cell in order:
            if state["stopped"]:
                break
            if cell.id in failed or cell.id in cut_short or counts[cell.id] >= k:
                continue
            key = (cell.part.name, cell.model.model)
            need = took.get(key, max(took.values(), default=FIRST_RUN))
            left = deadline.left()
            if left <= 0 or left < need:
                state["stopped"] = (
                    f"budget: {max(left, 0):.0f}s left in pass {k}, under the {need:.0f}s "
                    f"a run of {cell.model.model} may take"
                )
            elif deadline.asked:
                state["stopped"] = f"{deadline.asked} in pass {k}"
            if state["stopped"]:
                break
            print(f"pass {k}/{aim}: {cell.describe()}", file=out, flush=True)
            timer, began, status = deadline.arm(), time.monotonic(), None
            try:
                ((_, status, _),) = execute.run_cells(
                    [(cell, 1)], host, where, jpeg_at, out, rerun_busy=False
                )
            except errors.InterruptedRun:
                cut_short.add(cell.id)
                state["stopped"] = (
                    f"{'budget' if deadline.left() <= 0 else 'a signal'}: the run of "
                    f"{cell.describe()} was stopped"
                )
            finally:
                if timer:
                    timer.cancel()
            took[key] = max(took.get(key, 0.0), time.monotonic() - began)
            counts[cell.id] = execute.done_counts(cell_records.of_cells([cell], where)).get(
                cell.id, 0
            )
            if status is not None and status not in execute.DONE:
                failed.add(cell.id)
            save()
    save()
    fewest = min((counts[c.id] for c in order), default=0)
    print(
        f"study {study.name}: {len(order)} cell(s) run, each at least {fewest} time(s) of the "
        f"{needed} a verdict needs"
        + (f"; passes ended: {state['stopped']}" if state["stopped"] else ""),
        file=out,
        flush=True,
    )
    api.write_report(study, full, host, where, api.Options(scale=scale), out, scale=scale)
    return 1 if failed else 0


def _said(args: dict) -> str:
    return ", ".join(f"--{k}={args[k]}" for k in SELECT if args.get(k) is not None) or "all"


def parse(argv: list[str]) -> dict:
    """ACTION NAME [OUT] --key=value ... -> a dict; a bad argument is one UsageError."""
    if not argv or argv[0] not in ("cut", "run"):
        raise errors.UsageError("the first argument is cut or run")
    action, rest = argv[0], argv[1:]
    words = [a for a in rest if not a.startswith("--")]
    want = 2 if action == "cut" else 1
    if len(words) != want:
        raise errors.UsageError(f"{action} takes {'NAME OUT.yaml' if want == 2 else 'NAME'}")
    args: dict = {"action": action, "name": words[0], "set": {}}
    if action == "cut":
        args["out"] = words[1]
    keys = {*SELECT, "scale", "set"} | (
        {"results_dir", "repeats", "seconds"} if action == "run" else set()
    )
    for a in rest:
        if not a.startswith("--"):
            continue
        key, eq, value = a[2:].partition("=")
        if key not in keys or not eq:
            raise errors.UsageError(f"{a}: accepted: {', '.join(f'--{k}=' for k in sorted(keys))}")
        if key == "set":
            k, eq2, v = value.partition("=")
            if not eq2 or not k:
                raise errors.UsageError(f"{a}: --set takes KEY=VALUE")
            args["set"][k] = yaml.safe_load(v)
        elif key in ("max_devices", "repeats", "seconds"):
            if not value.isdigit():
                raise errors.UsageError(f"{a}: accepted: a whole number")
            args[key] = int(value)
        else:
            args[key] = value
    if args["set"] and not args.get("scale"):
        raise errors.UsageError("--set changes one scale's flags: name it with --scale=")
    if action == "run" and not args.get("results_dir"):
        raise errors.UsageError("run needs --results_dir=DIR")
    return args


def main(argv: list[str]) -> int:
    try:
        args = parse(argv)
        if args["action"] == "cut":
            small = write_cut(args["name"], args["out"], args)
            if small is None:
                print(f"study {args['name']}: no cell selected ({_said(args)})")
                return 3
            setups = [s["label"] for p in small["parts"] for s in p["setups"]]
            print(f"study {args['name']}: {', '.join(setups)} -> {args['out']}")
            return 0
        return run(args, sys.stdout)
    except errors.TpubenchError as e:
        print(f"study_cells: {e}", file=sys.stderr)
        return 2 if isinstance(e, errors.UsageError) else getattr(e, "exit_code", 1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
