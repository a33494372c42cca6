"""Is a run input-bound?  The same configuration on real and synthetic data.

`tpubench train --compare_synthetic` trains on real data, then the same
model, batch, precision, strategy and step count on synthetic batches kept
on the device (no input pipeline at all).  The ratio real/synthetic of
steady-state examples/sec, with the host CPU use sampled during both, goes
into the run record as results.input_diagnosis; below 0.95 the run is
input-bound: the input pipeline, not the accelerator, sets its speed.

Two short runs on a busy host can differ by far more than that for no
reason of their own (a 1.42x gap once read "not input-bound").  So the
verdict is `unreliable` when the pair cannot carry it: the real run faster
than its synthetic twin (no input pipeline can make it so), loop times
spread widely in either run, or other processes holding the host CPU; the
record then says why and how to get a firm verdict.
"""

from __future__ import annotations

import dataclasses

from tpubench.core import host_load
from tpubench.storage.run_dir import RunDir

INPUT_BOUND_BELOW = 0.95
FASTER_THAN_SYNTHETIC = 1 / INPUT_BOUND_BELOW  # real above synthetic by more: noise
SPREAD_ABOVE = 1.25  # step time p90 / p50 of either run


def synthetic_config(cfg, run_dir: RunDir | str, fitted: dict):
    """CFG on synthetic data: no eval, no target, no profile, a scratch model_dir.

    FITTED: the params the real run took from its data (head, vocabulary),
    so the synthetic twin is the same model size.
    """
    params = dict(cfg.params)
    for key, value in fitted.items():
        params[key] = str(value)
    data = dataclasses.replace(
        cfg.data,
        use_synthetic_data=True,
        data_dir=None,
        dataset=None,
        compare_synthetic=False,
        skip_corrupt=False,
    )
    return dataclasses.replace(
        cfg,
        data=data,
        params=tuple(params.items()),
        target_accuracy=None,
        eval_every_steps=None,
        checkpoint_every_steps=None,
        checkpoint_every_secs=None,
        profile_steps=None,
        model_dir=RunDir.of(run_dir).compare_synthetic.path,
    )


def verdict(real: float | None, synthetic: float | None) -> tuple[float | None, str]:
    if not real or not synthetic:
        return None, "unknown (a rate could not be measured)"
    ratio = real / synthetic
    if ratio < INPUT_BOUND_BELOW:
        return ratio, "input-bound"
    return ratio, "not input-bound"


def _num(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def noise(real: dict, synth: dict, ratio: float | None) -> list[str]:
    """Why the pair of results REAL and SYNTH cannot carry a verdict ([] when they can)."""
    why = []
    if ratio is not None and ratio > FASTER_THAN_SYNTHETIC:
        why.append(
            f"the real-data run was {ratio:.2f}x as fast as its synthetic twin, which no input "
            "pipeline can cause"
        )
    for name, r in (("real", real), ("synthetic", synth)):
        p50, p90 = _num(r.get("step_time_p50")), _num(r.get("step_time_p90"))
        if p50 and p90 and p90 / p50 > SPREAD_ABOVE:
            why.append(f"loop times spread widely in the {name} run (p90 {p90 / p50:.2f}x the p50)")
        others = host_load.others_percent(r.get("host_cpu"))  # host CPU of other processes
        if others is not None and others >= host_load.BUSY_PERCENT:
            why.append(f"other processes used {others:.0f}% of the host CPU during the {name} run")
    return why


def firm_verdict(train_steps) -> str:
    """How to get a verdict that holds, for a run of TRAIN_STEPS steps."""
    more = f"--train_steps={4 * train_steps}" if isinstance(train_steps, int) else "--train_steps"
    return (
        f"rerun on a quiet machine with more steps ({more}) so each rate rests on many "
        "steady loops, or repeat it a few times under one --run_label and compare the "
        "medians with `tpubench report`"
    )


def attach(record: dict, synthetic_record: dict) -> dict:
    """Adds results.input_diagnosis to RECORD (the real-data run) and returns it."""
    real = record.get("results", {})
    synth = synthetic_record.get("results", {})
    ratio, text = verdict(real.get("examples_per_sec"), synth.get("examples_per_sec"))
    unreliable = noise(real, synth, ratio) if ratio is not None else []
    diagnosis = {
        "real_examples_per_sec": real.get("examples_per_sec"),
        "synthetic_examples_per_sec": synth.get("examples_per_sec"),
        "ratio": None if ratio is None else round(ratio, 4),
        "threshold": INPUT_BOUND_BELOW,
        "verdict": text,
        "host_cpu_real": real.get("host_cpu"),
        "host_cpu_synthetic": synth.get("host_cpu"),
        "synthetic_step_time_p50": synth.get("step_time_p50"),
    }
    if unreliable:
        diagnosis.update(
            verdict="unreliable",
            verdict_if_trusted=text,
            unreliable_because=unreliable,
            firm_verdict=firm_verdict(record.get("train_steps")),
        )
    record.setdefault("results", {})["input_diagnosis"] = diagnosis
    return diagnosis


def advice(diagnosis: dict) -> str:
    """One line on what to change, for the terminal summary."""
    if diagnosis.get("verdict") == "unreliable":
        because = "; ".join(diagnosis.get("unreliable_because") or [])
        return f"{because}; for a firm verdict, {diagnosis.get('firm_verdict')}"
    if diagnosis.get("verdict") != "input-bound":
        return "the input pipeline keeps up; the model/accelerator sets the speed"
    cpu = (diagnosis.get("host_cpu_real") or {}).get("system_percent_mean")
    busy = cpu is not None and cpu >= 85
    return (
        "the host CPUs are saturated: more vCPUs, raw (pre-decoded) records, or smaller images"
        if busy
        else "the CPUs have headroom: more shards/parallel reads, a faster disk, or --cache_input"
    )
