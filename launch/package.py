"""Which tpubench each VM installs, and the shell that installs exactly that.

Three sources, from the `cloud:` settings:

- default: the tpubench that runs here, built into a wheel once per sweep
  run (launch/wheel.py) under RESULTS_DIR/package/, copied to each VM;
- `package: FILE`: a wheel or sdist of the user's, copied to each VM;
- `package_index_version: X.Y.Z`: `tpubench==X.Y.Z` from the package index,
  only when a version is named (tpubench is not published there, so a bare
  `pip install tpubench` would run whatever took the name).

A copied file is installed by its sha256, checked by pip itself
(`--require-hashes`) before anything of it runs; `package_sha256` pins the
index's file the same way, or the local file's expected hash.  The
dependencies come afterwards by name, from the wheel's own metadata.
`package` and `package_index_version` choose code, so a file naming them
needs --trust-code (launch/trust.py); the dry run prints what is installed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import tempfile

from tpubench.children import command
from tpubench.core import safe_files
from tpubench_launch import cloud_names, errors, wheel

VENV = "tpubench-venv"  # relative to the home directory: every script starts with `cd ~`
REQUIREMENTS = "tpubench-requirements.txt"  # on the VM, beside the copied file
MAX_PACKAGE_BYTES = 512 << 20
# A wheel or sdist name: it reaches pip's requirements file and the VM's home as is.
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*\.(whl|tar\.gz|zip)$")


@dataclasses.dataclass(frozen=True)
class Package:
    """What each VM installs: a file copied from here (`local`) or a version from the index."""

    origin: str  # "built here from DIR" | "cloud.package" | "the package index"
    local: str | None = None  # absolute path of the file copied to each VM
    version: str | None = None  # the index version (or the built wheel's)
    sha256: str | None = None  # pinned: pip refuses anything else

    @property
    def remote(self) -> str | None:
        """The copied file's name in the VM's home directory."""
        return os.path.basename(self.local) if self.local else None

    def describe(self) -> str:
        """One line for the dry run: what every VM installs, from where, by which hash."""
        if self.origin == "cloud.package":
            what = f"cloud.package {self.local}"
        elif self.local:
            what = f"tpubench {self.version}, {self.origin} into {self.local}"
        else:
            what = f"tpubench=={self.version} from {self.origin}"
        pin = f"by its sha256 {self.sha256}" if self.sha256 else "hash not pinned (package_sha256)"
        return f"every VM installs {what}, {pin}"


def _refuse(path: str, key: str, why: str) -> errors.UsageError:
    return errors.UsageError(f"{path}: cloud.{key}{why}")


def resolve(raw: dict, sweep_path: str, results_dir: str, dry_run: bool = False) -> Package:
    """The Package a sweep's VMs install, from its `cloud:` mapping RAW.

    The default wheel is built once per call (one per sweep run, for every
    VM of it) into RESULTS_DIR/package/; for a DRY_RUN in a temporary
    folder (the build is reproducible: the real run installs the same hash).

    Raises:
      UsageError: a package path that is not a regular file of at most
        MAX_PACKAGE_BYTES, a file name pip cannot take, a version or hash
        not of their form (cloud_names.py), both package and
        package_index_version, or a package_sha256 the file does not have.
    """
    cloud_names.check(raw, f"{sweep_path}: ")  # the version's and the hash's forms
    given, version = raw.get("package"), raw.get("package_index_version")
    sha = raw.get("package_sha256")
    if given and version:
        raise _refuse(
            sweep_path, "package", ": give package (a file) or package_index_version, not both"
        )
    if version is not None:
        return Package("the package index", version=version, sha256=sha)
    if given:
        return _file(str(given), sweep_path, sha)
    # Absolute: a path starting with '-' is no gcloud option, one with ':' no remote path.
    home = os.path.abspath(os.path.join(results_dir, "package"))
    if dry_run:  # the same files give the same bytes: the hash the real run will install
        with tempfile.TemporaryDirectory(prefix="tpubench-wheel-") as tmp:
            built = wheel.build(tmp)
        built = dataclasses.replace(built, path=os.path.join(home, os.path.basename(built.path)))
    else:
        built = wheel.build(home)
    _check_sha(built.sha256, sha, sweep_path, built.path)
    return Package(f"built here from {built.source}", built.path, built.version, built.sha256)


def _file(given: str, sweep_path: str, sha: str | None) -> Package:
    if re.match(r"^[A-Za-z][A-Za-z0-9_.-]*\s*(==|>=|<=|~=|!=|<|>)", given):
        raise _refuse(
            sweep_path,
            "package",
            f"={given!r} is a requirement, not a file; name the version with "
            "package_index_version (and its hash with package_sha256)",
        )
    if not _FILE_NAME.match(os.path.basename(given)):
        raise _refuse(
            sweep_path,
            "package",
            f"={given!r}: accepted: a wheel or sdist file name (letters, digits, '_', '.', '+', "
            "'-', ending .whl, .tar.gz or .zip)",
        )
    key = f"{sweep_path}: cloud.package"
    # A regular file of bounded size, hashed on the descriptor checked (a FIFO would hang).
    with safe_files.open_regular(given, key, MAX_PACKAGE_BYTES, "a wheel or sdist") as f:
        digest = hashlib.sha256()
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    path = os.path.abspath(given)  # as for the built wheel: no option, no remote path
    _check_sha(digest.hexdigest(), sha, sweep_path, path)
    return Package("cloud.package", path, None, digest.hexdigest())


def _check_sha(actual: str, pinned: str | None, sweep_path: str, path: str) -> None:
    if pinned and pinned != actual:
        raise _refuse(
            sweep_path,
            "package_sha256",
            f"={pinned} but {path} has sha256 {actual}; nothing was launched",
        )


def install_script(pkg: Package, extra: str) -> str:
    """Shell run on each VM: a virtualenv with PKG and the dependencies of its EXTRA.

    A pinned package goes in first alone, by hash (`pip --require-hashes
    --no-deps`: pip refuses a file whose sha256 differs), then its
    dependencies by name.
    """
    pip = f"{VENV}/bin/pip"
    # The VM's python3 with -I: a `venv/` or `ensurepip.py` in its home is not imported.
    has_ensurepip = command.shell(command.installed_python("python3", "-c", "import ensurepip"))
    venv = command.shell(command.installed_python("python3", "-m", "venv", VENV))
    head = (
        f"set -e; cd ~; if ! {has_ensurepip} 2>/dev/null; then "
        "sudo apt-get -qq update && sudo apt-get -qq install -y python3-venv >/dev/null; fi; "
        f"{venv}; {pip} install -q --upgrade pip; "
    )
    if pkg.local:
        spec, name = f"./{pkg.remote}", f"./{pkg.remote}[{extra}]"
    else:
        spec, name = f"tpubench=={pkg.version}", f"tpubench[{extra}]=={pkg.version}"
    if not pkg.sha256:
        return head + command.shell([pip, "install", "-q", name])
    line = f"{spec} --hash=sha256:{pkg.sha256}"
    return head + "; ".join(
        [
            command.shell(["printf", "%s\\n", line]) + f" > {REQUIREMENTS}",
            command.shell(
                [pip, "install", "-q", "--no-deps", "--require-hashes", "-r", REQUIREMENTS]
            ),
            command.shell([pip, "install", "-q", name]),
        ]
    )
