"""Every file a documented command reads exists when the reader gets to it, as written.

README.md and each docs/*.md are read as a reader runs them: their shell blocks (```bash,
```sh, ```console `$` lines), line by line, in order.  A path a command reads (a sweep file,
a --flagfile, a --cloud file, a --data_dir, the records `report`, `advise`, `runs` or `rerun`
read) must be made by an earlier line of the same page (a heredoc, `mkdir`, `--output`,
`--results_dir`, a train or infer run's default `runs/`), ship in this repository, be a
gs:// URL, or hold a placeholder the reader replaces (RUN_ID, $VAR, ...).  The few paths
another page makes are listed below with the page that makes them, and each is checked to
be made there.  So a README that names a `study.yaml` no command makes fails here.
"""

from __future__ import annotations

import pathlib
import re
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import doc_commands  # noqa: E402
import doc_shell  # noqa: E402

ROOT = doc_commands.ROOT
PAGES = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]

_READS = re.compile(
    r"(?:tpubench-launch sweep |--flagfile=|--cloud=|--data_dir=|"
    r"tpubench (?:report|advise|runs|rerun)(?: --[\w=.,:-]+)* )([^\s;|&)]+)"
)
_MAKES = re.compile(
    r"(?:--output=|--results_dir=|--model_dir=|mkdir -p |results_dir: |cat > |> |"
    r"--flagfile_out=)([^\s;|&)]+)"
)
_PLACEHOLDER = re.compile(r"[$A-Z]{2,}|\.\.\.|^gs:|[<>\[\]{}*]")

# Paths made otherwise, with the page and the words there that make them: a YAML block the
# prose says to save, or a file a command writes as a side effect.
ELSEWHERE = {
    ("README.md", "tpu.yaml"): ("docs/launch.md", "Save as `tpu.yaml`:"),
    ("docs/studies.md", "cloud.yaml"): ("docs/studies.md", "the file above as `cloud.yaml`"),
    ("docs/studies.md", "runs/studies/tpu_vs_gpu/launch/tpu-vm.yaml"): (
        "docs/studies.md",
        "to `RESULTS_DIR/launch/EXECUTOR.yaml`",
    ),
}


def _lines(page: str) -> list[tuple[int, str]]:
    """(line number, shell line) of every runnable line of PAGE, continuations joined."""
    text = (ROOT / page).read_text()
    out = []
    for match in doc_shell._FENCE.finditer(text):
        lang, body = match.group(1), match.group(2)
        if lang not in ("bash", "sh", "console"):
            continue
        first = text[: match.start()].count("\n") + 2
        for at, line in doc_commands._joined(body):
            if lang == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            out.append((first + at, line.split(" #", 1)[0] if "<<" not in line else line))
    return out


def _made_by_runs(line: str) -> list[str]:
    out = []
    if re.search(r"tpubench (train|infer)\b", line) and "--results_dir" not in line:
        out.append("runs")  # the default results directory
    if re.search(r"tpubench (tune|study run)\b", line):
        out.append("runs")
    return out


def missing(page: str) -> list[str]:
    made: list[str] = []
    out = []
    for number, line in _lines(page):
        for path in _READS.findall(line):
            path = path.strip("'\"")
            if _PLACEHOLDER.search(path) or (ROOT / path).exists():
                continue
            if any(path == m or path.startswith(m.rstrip("/") + "/") for m in made):
                continue
            if (page, path) in ELSEWHERE:
                continue
            out.append(f"{page}:{number}: {path} (in: {line.strip()[:90]})")
        made += [m.strip("'\"") for m in _MAKES.findall(line)] + _made_by_runs(line)
    return out


@pytest.mark.parametrize("page", PAGES)
def test_every_file_a_command_reads_is_made_first(page):
    assert not missing(page), "\n".join(missing(page))


def test_the_paths_made_elsewhere_are_made_there():
    for (_, path), (page, text) in ELSEWHERE.items():
        assert text in (ROOT / page).read_text(), (path, page)


def test_a_readme_naming_a_file_no_command_makes_fails(tmp_path, monkeypatch):
    """The check itself: README's sweep commands as they were (`study.yaml`) are caught."""
    page = tmp_path / "README.md"
    page.write_text("```bash\ntpubench-launch sweep study.yaml --dry-run\n```\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert missing("README.md") == [
        "README.md:2: study.yaml (in: tpubench-launch sweep study.yaml --dry-run)"
    ]
    page.write_text(
        "```bash\ncat > study.yaml <<'EOF'\nname: s\nEOF\n"
        "tpubench-launch sweep study.yaml --dry-run\n```\n"
    )
    assert missing("README.md") == []


def _heredocs(page: str) -> list[str]:
    """The `cat > FILE <<'EOF' ... EOF` blocks of PAGE's shell blocks, as written."""
    text = (ROOT / page).read_text()
    return re.findall(r"^cat > \S+ <<'EOF'\n.*?^EOF$", text, re.S | re.M)


def test_readmes_dry_runs_run_as_written_with_the_files_it_makes(tmp_path):
    """README's sweep file is written by its own heredoc; its dry runs then run here."""
    import os
    import subprocess

    lines = [line for _, line in _lines("README.md") if "--dry-run" in line]
    runnable = [x for x in lines if not _PLACEHOLDER.search(x.split("--dry-run")[0])]
    assert "tpubench-launch sweep threads.yaml --dry-run" in [x.strip() for x in runnable]
    script = "set -e\n" + "\n".join(_heredocs("README.md") + runnable) + "\n"
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "COLUMNS")}
    env["PATH"] = f"{pathlib.Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    proc = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "sweep threads: 2 configuration(s)" in proc.stdout
    assert not (tmp_path / "runs" / "threads").exists()  # a dry run writes nothing
