"""`tpubench-launch executors`: every executor and what it hosts, and a --cloud file's check.

The list comes from each executor's declaration (`base.published`, one line
each or `--json`, which `tpubench study` reads).  With `--check-cloud=FILE`
each executor also says the first value of FILE it refuses by format
(`problem`: cloud_file.py) and, for each machine of FILE's `machines:`,
whether it hosts that machine: the one hosting check (tpubench/core/
hosting.py) that the sweep and the study planner ask too (`machines`:
setup label -> its one refusal line, or null).
"""

from __future__ import annotations

import json

from tpubench.core import hosting, safe_text
from tpubench_launch import cloud_file, errors


def add(sub) -> None:
    """The `executors` subcommand and its flags, on SUB (argparse subparsers)."""
    ex = sub.add_parser(
        "executors", help="list the sweep executors and what each can host (devices, clusters)"
    )
    ex.add_argument(
        "--json", action="store_true", help="one JSON list, as `tpubench study` reads it"
    )
    ex.add_argument(
        "--check-cloud",
        metavar="FILE",
        help="also check FILE's cloud settings against the launcher's formats: each "
        "executor's `problem` in the JSON (the first value it refuses, or null); and each "
        "machine of its machines: against what each executor hosts (`machines` in the JSON)",
    )
    ex.add_argument(
        "--prefix", help="with --check-cloud: how a problem line starts (default 'FILE: ')"
    )


def run(args) -> int:
    """Every registered executor and what it hosts: a JSON list, or one line each; with
    --check-cloud=FILE, each one's first refused value of FILE (a line, or exit 2)."""
    from tpubench_launch.executors import base

    if args.prefix is not None and args.check_cloud is None:
        raise errors.UsageError("--prefix goes with --check-cloud=FILE")
    found = base.published(args.check_cloud, args.prefix)
    if args.check_cloud is not None:
        _hosts(found, cloud_file.read(args.check_cloud).get("machines"))
    if args.json:
        print(json.dumps(found))
        return 0
    for e in found:
        gens = e.get("tpu_generations") or []
        tpu = f" ({', '.join(e['tpu_slices'])} TPU slices" if e["tpu_slices"] else ""
        tpu += (f": {', '.join(gens)})" if gens else ")") if tpu else ""
        clusters = ", ".join(e["clusters"]) or "none"
        where = " across machines" if e["multi_host"] else ""
        if e["multi_host"] and e["one_machine_clusters"]:
            where += f" (or on one machine: {', '.join(e['one_machine_clusters'])})"
        needs = f"; cloud: {', '.join(e['required'])}" if e["required"] else ""
        print(
            f"{e['name']}: {', '.join(e['devices'])}{tpu}; clusters: {clusters}{where}; runs "
            f"{', '.join(e['subcommands'])}{needs}"
        )
        for label, line in (e.get("machines") or {}).items():
            if line:
                print(f"  {label}: {line}")
    if args.check_cloud is not None:
        refused = [e["problem"] for e in found if e["problem"]]
        if refused:
            raise errors.UsageError(refused[0])
        print(f"{cloud_file.where_of(args.check_cloud)}every value keeps the launcher's formats")
    return 0


def _hosts(found: list[dict], machines) -> None:
    """Each executor's `machines`: setup label -> the one hosting check's line for a train
    run on that machine (None: it hosts it), for the machines a --cloud file maps."""
    from tpubench_launch.executors import shared

    if not isinstance(machines, dict):
        return  # none, or not a mapping: the study says so where it reads them
    renting = [e for e in found if e["rents"]]
    for e in found:
        e["machines"] = {}
        for label, machine in machines.items():
            shown = safe_text.shown(str(label), limit=100)
            try:
                need = shared.need_of(str(machine))
            except errors.UsageError as err:  # a TPU slice name tpus.py does not know
                e["machines"][shown] = str(err)
                continue
            line = hosting.refusal(e, need, renting) if e["rents"] else None
            e["machines"][shown] = line
