"""`tpubench-launch`: builds and runs tpubench command lines (see docs/launch.md)."""

import sys


def run() -> None:
    print(
        "tpubench-launch: no subcommands yet (local-cluster and sweep come with the launch work)",
        file=sys.stderr,
    )
    sys.exit(2)
