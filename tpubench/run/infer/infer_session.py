"""What one `tpubench infer` invocation holds while it measures: the seam both sweeps use.

`InferSession` builds the model once (strategy, spec fitted to the data,
weights), then gives the closed-loop sweep (run/infer/command.py) and a LoadGen
scenario (run/infer/infer_scenario.py) the same steps: a new record per measured
batch size, a timed measurement, the start-up section after the first
prediction, the host probes and FLOPs, the prices of what ran, and the
record written (only by host 0 of a multi-host TPU slice).  A failure or
an interrupt rewrites the record in flight (`fail`).
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

from tpubench.core import errors, vocab
from tpubench.core.config import InferConfig
from tpubench.cost import runs as cost_runs
from tpubench.model import remembered
from tpubench.run import efficiency, layout, session
from tpubench.run.infer import infer_timing, weights
from tpubench.storage import records

if TYPE_CHECKING:
    from tpubench.data.manifest import Manifest
    from tpubench.hardware.placement import Placement
    from tpubench.model.model_api import ModelSpec
    from tpubench.run.progress import Progress
    from tpubench.run.runner import Runner

_SERVING_STRATEGIES = [s for s in vocab.STRATEGIES if s not in (*vocab.CLUSTER_STRATEGIES, "auto")]
# The sections every record of an invocation copies from its base once the host is probed.
_SHARED = ("startup", "hardware", "software")


def base_record(cfg: InferConfig | None, model: str, argv: list[str], flag_values: dict) -> dict:
    """The record every batch size's record starts from (CFG None: flags only)."""
    config = cfg.to_dict() if cfg is not None else None
    invocation = session.Invocation(argv, flag_values)
    record = session.base_record("infer", records.new_run_id(f"{model}-infer"), config, invocation)
    if cfg is not None and cfg.run_label is not None:
        record["run_label"] = cfg.run_label  # every batch size's record copies the base
    if cfg is not None and cfg.model_modules:  # path and SHA-256: rerun checks them
        record["model_code"] = remembered.code(cfg.model_modules)
    return record


@dataclasses.dataclass(frozen=True)
class Built:
    """Everything before the first prediction."""

    spec: ModelSpec
    params: dict
    runner: Runner
    placement: Placement
    batches: tuple[int, ...]  # the --batch_size sweep, or the model's default batch
    manifest: Manifest | None  # None on synthetic data
    prices: cost_runs.Prices  # of the flags' machines (what ran is priced by `prices`)
    unfitted: dict  # the params fitting to the data changed, before the fit


