"""The measured sections of a typed run record: results, MFU and cost (see record_view.py)."""

from __future__ import annotations

import dataclasses

from tpubench.storage.record_fields import raw as _raw
from tpubench.storage.record_fields import rows as _rows
from tpubench.storage.record_fields import sub as _sub


@dataclasses.dataclass(frozen=True)
class Eval:
    """results.eval: the last evaluation; its metrics by name in `raw`."""

    examples: int | None = None
    loss: float | None = None
    accuracy: float | None = None
    split: str | None = None
    raw: dict = _raw()

    def metric(self, name: str):
        return self.raw.get(name)


@dataclasses.dataclass(frozen=True)
class Target:
    metric: str | None = None
    mode: str | None = None
    target: float | None = None
    step: int | None = None
    seconds: float | None = None
    reached: bool = True


@dataclasses.dataclass(frozen=True)
class HostCpu:
    samples: int | None = None
    cores: int | None = None
    system_percent_mean: float | None = None
    system_percent_p90: float | None = None
    process_percent_mean: float | None = None


@dataclasses.dataclass(frozen=True)
class InputDiagnosis:
    """results.input_diagnosis: --compare_synthetic's verdict."""

    verdict: str | None = None
    ratio: float | None = None
    real_examples_per_sec: float | None = None
    synthetic_examples_per_sec: float | None = None
    host_cpu_real: HostCpu = _sub(HostCpu)
    host_cpu_synthetic: HostCpu = _sub(HostCpu)
    raw: dict = _raw()


@dataclasses.dataclass(frozen=True)
class Results:
    """results: throughput, timings, losses (train) or latencies (infer)."""

    examples_per_sec: float | None = None
    examples_per_sec_per_replica: float | None = None
    note: str | None = None
    step_time_p50: float | None = None
    step_time_p90: float | None = None
    step_time_p99: float | None = None
    step_time_samples: int | None = None
    time_to_first_loop: float | None = None
    compile_seconds: float | None = None
    steady_state_after_loops: int | None = None
    steps_run: int | None = None
    train_wall_seconds: float | None = None
    pause_seconds: float | None = None
    final_loss_loop_mean: float | None = None
    eval: Eval | None = _sub(Eval, optional=True)
    eval_note: str | None = None
    target: Target | None = _sub(Target, optional=True)
    host_cpu: HostCpu | None = _sub(HostCpu, optional=True)
    busy_host: str | None = None  # serving: what other processes used while LoadGen ran
    input_diagnosis: InputDiagnosis | None = _sub(InputDiagnosis, optional=True)
    latency_p50: float | None = None
    latency_p90: float | None = None
    latency_p99: float | None = None
    first_batch_seconds: float | None = None
    timed_batches: int | None = None
    timed_seconds: float | None = None
    raw: dict = _raw()


@dataclasses.dataclass(frozen=True)
class LoadGenSettings:
    """loadgen.settings (infer --scenario): what LoadGen was asked for."""

    latency_bound_seconds: float | None = None
    latency_percentile: float | None = None
    meets_mlperf_minimums: bool | None = None  # None: the model has no MLPerf benchmark
    note: str | None = None  # why not, or that MLPerf's rules do not apply
    max_batch_size: int | None = None


@dataclasses.dataclass(frozen=True)
class LoadGenSummary:
    """loadgen.summary: LoadGen's verdict and latencies."""

    validity: str | None = None
    latency_seconds: dict | None = None
    run: str | None = None  # which LoadGen run is the result (confirm-2, server-target)


@dataclasses.dataclass(frozen=True)
class CurveMachine:
    """One machine's price at one point of the serving curve."""

    machine: str | None = None
    pricing: str | None = None  # None in older records: their rows came chosen basis first
    usd_per_hour: float | None = None
    usd_per_million_predictions: float | None = None


@dataclasses.dataclass(frozen=True)
class CurvePoint:
    """loadgen.curve[]: one server run, as a point of the latency-QPS-cost curve."""

    run: str | None = None
    qps: float | None = None  # LoadGen's scheduled QPS
    target_qps: float | None = None  # the QPS asked for: runs at the same one are one level
    latency_percentile: float | None = None
    latency_seconds: float | None = None  # None: an overloaded run (queries shed)
    validity: str | None = None
    valid: bool = False
    confirmation: bool = False
    overloaded: bool = False
    machines: tuple = _rows(CurveMachine)


@dataclasses.dataclass(frozen=True)
class LoadGenTraits:
    """loadgen.traits: what the scenario is, as reports read it (never by its name)."""

    bounded_by_latency: bool = False  # judged against a latency bound at a QPS (server)
    one_query: bool = False  # its latencies are one query's completion times (offline)


@dataclasses.dataclass(frozen=True)
class LoadGen:
    traits: LoadGenTraits = _sub(LoadGenTraits)
    settings: LoadGenSettings = _sub(LoadGenSettings)
    summary: LoadGenSummary = _sub(LoadGenSummary)
    logs: str | None = None
    curve: tuple = _rows(CurvePoint)  # server: every run, in QPS order


@dataclasses.dataclass(frozen=True)
class Mfu:
    train_flops_per_example: float | None = None
    forward_flops_per_example: float | None = None
    mfu: float | None = None
    mfu_note: str | None = None
    note: str | None = None
    peak_flops: float | None = None
    peak_source: str | None = None
    mfu_measured_peak: float | None = None
    peak_flops_measured: float | None = None
    peak_measured_source: str | None = None
    peak_kind: str | None = None  # which CPU probe: cached quiet, quiet, busy, cached busy
    peak_note: str | None = None  # why a probe was not taken or not kept
    mfu_peak_warning: str | None = None  # the MFU is against a busy (low) peak
    parameters: int | None = None
    parameters_unfitted: int | None = None
    fitted_params: dict | None = None


@dataclasses.dataclass(frozen=True)
class PriceRow:
    """One price line a cost row used (cost/catalog.py)."""

    row_key: str | None = None
    as_of: str | None = None
    date_known: bool = True
    status: str | None = None
    source: str | None = None


@dataclasses.dataclass(frozen=True)
class MachineCost:
    """cost.machines[]: one machine the run was priced as."""

    machine: str | None = None
    pricing: str | None = None
    usd_per_hour: float | None = None
    usd_per_epoch: float | None = None
    usd_per_million_examples: float | None = None
    usd_per_million_predictions: float | None = None
    usd_run: float | None = None
    usd_to_target: float | None = None
    num_accelerators: int | None = None  # GPUs or TPU chips of the machine (0: CPU only)
    rows: tuple[PriceRow, ...] = _rows(PriceRow)
    raw: dict = _raw()


@dataclasses.dataclass(frozen=True)
class Cost:
    examples_per_epoch: int | None = None
    note: str | None = None
    pricing: str | None = None  # the basis the run answered on; older records: machines[0]'s
    machines: tuple[MachineCost, ...] = _rows(MachineCost)
