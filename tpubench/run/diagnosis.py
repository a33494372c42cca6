"""Is a run input-bound?  The same configuration on real and synthetic data.

`tpubench train --compare_synthetic` trains on real data, then the same
model, batch, precision, strategy and step count on synthetic batches kept
on the device (no input pipeline at all).  The ratio real/synthetic of
steady-state examples/sec, with the host CPU use sampled during both, goes
into the run record as results.input_diagnosis; below 0.95 the run is
input-bound: the input pipeline, not the accelerator, sets its speed.
"""

from __future__ import annotations

import dataclasses

from tpubench.storage.run_dir import RunDir

INPUT_BOUND_BELOW = 0.95


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


def attach(record: dict, synthetic_record: dict) -> dict:
    """Adds results.input_diagnosis to RECORD (the real-data run) and returns it."""
    real = record.get("results", {})
    synth = synthetic_record.get("results", {})
    ratio, text = verdict(real.get("examples_per_sec"), synth.get("examples_per_sec"))
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
    record.setdefault("results", {})["input_diagnosis"] = diagnosis
    return diagnosis


def advice(diagnosis: dict) -> str:
    """One line on what to change, for the terminal summary."""
    if diagnosis.get("verdict") != "input-bound":
        return "the input pipeline keeps up; the model/accelerator sets the speed"
    cpu = (diagnosis.get("host_cpu_real") or {}).get("system_percent_mean")
    busy = cpu is not None and cpu >= 85
    return (
        "the host CPUs are saturated: more vCPUs, raw (pre-decoded) records, or smaller images"
        if busy
        else "the CPUs have headroom: more shards/parallel reads, a faster disk, or --cache_input"
    )
