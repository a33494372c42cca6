"""A live progress line: step, rate, loss, ETA.

On a terminal it redraws one line (rich); elsewhere (CI, log files) it
prints a plain line every `every_secs` so logs stay readable.
"""

from __future__ import annotations

import sys
import time


def _fmt_eta(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds < 0:
        return "--:--"
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class Progress:
    def __init__(
        self,
        total_steps: int,
        every_secs: float = 10.0,
        enabled: bool = True,
        stream=None,
        unit: str = "step",
    ):
        self.total = total_steps
        self.unit = unit
        self.every = every_secs
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.tty = enabled and self.stream.isatty()
        self._last_print = 0.0
        self._live = None
        if self.tty:
            from rich.console import Console
            from rich.live import Live

            self._live = Live(
                console=Console(file=self.stream), transient=True, refresh_per_second=4
            )
            self._live.start()

    def update(
        self,
        step: int,
        rate: float | None,
        loss: float | None,
        phase: str = "train",
        rate_is: str = "",
    ):
        """The line at STEP; RATE_IS names what RATE measures (e.g. 'mean since warm-up')."""
        if not self.enabled:
            return
        eta = (self.total - step) / (rate / self._batch) if rate and self._batch else None
        rate_s = (
            f"{rate:,.1f} ex/s" + (f" ({rate_is})" if rate_is else "") if rate else "warming up"
        )
        loss_s = f"  loss {loss:.4f}" if loss is not None else ""
        line = (
            f"[{phase}] {self.unit} {step}/{self.total} ({100 * step / max(1, self.total):.0f}%) "
            f"{rate_s}{loss_s}  ETA {_fmt_eta(eta)}"
        )
        if self._live is not None:
            self._live.update(line)
            return
        now = time.monotonic()
        if now - self._last_print >= self.every or step >= self.total:
            print(line, file=self.stream, flush=True)
            self._last_print = now

    _batch = 0

    def set_batch(self, global_batch_size: int):
        self._batch = global_batch_size

    def close(self):
        if self._live is not None:
            self._live.stop()
            self._live = None
