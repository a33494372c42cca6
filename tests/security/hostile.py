"""Hostile record texts the security tests share (issue 25)."""

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "report" / "fixtures"))
import make_fixtures  # noqa: E402

# Window title, clear screen, colour, an OSC 8 hyperlink, a C1 CSI, bidi
# override, zero-width space, and a CR/LF that would print a fake table row.
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\\x9b1m"
FAKE_ROW = "\r\nFAKE | 999,999 | row"
BIDI = "gpj.\u202eexe\u200bx\u2066"
HOSTILE_MODEL = "mnist_mlp" + ESCAPES + FAKE_ROW + BIDI
HTML_MODEL = "<img src=x onerror=alert(1)>|cell"
FORMULA_MODEL = '=HYPERLINK("http://evil","x")'

# Characters that must never reach a console raw (newline aside).
FORBIDDEN = [chr(c) for c in range(0x20) if c != 0x0A] + [chr(c) for c in range(0x7F, 0xA0)]
FORBIDDEN += list("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200c\u200d\ufeff")


def raw_controls(text: str) -> list[str]:
    return sorted({repr(ch) for ch in text if ch in FORBIDDEN})


def write_records(directory: pathlib.Path, model: str, n: int = 2) -> pathlib.Path:
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        run_id = f"{directory.name}-{i}"
        rec = make_fixtures.record(run_id, model, make_fixtures.MLP, 1000 + 10 * i)
        (directory / f"{run_id}.json").write_text(json.dumps(rec))
    return directory


def record(run_id, model="mnist_mlp", rate=1000.0, **kw):
    return make_fixtures.record(run_id, model, make_fixtures.MLP, rate, **kw)
