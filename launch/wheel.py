"""The tpubench that runs here, as a wheel for the VMs: built from this installation, offline.

tpubench is not published on the package index, so `pip install tpubench`
on a VM would install whatever someone else registered under the name.
By default each VM gets the code that runs here instead: the files of the
installed distribution's top-level packages (`tpubench`, `tpubench_launch`,
`tpubench_models`, wherever they are imported from: an editable checkout or
site-packages) and its metadata (version, dependencies, extras, console
scripts), packed as a pure-Python wheel.

The build needs no network and no build backend (a `pip wheel` of the
checkout needs the setuptools that pyproject.toml names, which a machine
may lack): a wheel is a zip file with a RECORD of every file's hash.  The
zip is reproducible (sorted names, fixed dates and modes), so the same
files give the same bytes and the same sha256, which the VMs check before
they install it (launch/package.py).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import stat
import tempfile
import zipfile

from tpubench.core import safe_files
from tpubench_launch import errors

DIST = "tpubench"
MODULES = ("tpubench", "tpubench_launch", "tpubench_models")  # when top_level.txt is missing
EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip holds: no build time in the bytes
MAX_FILE_BYTES = 16 << 20  # a source or data file; a bigger one is a stray, not tpubench
_SKIP_DIRS = ("__pycache__",)
_SKIP_SUFFIXES = (".pyc", ".pyo", "~", ".swp", ".orig", ".rej")


@dataclasses.dataclass(frozen=True)
class Wheel:
    path: str  # the .whl file
    version: str
    sha256: str  # hex digest of the file
    source: str  # where its files came from, for the dry run


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _distribution():
    try:
        return importlib.metadata.distribution(DIST)
    except importlib.metadata.PackageNotFoundError:
        raise errors.UsageError(
            f"{DIST} is not installed here (no {DIST} distribution metadata), so no wheel of it "
            "can be built for the VMs: install it (`pip install -e .` in the checkout) or name "
            "one with cloud.package (and --trust-code)"
        ) from None


def _package_dir(module: str) -> str:
    spec = importlib.util.find_spec(module)
    places = list(spec.submodule_search_locations or []) if spec else []
    if not places:
        raise errors.UsageError(
            f"cannot find the package {module} of {DIST} here: no wheel can be built for the VMs"
        )
    return os.path.realpath(places[0])


def _files(module: str, root: str) -> list[tuple[str, str]]:
    """(name in the wheel, path here) of every file of MODULE's packages under ROOT, sorted.

    Only directories that are packages (an __init__.py) and regular files (no
    symlinks, bytecode or editor leftovers) go in, as setuptools packs them.
    """
    out = []
    for here, dirs, names in os.walk(root):
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in _SKIP_DIRS and os.path.isfile(os.path.join(here, d, "__init__.py"))
        )
        rel = os.path.relpath(here, root)
        prefix = module if rel == "." else f"{module}/{rel.replace(os.sep, '/')}"
        for name in sorted(names):
            path = os.path.join(here, name)
            if name.startswith(".") or name.endswith(_SKIP_SUFFIXES):
                continue
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode):
                continue
            if info.st_size > MAX_FILE_BYTES:
                raise errors.UsageError(
                    f"{path} holds {info.st_size:,} bytes, more than any file of {DIST} "
                    f"({MAX_FILE_BYTES:,}); move it out of the package to build the VMs' wheel"
                )
            out.append((f"{prefix}/{name}", path))
    return out


def _add(z: zipfile.ZipFile, name: str, data: bytes, mode: int = 0o644) -> str:
    info = zipfile.ZipInfo(name, date_time=EPOCH)
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, data, compresslevel=6)
    return f"{name},sha256={_b64(hashlib.sha256(data).digest())},{len(data)}"


def build(out_dir: str) -> Wheel:
    """Packs the installed tpubench into OUT_DIR/tpubench-VERSION-py3-none-any.whl.

    Raises:
      UsageError: tpubench is not installed here, or a package directory
        holds a file too large to be one of its own.
    """
    dist = _distribution()
    version = dist.version
    if not re.fullmatch(r"[A-Za-z0-9.+!]+", version or ""):
        raise errors.UsageError(f"{DIST}'s installed version {version!r} is not a wheel version")
    modules = (dist.read_text("top_level.txt") or "").split() or list(MODULES)
    roots = {m: _package_dir(m) for m in modules}
    info_dir = f"{DIST}-{version}.dist-info"
    name = f"{DIST}-{version}-py3-none-any.whl"
    os.makedirs(out_dir, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".wheel-", dir=out_dir)
    os.close(fd)
    try:
        rows = []
        with zipfile.ZipFile(tmp, "w") as z:
            for module in modules:
                for arcname, path in _files(module, roots[module]):
                    data = safe_files.read_bytes(path, "", MAX_FILE_BYTES, f"a file of {DIST}")
                    mode = 0o755 if os.stat(path).st_mode & 0o111 else 0o644
                    rows.append(_add(z, arcname, data, mode))
            meta = {
                "METADATA": dist.read_text("METADATA") or f"Metadata-Version: 2.1\nName: {DIST}\n",
                "WHEEL": (
                    "Wheel-Version: 1.0\nGenerator: tpubench-launch\nRoot-Is-Purelib: true\n"
                    "Tag: py3-none-any\n"
                ),
                "entry_points.txt": dist.read_text("entry_points.txt"),
                "top_level.txt": "\n".join(modules) + "\n",
            }
            for key, text in meta.items():
                if text is not None:
                    rows.append(_add(z, f"{info_dir}/{key}", text.encode("utf-8")))
            rows.append(f"{info_dir}/RECORD,,")
            _add(z, f"{info_dir}/RECORD", ("\n".join(rows) + "\n").encode("utf-8"))
        path = os.path.join(out_dir, name)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return Wheel(path, version, sha256_of(path), os.path.commonpath(list(roots.values())))


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with safe_files.open_regular(path, "", None, "a wheel") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
