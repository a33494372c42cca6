"""Every `tpubench` and `tpubench-launch` command the docs show, as argv lists (test_doc_commands).

Where commands are found, in README.md and docs/*.md:

- ```bash / ```sh blocks: every line (a trailing `\\` continues it; `#` starts a comment;
  shell words around the command, `for ... do`, `time`, `taskset -c 0`, `| head`, `&&`,
  `> file`, are left out); when the untagged block right after shows an error line, the
  block's last command is meant to fail;
- ```console blocks: the `$ ` lines (tests/docs/doc_shell.py), with what their sample
  output says: an `... error:` line or an `exit code N` line means it is meant to fail;
- untagged blocks: lines starting `$ tpubench` or `tpubench ` / `tpubench-launch ` that
  are not output (`tpubench infer: error: ...`);
- inline code in prose that starts with `tpubench ` and names a flag: only its flag
  names are checked (prose often writes placeholders for values).
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
import shlex

import doc_shell

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = ("tpubench", "tpubench-launch")
_OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>&1", "2>", ")", "("}
_INLINE = re.compile(r"(?<!`)`(tpubench(?:-launch)? [^`\n]+)`")
_ERROR_NEXT = re.compile(r"\A\s*```\ntpubench(-launch)?( [\w-]+)?: error: ")


@dataclasses.dataclass(frozen=True)
class DocCommand:
    where: str  # file:line
    text: str  # as written, continuations joined
    argv: tuple[str, ...]  # from `tpubench` or `tpubench-launch` on
    fails: bool = False  # the sample output says it fails
    exit_code: int | None = None  # the sample output's `exit code N`
    inline: bool = False  # inline code in prose: flag names only

    @property
    def program(self) -> str:
        return self.argv[0]

    @property
    def words(self) -> tuple[str, ...]:
        """The subcommand words: ('study', 'run'), ('prices',), ('sweep',)."""
        out = []
        for a in self.argv[1:]:
            if a.startswith("-"):
                break
            out.append(a)
        two = {"study", "data"} if self.program == "tpubench" else set()
        return tuple(out[:2] if out and out[0] in two else out[:1])


def _argv(line: str) -> tuple[str, ...] | None:
    """The tpubench words of one shell line, or None when it runs no tpubench."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>()")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        words = list(lexer)
    except ValueError:  # an unclosed quote: not a command a shell would run either
        return None
    for i, w in enumerate(words):
        name = w.rsplit("/", 1)[-1]  # .venv/bin/tpubench
        if name in PROGRAMS and (i == 0 or words[i - 1] in _OPERATORS or _prefix(words[:i])):
            rest = words[i + 1 :]
            end = next((j for j, x in enumerate(rest) if x in _OPERATORS), len(rest))
            return (name, *rest[:end])
    return None


def _prefix(words: list[str]) -> bool:
    """WORDS before tpubench are a prefix that runs it: `time`, `taskset -c 0,1`, `do`."""
    tail = words[-3:]
    return tail[-1:] in (["time"], ["do"], ["then"]) or (len(tail) >= 3 and tail[-3] == "taskset")


def _joined(body: str) -> list[tuple[int, str]]:
    """(line offset, logical line) with `\\` continuations joined."""
    out, start, cur = [], 0, ""
    for i, line in enumerate(body.splitlines()):
        if not cur:
            start = i
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        out.append((start, cur + line))
        cur = ""
    if cur:
        out.append((start, cur))
    return out


def _is_output(line: str) -> bool:
    return bool(re.match(r"^tpubench(-launch)?( [\w-]+)?: ", line))


def commands(path: pathlib.Path) -> list[DocCommand]:
    """Every command of one Markdown file, in order."""
    text = path.read_text()
    name = str(path.relative_to(ROOT))
    out: list[DocCommand] = []
    for match in doc_shell._FENCE.finditer(text):
        lang, body = match.group(1), match.group(2)
        first = text[: match.start()].count("\n") + 2  # the line after the fence
        if lang == "console":
            offsets = [i for i, x in enumerate(body.splitlines()) if x.startswith("$ ")]
            for at, cmd in zip(offsets, doc_shell._console(body), strict=True):
                argv = _argv(cmd.text.replace("\\\n", " "))
                if argv:
                    out.append(
                        DocCommand(f"{name}:{first + at}", cmd.text, argv, cmd.fails, cmd.exit_code)
                    )
            continue
        found = []
        for at, line in _joined(body):
            if lang not in ("bash", "sh"):
                if line.startswith("$ "):
                    line = line[2:]
                elif not line.startswith(tuple(f"{p} " for p in PROGRAMS)) or _is_output(line):
                    continue
            argv = _argv(line)
            if argv:
                found.append(DocCommand(f"{name}:{first + at}", line.strip(), argv))
        # a bash block whose sample output, the untagged block right after it, is an error
        if found and lang in ("bash", "sh") and _ERROR_NEXT.match(text[match.end() :]):
            found[-1] = dataclasses.replace(found[-1], fails=True)
        out += found
    for match in _INLINE.finditer(text):
        span = match.group(1)
        if "--" in span and not re.search(r"[\[\]]", span):
            argv = _argv(span)
            if argv:
                line = text[: match.start()].count("\n") + 1
                out.append(DocCommand(f"{name}:{line}", span, argv, inline=True))
    return out


def every() -> list[DocCommand]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [c for f in files for c in commands(f)]
