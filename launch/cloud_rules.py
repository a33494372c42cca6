"""`python -m tpubench_launch.cloud_rules FILE PREFIX`: the launcher's cloud settings, asked.

tpubench never imports the launcher; `tpubench study run --executor=...`
asks it here what a --cloud file may hold and whether FILE's values keep the
launcher's formats (cloud_names.py), and reads one JSON object back:
{"settings": [...], "required": {executor: [...]}, "examples": {executor: "..."},
"code_keys": {key: what it chooses} (keys that need --trust_code: trust.py),
"problem": the one line naming the first bad value, with PREFIX, or null}.
"""

from __future__ import annotations

import json
import sys

from tpubench.core import safe_yaml
from tpubench_launch import cloud_names, errors, trust
from tpubench_launch.executors import base, cloud


def rules(doc, prefix: str) -> dict:
    """What the launcher accepts in a cloud: mapping, and DOC's first bad value."""
    problem = None
    if isinstance(doc, dict):
        try:
            cloud_names.check(doc, prefix)
        except errors.UsageError as e:
            problem = str(e)
    rented = base.cloud_executors()
    return {
        "settings": list(cloud.SETTINGS),
        "required": {e.name: list(e.required) for e in rented},
        # an executor's own example; the others are the VMs' (study keeps its short one)
        "examples": {e.name: e.example for e in rented if e.example != cloud.EXAMPLE},
        "code_keys": dict(trust.CODE_SETTINGS),
        "problem": problem,
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m tpubench_launch.cloud_rules FILE PREFIX", file=sys.stderr)
        return 2
    try:
        doc = safe_yaml.load(args[0])
    except (OSError, safe_yaml.Refused) as e:
        print(f"{args[0]}: {e}", file=sys.stderr)
        return 2
    print(json.dumps(rules(doc, args[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
