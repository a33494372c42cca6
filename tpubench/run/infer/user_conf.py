"""A `--user_conf`: which LoadGen keys it sets for a run, and which tpubench refuses.

Pure Python.  LoadGen reads a user.conf itself (loadgen_conf.py), but it
says nothing of what it read, and tpubench sets some settings per run (the
server's QPS, the expected latency), which would silently win over the
file.  So the file is read here first, the way LoadGen 6.0.17's reader
reads it: lines `model.scenario.key = value` (a lone `#` starts a comment),
a line applying when its model is the run's MLPerf model key or `*` and its
scenario the run's or `*`; of several lines for one key the most specific
wins (model.scenario, *.scenario, model.*, *.*), and of equal ones the
last.  Every key that applies is honoured or refused here, before any run:
see GENERIC and each scenario's `conf_keys`, and docs/inference.md's table.
Precedence: a flag given on the command line > the user.conf > mlperf.conf.
"""

from __future__ import annotations

import dataclasses
import os
import re

from tpubench.core import bounds, errors, safe_files
from tpubench.run.infer import scenario_knobs, scenarios

SCENARIOS = ("SingleStream", "MultiStream", "Server", "Offline")  # LoadGen's, as a line names them

# Keys that apply in every scenario, and how tpubench treats them (scenario_knobs.ConfKey:
# "honoured", "flag --x", or the reason the key is refused).  The keys LoadGen reads for
# one scenario only are the scenario's (`Scenario.conf_keys`, with their ranges).
PERFORMANCE_ONLY = "tpubench runs LoadGen in PerformanceOnly mode (accuracy is its own eval)"
MLPERF_ONLY = "LoadGen reads it from mlperf.conf only and ignores it in a user.conf"
NO_TOKENS = "tpubench's SUT answers whole predictions and reports no tokens"
_K, _R = scenario_knobs.ConfKey, scenario_knobs.Range
_HONOURED = _K("honoured")
GENERIC = {
    "min_duration": _K("flag --min_duration", _R(1, scenario_knobs.WEEK_MS, "ms", True)),
    "min_query_count": _K("flag --min_query_count", _R(*bounds.FLAGS["min_query_count"], True)),
    "performance_sample_count_override": _K(
        "flag --qsl_samples", _R(0, bounds.FLAGS["qsl_samples"][1], "samples", True)
    ),
    "max_duration": _HONOURED,
    "max_query_count": _HONOURED,
    "print_timestamps": _HONOURED,
    "performance_issue_unique": _HONOURED,
    "performance_issue_same": _HONOURED,
    "performance_issue_same_index": _HONOURED,
    "sample_concatenate_permutation": _HONOURED,
    "accuracy_log_rng_seed": _HONOURED,
    "accuracy_log_sampling_target": _HONOURED,
    "mode": _K(PERFORMANCE_ONLY),
    "accuracy_sample_count_override": _K(PERFORMANCE_ONLY),
    "qsl_rng_seed": _K(MLPERF_ONLY),
    "sample_index_rng_seed": _K(MLPERF_ONLY),
    "schedule_rng_seed": _K(MLPERF_ONLY),
    "accuracy_log_probability": _K(MLPERF_ONLY),
    "test05": _K(MLPERF_ONLY),
    "test05_qsl_rng_seed": _K(MLPERF_ONLY),
    "test05_sample_index_rng_seed": _K(MLPERF_ONLY),
    "test05_schedule_rng_seed": _K(MLPERF_ONLY),
    "use_token_latencies": _K(NO_TOKENS),
    "infer_token_latencies": _K(NO_TOKENS),
    "token_latency_scaling_factor": _K(NO_TOKENS),
}
_NUMBER = re.compile(r"[+-]?(0[xX][0-9a-fA-F]+|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)")


@dataclasses.dataclass(frozen=True)
class Setting:
    """One key of a user.conf that applies to the run."""

    key: str  # LoadGen's name, e.g. "target_qps"
    value: str
    line: int
    text: str  # the whole key as written, e.g. "*.Server.target_qps"
    use: str  # "honoured", "expected", or "flag --x" (honoured unless --x is given)

    @property
    def flag(self) -> str | None:
        return self.use.removeprefix("flag ") if self.use.startswith("flag ") else None


def allowed(plugin) -> dict[str, scenario_knobs.ConfKey]:
    """{key: how tpubench treats it} for every key LoadGen reads in PLUGIN (a scenario)."""
    return GENERIC | plugin.conf_keys


def known() -> set[str]:
    """Every key a user.conf may name: the generic ones and every scenario's."""
    return set(GENERIC).union(*(scenarios.get(n).conf_keys for n in scenarios.names()))