class InferSession:
    """One infer invocation: its base record, the records written, the record in flight.

    `batch` is the batch size being measured (an interrupt names it);
    `records` the finished records, in order.
    """

    def __init__(self, cfg: InferConfig, argv: list[str], flag_values: dict):
        self.cfg = cfg
        self.base = base_record(cfg, cfg.model, argv, flag_values)
        self.records: list[dict] = []
        self.batch: int | None = None
        self.is_chief = True  # False on hosts other than 0 of a multi-host TPU slice
        self._current: dict | None = self.base  # the record a failure is written to
        self._progress: Progress | None = None
        self._first_prediction: tuple[float, float] | None = None  # (wall, perf_counter)
        self._t_setup = 0.0  # perf_counter when set-up began
        self._model_ready = 0.0  # seconds from set-up to model and weights ready

    # ------------------------------------------------------------ set-up
    def build(self) -> Built:
        """Strategy, model and weights: everything before the first prediction."""
        from tpubench.data import resolve
        from tpubench.hardware import strategy as strategy_lib
        from tpubench.model import folding
        from tpubench.run import conv_grads
        from tpubench.run import runner as runner_lib

        self._t_setup = time.perf_counter()
        cfg = self.cfg
        strategy_lib.configure_host(cfg.hardware)
        ref = session.ModelRef.of(cfg)
        spec, params = session.load_spec(ref)
        layout.check(cfg.data_format, spec)
        prices = cost_runs.prices(cfg.cost)
        accelerator = strategy_lib.resolve_accelerator(cfg.hardware)
        name = strategy_lib.resolve_strategy(cfg.hardware, accelerator)
        if name in vocab.CLUSTER_STRATEGIES:  # a cluster serves no queries
            raise errors.UsageError(
                f"tpubench infer does not run under the {name} strategy; accepted: "
                f"{', '.join(_SERVING_STRATEGIES)} (or auto without a multi-task TF_CONFIG)"
            )
        strategy, placement = session.build_strategy(cfg.hardware)
        self.is_chief = placement.is_chief
        data_format = layout.resolve(cfg.data_format, spec, placement.accelerator, cfg.precision)
        layout.check_host(data_format, placement.accelerator, cfg.data_format)
        replicas = placement.num_replicas
        batches = cfg.global_batch_sizes or (spec.default_batch_size * replicas,)
        session.check_batches(batches, replicas)
        data_dir, manifest = resolve.resolve(cfg.data, spec)
        feed = session.Feed(batches[0], replicas, cfg.seed, cfg.data)
        fitted = session.fit_params(params, ref, manifest, feed, data_dir)
        changes = session.fitted_changes(params, fitted, manifest)
        unfitted = session.unfitted(params, fitted, manifest)
        params = fitted
        self.base.update(
            model={
                "name": spec.name,
                "description": spec.description,
                "params": session.recorded_params(params),
                "data_format": data_format,
            }
            | ({"fitted_to_data": changes} if changes else {}),
            placement=placement.__dict__,
            data=session.data_section(spec, manifest, params),
        )
        runner = runner_lib.Runner(
            spec, params, strategy, cfg.precision, cfg.xla, train=False, data_format=data_format
        )
        self.base["weights"] = weights.load(runner, spec, cfg)
        folded = 0
        if conv_grads.folds(cfg.fold_batch_norm, placement.accelerator):
            folded = folding.fold_batch_norms(runner.model, runner.strategy)
        self.base["model"]["batch_norms_folded"] = folded
        self._model_ready = time.perf_counter() - self._t_setup
        return Built(spec, params, runner, placement, tuple(batches), manifest, prices, unfitted)

    # ------------------------------------------------------------ records
    def new_record(self, batch: int, built: Built, index: int) -> dict:
        """The record of BATCH (INDEX in the sweep), written as `running`; now in flight."""
        replicas = built.placement.num_replicas
        record = {k: v for k, v in self.base.items() if k not in ("run_id", "started")}
        record.update(
            run_id=records.new_run_id(f"{self.cfg.model}-infer-b{batch}"),
            started=records.now_iso(),
            global_batch_size=batch,
            per_replica_batch_size=batch // replicas,
            sweep={"id": self.base["run_id"], "batch_sizes": list(built.batches), "index": index},
        )
        self._current = record
        self.write(record)  # "running", replaced when measured
        return record

    def add_host_sections(self, record: dict) -> None:
        """RECORD's start-up, hardware and software sections: the invocation's, shared."""
        for key in _SHARED:
            record[key] = self.base[key]

    def write(self, record: dict) -> str | None:
        """Writes RECORD; on a multi-host TPU slice only host 0 does (others: None)."""
        return records.write(record, self.cfg.results_dir) if self.is_chief else None

    def attach(self, record: dict, name: str, data: bytes) -> str | None:
        """A file kept beside RECORD (RESULTS_DIR/<run_id>.files/NAME); host 0 only."""
        if not self.is_chief:
            return None
        return records.write_attachment(self.cfg.results_dir, record["run_id"], name, data)

    def finish(self, record: dict) -> None:
        """RECORD measured: written as `ok` and kept in `records`."""
        record.update(status="ok", finished=records.now_iso())
        record["record_path"] = self.write(record)
        self.records.append(record)

    def done(self) -> None:
        """Every record is finished: a failure from here on rewrites none."""
        self.batch = None
        self._current = None

    def fail(self, status: str, error: str, cause: BaseException | None = None) -> str | None:
        """Writes the record in flight as failed or interrupted (marked refused when CAUSE
        refused the flags, prices or hardware); returns its path."""
        record = self._current
        if record is None:  # every batch size already has its finished record
            return None
        if cause is not None:
            session.mark_refused(record, cause)
        record.update(status=status, error=error, finished=records.now_iso())
        record["record_path"] = self.write(record)
        return record["record_path"]

    def close(self) -> None:
        if self._progress is not None:
            self._progress.close()

    # ------------------------------------------------------------ measuring
    def measure(self, built: Built, batch: int) -> dict:
        """Warm-up and timed batches of BATCH (infer_timing.py): the closed loop's figures."""
        from tpubench.run import progress as progress_lib

        self.batch = batch
        cfg, runner = self.cfg, built.runner
        total = cfg.num_warmup_batches + cfg.num_batches
        self._progress = progress_lib.Progress(total, cfg.log_every_secs, unit="batch")
        self._progress.set_batch(batch)
        predict = infer_timing.predictor(runner, batch, built.manifest, cfg.seed)
        sweep = infer_timing.Timed(
            cfg.num_warmup_batches, cfg.num_batches, cfg.max_seconds, batch, f"infer b={batch}"
        )
        results = infer_timing.measure(predict, sweep, self._progress, self._on_first_prediction)
        results["examples_per_sec_per_replica"] = (
            results["examples_per_sec"] / runner.strategy.num_replicas_in_sync
        )
        return results

    def _on_first_prediction(self) -> None:
        if self._first_prediction is None:
            self._first_prediction = (time.time(), time.perf_counter())

    def startup(self, batch: int) -> None:
        """The `startup` section, once the first prediction (of BATCH) is back."""
        import psutil

        wall, perf = self._first_prediction
        self.base["startup"] = {
            "time_to_first_prediction": wall - psutil.Process().create_time(),
            "time_to_first_prediction_from": "process start",
            "setup_to_first_prediction": perf - self._t_setup,
            "model_ready_seconds": self._model_ready,
            "batch_size": batch,
        }

    def describe(self, built: Built) -> tuple[efficiency.Efficiency, dict | None]:
        """Host probes, FLOPs, peak and accuracy: (Efficiency, accuracy or None).

        After the first prediction, so that it never counts in the time to it.
        """
        cfg = self.cfg
        self.base.update(session.probe(built.placement, cfg.precision))
        view = efficiency.PeakView.of(cfg, train=False)
        measured = efficiency.measure(
            built.spec, built.params, built.placement, view, built.unfitted
        )
        accuracy = None
        if built.manifest is not None and cfg.check_accuracy:
            accuracy = self._accuracy(built, built.runner.global_batch_size)
        return measured, accuracy

    def prices(self) -> cost_runs.Prices:
        """The prices of what ran: with no --machine, the probed accelerators choose it."""
        hardware = self.base["hardware"]
        return cost_runs.prices(self.cfg.cost, hardware["accelerators"], hardware.get("cpu"))

    def _accuracy(self, built: Built, batch: int) -> dict:
        """One untimed pass over the eval split with the weights being measured."""
        from tpubench.model.model_api import Mode

        # Under TPU every batch must be full (static shapes): whole batches only.
        fixed = built.placement.strategy == "tpu"
        steps = self.cfg.eval_steps
        if fixed:
            steps = session.full_eval_batches(
                built.spec, built.manifest, built.params, batch, steps
            )
        runner = built.runner
        result = runner.evaluate(runner.distribute(Mode.EVAL, fixed_eval_steps=fixed), steps)
        result["split"] = built.manifest.eval_split()
        result["note"] = "one untimed pass over the eval split, after the first batch size"
        return result
