"""Turns a tutorial's fenced shell blocks into one bash script (tests/docs/test_doc_tutorials.py).

Runnable blocks are fenced as ```bash or ```sh (every line is a command) or
```console (lines starting with `$ ` are commands, `\\` continues them, the
rest is sample output).  Untagged blocks are never run: sample output, and
commands that need a cloud account.  A console command whose sample output
starts with `... error:` is expected to fail, and the script checks it does;
one written `CMD; echo "exit code $?"` must exit with the code its sample
output shows on its `exit code N` line.
"""

from __future__ import annotations

import dataclasses
import re
import shlex

_ECHO = '; echo "exit code $?"'
_EXIT = re.compile(r"^exit code (\d+)$")
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


@dataclasses.dataclass(frozen=True)
class Command:
    text: str
    fails: bool = False  # the sample output is an error line
    exit_code: int | None = None  # the sample output's `exit code N` line


def commands(markdown: str) -> list[Command]:
    """The runnable commands of MARKDOWN, in order."""
    out: list[Command] = []
    for lang, body in _FENCE.findall(markdown):
        if lang in ("bash", "sh"):
            out.append(Command(body.rstrip("\n")))
        elif lang == "console":
            out.extend(_console(body))
    return out


def _console(body: str) -> list[Command]:
    out: list[Command] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            i += 1
            continue
        cmd = [lines[i][2:]]
        while cmd[-1].endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd.append(lines[i])
        i += 1
        first_output = lines[i] if i < len(lines) else ""
        fails = bool(re.match(r"^[\w.-]+( [\w.-]+)*: error:", first_output))
        text = "\n".join(cmd)
        exit_code = None
        if text.endswith(_ECHO):
            end = i
            while end < len(lines) and not lines[end].startswith("$ "):
                end += 1
            codes = [m.group(1) for m in map(_EXIT.match, lines[i:end]) if m]
            if codes:
                text, exit_code = text[: -len(_ECHO)], int(codes[-1])
        out.append(Command(text, fails, exit_code))
    return out


def script(markdown: str) -> str:
    """One bash script that runs every command and stops at the first surprise."""
    parts = [
        "set -eo pipefail",
        "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT",  # a tutorial's forgotten server
    ]
    for n, cmd in enumerate(commands(markdown), 1):
        parts.append(f"echo {shlex.quote(f'+++ [{n}] ' + cmd.text.splitlines()[0])} >&2")
        if cmd.exit_code is not None:
            parts.append(
                f'set +e\n{cmd.text}\nrc=$?\nset -e\necho "exit code $rc"\n'
                f"[ $rc = {cmd.exit_code} ] || {{ echo 'expected exit code {cmd.exit_code}' >&2; "
                "exit 97; }"
            )
        elif cmd.fails:
            parts.append(
                f"if {cmd.text}\nthen echo 'expected this command to fail' >&2; exit 97; fi"
            )
        else:
            parts.append(cmd.text)
    parts.append("echo '+++ tutorial done' >&2")
    return "\n".join(parts) + "\n"
