"""`tpubench-launch`: builds and runs tpubench command lines (see docs/launch.md)."""

import sys


def run() -> None:
    print("tpubench-launch: no launch subcommands yet (local-cluster, sweep arrive with the launch issue)",
          file=sys.stderr)
    sys.exit(2)
