"""Benchmark aid (not a test): a shipped study file cut down to one kind of device's cells.

`tpubench study run` runs every cell this host can run; on the GPU machine
that includes CPU cells (minutes each at full scale).  This writes a copy
of study NAME whose setups are only those on DEVICE, chosen by each setup's
`device:` key (a `vcpus:` setup is a CPU), never by label or cell id, so it
keeps working when setups are renamed or added.  Parts left without setups
are dropped, and so are findings (checked by the report, not needed to run
the cells) and published comparisons.  The study files are found where
`tpubench study list` says they are.

    python bench/study_cells.py NAME DEVICE OUT.yaml     # exit 3: no cells on DEVICE
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import yaml


def study_dir() -> str:
    out = subprocess.run(
        [sys.executable, "-m", "tpubench", "study", "list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    m = re.search(r"study files: (\S+)", out)
    if not m:
        raise SystemExit("study_cells: `tpubench study list` did not say where the study files are")
    return m.group(1)


def device_of(setup: dict) -> str | None:
    return setup.get("device") or ("cpu" if "vcpus" in setup else None)


def cut(doc: dict, device: str) -> dict:
    parts = []
    for part in doc.get("parts") or []:
        setups = [s for s in part.get("setups") or [] if device_of(s) == device]
        if setups:
            parts.append(dict(part, setups=setups))
    out = {k: v for k, v in doc.items() if k not in ("parts", "findings", "published")}
    out["parts"] = parts
    form = dict(out.get("form") or {})
    labels = {s["label"] for p in parts for s in p["setups"]}
    if form.get("baseline") and form["baseline"] not in labels:
        form.pop("baseline")  # the baseline setup is on another device
    if form:
        out["form"] = form
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    name, device, out_path = argv
    with open(os.path.join(study_dir(), f"{name}.yaml")) as f:
        doc = yaml.safe_load(f)
    doc.setdefault("name", name)
    small = cut(doc, device)
    setups = [s["label"] for p in small["parts"] for s in p["setups"]]
    if not setups:
        print(f"study {name}: no setups on {device}")
        return 3
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as f:
        yaml.safe_dump(small, f, sort_keys=False)
    print(f"study {name}: setups on {device}: {', '.join(setups)} -> {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
