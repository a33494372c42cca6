"""`tpubench runs DIR...`: list the run records under directories or gs:// prefixes."""

from __future__ import annotations

import json
import sys

from absl import flags

FLAGS = flags.FLAGS


def main(args: list[str], full_argv: list[str]) -> int:

    from tpubench.core import errors, safe_text
    from tpubench.run.train import io_time
    from tpubench.storage import records

    if not args:
        raise errors.UsageError("usage: tpubench runs DIR_OR_GS_PREFIX... (where records are)")

    def warn(message: str) -> None:
        print(f"tpubench runs: warning: {safe_text.shown(message, None)}", file=sys.stderr)

    rows = records.summary_rows(args, warn=warn)
    if FLAGS.format == "json":
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no run records under {safe_text.shown(' '.join(args))}")
        return 0
    print(f"{'started':<26} {'status':<11} {'kind':<6} {'model':<14} {'ex/s':>11}  record")
    shown = safe_text.shown  # record text: one safe line per field
    for r in rows:
        rate = f"{r['examples_per_sec']:,.1f}" if r["examples_per_sec"] else "-"
        share, blocked = r.get("io_blocked_share"), r.get("io_blocked_seconds")
        span = blocked / share if share and blocked else None
        noticeable = span is not None and io_time.noticeable(blocked, span)
        io = f"  (writes blocked {100 * share:.0f}% of training)" if noticeable else ""
        print(
            f"{shown(r['started'] or '-'):<26} {shown(r['status'] or '-'):<11} "
            f"{shown(r['kind']):<6} {shown(r['model'] or '-'):<14} {rate:>11}  "
            f"{shown(r['path'])}{io}"
        )
    return 0


def define():
    flags.DEFINE_enum("format", "table", ["table", "json"], "Output format.")
