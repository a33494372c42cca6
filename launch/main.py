"""`tpubench-launch`: builds and runs tpubench command lines (see docs/launch.md)."""

import sys

from tpubench_launch import cli


def run() -> None:
    sys.exit(cli.main())


if __name__ == "__main__":
    run()
