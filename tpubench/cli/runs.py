"""`tpubench runs DIR...`: list the run records under directories or gs:// prefixes."""

from __future__ import annotations

import json
import sys

from absl import flags

FLAGS = flags.FLAGS


def main(args: list[str], full_argv: list[str]) -> int:

    from tpubench.core import errors, safe_text
    from tpubench.storage import run_rows

    if not args:
        raise errors.UsageError("usage: tpubench runs DIR_OR_GS_PREFIX... (where records are)")

    def warn(message: str) -> None:
        print(f"tpubench runs: warning: {safe_text.shown(message, None)}", file=sys.stderr)

    rows = run_rows.summary_rows(args, warn=warn)
    if FLAGS.format == "json":
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no run records under {safe_text.shown(' '.join(args))}")
        return 0
    ran = [r for r in rows if not r["refused"]]
    refused = [r for r in rows if r["refused"]]
    out = _lines(ran) if ran else []
    if refused:  # a usage error or missing hardware: apart, they measured nothing
        out += [""] if ran else []
        out.append(
            f"refused before running ({len(refused)}): flags, prices or hardware the run "
            "could not take; nothing was measured"
        )
        out += _lines(refused)
    print("\n".join(out))
    return 0


def _lines(rows: list[dict]) -> list[str]:
    """The table: columns as wide as their widest cell, the record path last (folded, whole)."""
    from tpubench.core import columns
    from tpubench.core.safe_text import shown  # record text: one safe line per field
    from tpubench.run.train import io_time

    table = [("started", "status", "kind", "model", "ex/s", "record")]
    for r in rows:
        rate = f"{r['examples_per_sec']:,.1f}" if r["examples_per_sec"] else "-"
        share, blocked = r.get("io_blocked_share"), r.get("io_blocked_seconds")
        span = blocked / share if share and blocked else None
        noticeable = span is not None and io_time.noticeable(blocked, span)
        io = f"  (writes blocked {100 * share:.0f}% of training)" if noticeable else ""
        started = shown(r["started"] or "-")[:16].replace("T", " ")  # as recorded, to the minute
        cells = (r["status"] or "-", r["kind"], r["model"] or "-")
        table.append((started, *map(shown, cells), rate, f"{shown(r['path'])}{io}"))
    return columns.aligned(table, right=frozenset({4}), sep=" ")


def define():
    flags.DEFINE_enum("format", "table", ["table", "json"], "Output format.")
