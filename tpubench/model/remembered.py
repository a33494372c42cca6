"""The model a training run's model_dir holds, remembered there so no flag has to repeat it.

A run writes `model.json` into its (local) model_dir once it holds the
directory's lock: the model's name, its --params and --tiny, and each
--model_module as the absolute path of the file and the SHA-256 of its
bytes (a dotted module name as is).  Its record keeps the same code list as
`model_code`.  `infer --model_dir`, `tune --model_dir` and `rerun` read them
before TensorFlow loads, so the model is the one that was trained, not
mnist_mlp.

A model_dir or a record is data from anywhere, so the remembered module is
code named by a file, under the rule of core/code_flags.py: it is imported
only with --trust_code (or when the user types --model_module again), and a
file whose bytes changed since the run is refused, whatever the flags, in
one line naming it.  Pure Python; gs:// model_dirs are not remembered.
"""

from __future__ import annotations

import hashlib
import json
import os

from tpubench.core import code_flags, errors, safe_files, safe_text
from tpubench.storage import files, gcs
from tpubench.storage.run_dir import RunDir

LIMIT = 64 * 1024  # model.json: a name, a few params and module paths
_CODE_LIMIT = 64 * 1024 * 1024  # a model module hashed (any real one is far smaller)
ACCEPTED = "the model.json a tpubench train run writes"


def _sha256(path: str) -> str:
    data = safe_files.read_bytes(path, "--model_module", _CODE_LIMIT, "a Python file")
    return hashlib.sha256(data).hexdigest()


def code(model_modules) -> list[dict]:
    """Each --model_module as {"path": absolute path, "sha256": hex}, or {"module": dotted name}."""
    out = []
    for module in model_modules:
        if module.endswith(".py") and os.path.isfile(module):
            out.append({"path": os.path.abspath(module), "sha256": _sha256(module)})
        else:
            out.append({"module": module})
    return out


def write(model_dir: str, cfg) -> None:
    """MODEL_DIR/model.json for the run of CFG (a TrainConfig); nothing on gs://."""
    if gcs.is_gcs(model_dir):
        return
    info = {
        "model": cfg.model,
        "params": [f"{k}={v}" for k, v in cfg.params],
        "tiny": cfg.tiny,
        "model_modules": code(cfg.model_modules),
    }
    files.write_atomic(RunDir(model_dir).model_file, json.dumps(info, indent=1) + "\n")


def read(model_dir: str | None) -> dict | None:
    """MODEL_DIR's model.json, checked; None when there is none (an older run, gs://)."""
    if not model_dir or gcs.is_gcs(model_dir):
        return None
    path = RunDir(model_dir).model_file
    if not os.path.lexists(path):
        return None
    try:
        info = json.loads(safe_files.read_text(path, "", LIMIT, ACCEPTED))
    except ValueError:
        info = None
    modules = info.get("model_modules") if isinstance(info, dict) else None
    ok = (
        isinstance(info, dict)
        and isinstance(info.get("model"), str)
        and isinstance(info.get("params"), list)
        and all(isinstance(p, str) for p in info["params"])
        and isinstance(info.get("tiny"), bool)
        and isinstance(modules, list)
        and all(entry_ok(m) for m in modules)
    )
    if not ok:
        raise errors.UsageError(f"{safe_text.shown(path)} is damaged; accepted: {ACCEPTED}")
    return info


def entry_ok(entry) -> bool:
    if not isinstance(entry, dict):
        return False
    if set(entry) == {"module"}:
        return isinstance(entry["module"], str)
    return set(entry) == {"path", "sha256"} and all(isinstance(v, str) for v in entry.values())


def recorded(path: str, record: dict, modules: list) -> list:
    """MODULES (a record's --model_module values) as the files its run imported, unchanged.

    A record since `model_code` names each file by its absolute path and SHA-256: the rerun
    imports that path (not one relative to wherever it is started), if its bytes are the
    same.  An older record's values are returned as they are.
    """
    entries = record.get("model_code")
    if not (isinstance(entries, list) and len(entries) == len(modules)):
        return modules
    if not all(entry_ok(e) for e in entries):
        raise errors.UsageError(f"{safe_text.shown(path)}: model_code is damaged")
    return unchanged(entries, safe_text.shown(path) + "'s run", "run `tpubench train` with it")


def unchanged(entries: list, where: str, then: str = "pass --model_module=FILE") -> list[str]:
    """The code paths of ENTRIES (a model_dir's or a record's), each file's bytes as recorded.

    Raises:
      UsageError: a file that is gone or whose bytes changed since the run, naming it
        and WHERE the run is (one line, whatever the trust flags say).
    """
    paths = []
    for entry in entries:
        if "module" in entry:
            paths.append(entry["module"])
            continue
        path = entry["path"]
        shown = safe_text.shown(path)
        if not os.path.isfile(path):
            raise errors.UsageError(
                f"{where} was trained with --model_module={shown}, which is gone; refused: "
                f"find where that module now lives, then {then}"
            )
        if _sha256(path) != entry["sha256"]:
            raise errors.UsageError(
                f"--model_module={shown} changed since {where} was trained (its SHA-256 differs); "
                f"refused: check it, then {then}"
            )
        paths.append(path)
    return paths


def model_flags(model_dir: str, given: dict, trusted: bool) -> tuple[dict, list[str]]:
    """The model flags MODEL_DIR remembers that the user did not give, and the warning lines.

    Args:
      given: the model flags the user gave ({"model": "lenet", ...}: present ones only).
      trusted: --trust_code, consent to import the remembered code.

    Returns:
      ({"model": ..., "params": [...], "tiny": ..., "model_module": [...]}, warnings): only
      the flags to set; ({}, []) when MODEL_DIR remembers nothing.

    Raises:
      UsageError: --model names another model than the one trained there; the remembered
        module changed, is gone, or would be imported without --trust_code.
    """
    info = read(model_dir)
    if info is None:
        return {}, []
    where = f"--model_dir={safe_text.shown(model_dir)}"
    if "model" in given and given["model"] != info["model"]:
        raise errors.UsageError(
            f"--model={safe_text.shown(given['model'])}: {where} holds a run of model "
            f"{safe_text.shown(info['model'])}; drop --model (the model_dir names it)"
        )
    out = {k: info[k] for k in ("model", "params", "tiny") if k not in given}
    if "model_module" in given or not info["model_modules"]:
        return out, []
    paths = unchanged(info["model_modules"], where)
    shown_dir = RunDir(model_dir).model_file
    warnings = code_flags.check(
        shown_dir, "", {"model_module": paths}, trusted, runs="this command"
    )
    return out | {"model_module": paths}, warnings