def read(path: str, model_key: str, plugin) -> dict[str, Setting]:
    """{key: Setting} of PATH that apply to MODEL_KEY in PLUGIN (the scenario: its LoadGen
    name picks the lines, its `conf_keys` what it accepts).

    Raises a one-line UsageError for a line LoadGen would misread, a key it
    does not read, and a key that applies here but tpubench cannot honour.
    """
    if not os.path.isfile(path):
        raise errors.UsageError(
            f"--user_conf={path}: no such file; give an MLPerf user.conf "
            "(lines 'model.scenario.key = value')"
        )
    # A path from a flag or a record: a regular file of bounded size (a FIFO would hang).
    limit, accepted = safe_files.PATH_FLAGS["user_conf"]
    lines = safe_files.read_text(path, "--user_conf", limit, accepted).splitlines()
    scenario, keys, accepts = plugin.loadgen_name, known(), allowed(plugin)
    found: dict[str, tuple[int, int, str, str]] = {}  # key -> (rank, line, text, value)
    for n, line in enumerate(lines, 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        where = f"--user_conf={path}: line {n}"
        if len(words) < 3 or words[1] != "=":
            raise errors.UsageError(
                f"{where} ({line.strip()!r}) is not 'model.scenario.key = value' (LoadGen "
                "reads an '=' with a space on each side); accepted: such lines and lines "
                "starting with #"
            )
        if len(words) > 3:
            raise errors.UsageError(
                f"{where}: {' '.join(words[3:])!r} after the value; LoadGen refuses it "
                "(a # comment goes on a line of its own); accepted: 'model.scenario.key = value'"
            )
        text, value = words[0], words[2]
        model, scen, key = _split(text, where)
        if key not in keys:
            raise errors.UsageError(
                f"{where} sets {text}: LoadGen reads no key {key!r}{errors.choices_hint(key, keys)}"
            )
        if not _NUMBER.fullmatch(value):
            raise errors.UsageError(
                f"{where} sets {text} = {value}: LoadGen takes a number (integer or decimal)"
            )
        if model not in (model_key, "*") or scen not in (scenario, "*"):
            continue  # another model's or scenario's line, as LoadGen reads it
        if key not in accepts:
            if scen == "*":
                continue  # a key of other scenarios
            raise errors.UsageError(
                f"{where} sets {text}: LoadGen does not read {key} for {scenario}; accepted "
                f"for {scenario}: {', '.join(sorted(accepts))}"
            )
        # LoadGen's lookup order: model.scenario, *.scenario, model.*, *.*.
        rank = {(True, True): 0, (False, True): 1, (True, False): 2}.get(
            (model != "*", scen != "*"), 3
        )
        if key not in found or rank <= found[key][0]:
            found[key] = (rank, n, text, value)
    out = {}
    for key, (_, n, text, value) in sorted(found.items()):
        use = accepts[key].use
        if use not in ("honoured", "expected") and not use.startswith("flag "):
            raise errors.UsageError(
                f"--user_conf={path}: line {n} sets {text} = {value}: tpubench cannot honour "
                f"{key} ({use}); accepted: remove the line"
            )
        out[key] = Setting(key, value, n, text, use)
        _check_range(out[key], accepts[key].range, path)
    return out


def _check_range(s: Setting, held: scenario_knobs.Range | None, path: str) -> None:
    """A value tpubench uses must be in its declared range (HELD), and whole where LoadGen
    reads an integer (it would drop the fraction: Server target_latency 0.5 is a 0 ms bound)."""
    if held is None or held.holds(number(s)):
        return
    kind = "a whole number" if held.whole else "a number"
    raise errors.UsageError(
        f"--user_conf={path}: line {s.line} sets {s.text} = {s.value}: out of range; "
        f"accepted: {kind} from {held.low:g} to {held.high:g} ({held.unit})"
    )


def _split(text: str, where: str) -> tuple[str, str, str]:
    """'model.scenario.key' -> its three parts (a model's name may hold dots: 3d-unet-99.9)."""
    parts = text.rsplit(".", 2)
    if len(parts) != 3 or not all(parts):
        raise errors.UsageError(
            f"{where}: {text!r} is not model.scenario.key; accepted: e.g. "
            "resnet50.Server.target_latency or *.Offline.min_duration"
        )
    if parts[1] not in (*SCENARIOS, "*"):
        raise errors.UsageError(
            f"{where}: {text!r} names scenario {parts[1]!r}; accepted: {', '.join(SCENARIOS)} or *"
        )
    return parts[0], parts[1], parts[2]


def number(s: Setting) -> float:
    """S's value as LoadGen reads a number (hex integers too)."""
    v = s.value
    return float(int(v, 16)) if v.lower().lstrip("+-").startswith("0x") else float(v)


def section(settings: dict[str, Setting], flags_given: set[str], path: str) -> dict:
    """The record's `loadgen.rules.user_conf_keys`: each key, its line, and what was done."""
    out = {}
    for key, s in settings.items():
        if s.flag and s.flag in flags_given:
            done = f"{s.flag} given: the flag wins"
        elif s.use == "expected":
            done = "honoured: tpubench's own estimate from the closed loop is not used"
        else:
            done = "honoured"
        out[key] = {"line": f"{os.path.basename(path)}:{s.line}", "set": f"{s.text} = {s.value}"}
        out[key]["use"] = done
    return out
