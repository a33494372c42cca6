"""Benchmark (not a test): `tpubench report` and `tpubench advise` over 10,000 records.

    .venv/bin/python bench/report_scale.py                      # 1,000 and 10,000 records
    .venv/bin/python bench/report_scale.py --records=10000 --configurations=50

Writes the records into a temporary directory: copies of a real record
(tests/report/fixtures/real/mnist_mlp.json, from a 20-step `tpubench train`)
made by `tpubench.testing.record_copies`, each its own trial with its own
throughput, spread over --configurations configurations (thread counts).
Then runs each command once, as a user types it, in a child process, and
prints its wall time and peak resident memory (the child's own
`ru_maxrss`, from `os.wait4`).  The readers stream the records and keep a
few numbers of each, so the peak should barely grow from 1,000 records to
10,000 (docs/reliability.md, "Readers that scale").
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "tests" / "report" / "fixtures" / "real" / "mnist_mlp.json"
BIN = pathlib.Path(sys.executable).parent


def make_records(directory: str, n: int, configurations: int) -> None:
    from tpubench.testing import record_copies

    template = json.loads(TEMPLATE.read_text())
    rng = random.Random(0)
    for c in range(configurations):
        count = n // configurations + (c < n % configurations)
        variant = json.loads(json.dumps(template))
        variant["config"]["hardware"]["num_intra_threads"] = c + 1
        rates = [1000.0 + 10 * c + rng.random() * 100 for _ in range(count)]
        record_copies.write(variant, rates, directory, prefix=f"t{c + 1}")


def measure(args: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MiB, exit code) of one command in a child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "100"},
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace").strip()
    proc.stderr.close()
    if proc.returncode:
        print(f"  {' '.join(args[:2])} exited {proc.returncode}: {err[-300:]}")
    return wall, usage.ru_maxrss / 1024, proc.returncode  # ru_maxrss is in KiB on Linux


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--records", default="1000,10000", help="record counts, comma separated")
    p.add_argument("--configurations", type=int, default=10, help="configurations they form")
    args = p.parse_args()
    counts = [int(x) for x in args.records.split(",")]
    tpubench = str(BIN / "tpubench")
    print(f"{'records':>8} {'command':<28} {'wall s':>8} {'peak RSS MiB':>13} {'exit':>5}")
    failed = 0
    for n in counts:
        with tempfile.TemporaryDirectory(prefix="report_scale_") as tmp:
            runs, out = os.path.join(tmp, "runs"), os.path.join(tmp, "report")
            start = time.perf_counter()
            make_records(runs, n, args.configurations)
            made = time.perf_counter() - start
            mib = sum(f.stat().st_size for f in pathlib.Path(runs).iterdir()) / 2**20
            print(
                f"{n:>8} {'(writing the records)':<28} {made:>8.1f} {'':>13} {'':>5}"
                f"  {mib:,.0f} MiB of records"
            )
            commands = {
                "report --output": [tpubench, "report", runs, f"--output={out}"],
                "advise --deadline=1h": [
                    tpubench,
                    "advise",
                    runs,
                    "--model=mnist_mlp",
                    "--deadline=1h",
                ],
            }
            for name, command in commands.items():
                wall, rss, code = measure(command)
                failed += code != 0
                print(f"{n:>8} {name:<28} {wall:>8.1f} {rss:>13.0f} {code:>5}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
