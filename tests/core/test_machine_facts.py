"""Machine facts once, as data: core/machines.csv, tpu_generations.csv and accelerators.csv,
read through core/machine_facts.py by pricing, the study's planner and tpubench-launch."""

import ast
import csv
import pathlib
import subprocess
import sys

import pytest

from tpubench.core import machine_facts, tpu_slices
from tpubench.cost import catalog, machine
from tpubench.study.run import remote
from tpubench_launch import tpus
from tpubench_launch.k8s import sizing
from tpubench_launch.k8s import tpu as k8s_tpu

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORE = ROOT / "tpubench" / "core"
SHIPPED = catalog.load(str(ROOT / "tpubench" / "cost" / "prices.csv"))
INSTANCES = sorted({r.key for r in SHIPPED.rows if r.kind == "instance"})


def test_the_reader_loads_no_tensorflow_and_nothing_above_core():
    code = (
        "import sys\n"
        "from tpubench.core import machine_facts as m\n"
        "m.shape('gcp:a3-highgpu-8g'); m.tpu_generations(); m.gce_accelerator_types()\n"
        "print(sorted(x for x in sys.modules if x.startswith(('tensorflow', 'keras', "
        "'tpubench.'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = ast.literal_eval(out.stdout.strip())
    assert "tpubench.core.machine_facts" in loaded
    assert [m for m in loaded if not m.startswith("tpubench.core")] == []


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("gcp:n1-standard-8", (8, 30, "", 0)),
        ("gcp:n1-highcpu-16", (16, 14.4, "", 0)),
        ("gcp:a3-highgpu-4g", (104, 936, "h100", 4)),  # a family by rule: 26 vCPUs a GPU
        ("gcp:a2-megagpu-16g", (96, 1360, "a100-40gb", 16)),
        ("gcp:g2-standard-24", (24, 96, "l4", 2)),  # listed: G2's GPU counts are irregular
        ("gcp:ct5lp-hightpu-4t", (112, 192, "tpu-v5e", 4)),
        ("aws:g4dn.12xlarge", (48, 192, "t4", 4)),
        ("GCP:C3-Standard-22", (22, 88, "", 0)),
    ],
)
def test_a_machine_type_is_its_row_or_its_familys_rule(key, expected):
    s = machine_facts.shape(key)
    assert (s.vcpus, s.gib, s.accelerator, s.accelerators) == expected
    assert s.source.startswith("https://")


@pytest.mark.parametrize("key", ["gcp:n1-standard-0", "gcp:n1-standard-", "gcp:zz-standard-8"])
def test_an_unknown_machine_has_no_facts(key):
    assert machine_facts.shape(key) is None


def test_every_row_names_its_public_source():
    for name in ("machines.csv", "tpu_generations.csv", "accelerators.csv"):
        rows = list(csv.DictReader((CORE / name).read_text().splitlines()))
        assert rows and all(r["source"].startswith("https://") for r in rows), name


@pytest.mark.parametrize("key", INSTANCES)
def test_every_priced_machine_has_its_shape_in_the_facts_and_every_reader_agrees(key):
    facts = machine_facts.shape(key)
    assert facts, f"{key} is priced but its shape is not in core/machines.csv"
    assert {r.count for r in SHIPPED.rows if r.key == key} == {facts.accelerators}
    acc = machine.parse(key).accelerators(SHIPPED)
    assert (acc.name, acc.count) == (facts.accelerator, facts.accelerators)
    if key.startswith("gcp:"):
        assert sizing.machine_shape(key.removeprefix("gcp:")) == (facts.vcpus, facts.gib)
    assert remote.shape(key, "here")[3] == (None if facts.kind == "tpu" else facts.vcpus)


def test_a_price_rows_notes_are_never_read_for_its_accelerators(tmp_path):
    header = SHIPPED_HEADER
    rows = [
        "gcp:a3-highgpu-8g,gcp,instance,us,instance-hour,8,40,,2026-01-01,s,confirmed,"
        "accel=v100; a note that disagrees,",
        "gcp:x9-mystery-8g,gcp,instance,us,instance-hour,8,40,,2026-01-01,s,confirmed,"
        "accel=h100; a type the facts do not know,",
    ]
    path = tmp_path / "prices.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    cat = catalog.load(str(path))
    assert machine.parse("gcp:a3-highgpu-8g").accelerators(cat) == ("gpu", "h100", 8)
    assert machine.parse("gcp:x9-mystery-8g").accelerators(cat).name != "h100"


SHIPPED_HEADER = (ROOT / "tpubench" / "cost" / "prices.csv").read_text().splitlines()[0]


@pytest.mark.parametrize(
    ("name", "chips", "hosts", "accel_type", "gke_host"),
    [
        ("gcp:tpu-v5e-8", 8, 1, "v5litepod-8", "ct5lp-hightpu-8t"),
        ("gcp:tpu-v6e-4", 4, 1, "v6e-4", "ct6e-standard-4t"),
        ("gcp:tpu-v4-8", 4, 1, "v4-8", "ct4p-hightpu-4t"),
        ("gcp:tpu-v5p-16", 8, 2, "v5p-16", "ct5p-hightpu-4t"),
        ("gcp:tpu-v5e-16", 16, 4, "v5litepod-16", "ct5lp-hightpu-4t"),
    ],
)
def test_a_tpu_slice_is_counted_alike_by_pricing_and_the_launcher(
    name, chips, hosts, accel_type, gke_host
):
    s = tpus.parse(name)
    assert (s.chips, s.hosts, s.accelerator_type) == (chips, hosts, accel_type)
    assert tpu_slices.hosts(s.generation, s.chips) == hosts
    assert machine.parse(name).accelerators(SHIPPED).count == chips
    assert k8s_tpu.tpu_host_type(s) == gke_host
    assert machine_facts.shape(f"gcp:{gke_host}").accelerator == f"tpu-{s.generation}"


# What is not a machine fact though it names one, each with its reason.  A literal that
# names a machine family, a TPU accelerator type, runtime or GKE label, or a GCE GPU type
# anywhere else in tpubench/ or launch/ is a second copy of a fact.
ALLOWED = {
    ("launch/k8s/sizing.py", "n1-standard-8"): "the default node a pod is sized for: a choice",
    ("tpubench/cost/detect.py", "n1-standard"): "the host a GPU sold alone is priced with",
    **{
        ("tpubench/cost/run.py", f): "the families a CPU run is compared with: a pricing choice"
        for f in (
            "n4-standard",
            "c3-standard",
            "c4d-standard",
            "c3d-standard",
            "n2d-standard",
            "n1-standard",
            "n1-highcpu",
            "c2-standard",
        )
    },  # fmt: skip
    ("tpubench/cost/skypilot.py", "v5litepod"): "SkyPilot's TPU name for v5e: the input",
    **{
        ("tpubench/cost/skypilot.py", f"{s}"): "SkyPilot's GPU spelling per GCP series: the input"
        for s in (
            "a2-highgpu",
            "a2-megagpu",
            "a2-ultragpu",
            "a3-edgegpu",
            "a3-highgpu",
            "a3-megagpu",
            "a3-ultragpu",
            "a4-highgpu",
            "g2-standard",
        )
    },  # fmt: skip
    **{
        ("launch/executors/skypilot.py", t): "GCE GPU type -> SkyPilot's spelling: its output"
        for t in (
            "nvidia-tesla-k80",
            "nvidia-tesla-p4",
            "nvidia-tesla-p100",
            "nvidia-tesla-v100",
            "nvidia-tesla-t4",
            "nvidia-l4",
            "nvidia-tesla-a100",
            "nvidia-a100-80gb",
            "nvidia-h100-80gb",
        )
    },  # fmt: skip
}


def _fact_words() -> set[str]:
    words = set()
    for row in csv.DictReader((CORE / "machines.csv").read_text().splitlines()):
        name = row["machine"].split(":", 1)[1]
        words.add(name.split("{N}")[0].rstrip("-.") if "{N}" in name else name)
        words.add(name.rsplit("-", 1)[0] if "-" in name else name)
    for row in csv.DictReader((CORE / "tpu_generations.csv").read_text().splitlines()):
        if row["accelerator_type"] != row["generation"]:
            words.add(row["accelerator_type"])
        words |= {row["runtime"], row["gke_accelerator"], row["gke_host"].split("-{N}")[0]}
    for row in csv.DictReader((CORE / "accelerators.csv").read_text().splitlines()):
        words |= {row["gce_type"], row["gke_label"]}
    return {w for w in words if w}


def _literals(path: pathlib.Path):
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            yield node.lineno, node.value.removeprefix("gcp:").removeprefix("aws:")


def test_no_machine_fact_is_written_outside_the_data():
    words = _fact_words()
    reader = CORE / "machine_facts.py"
    found = []
    for top in ("tpubench", "launch"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            if path == reader:
                continue
            for line, text in _literals(path):
                word = text.strip(":-.")
                if word in words and (rel, word) not in ALLOWED:
                    found.append(f"{rel}:{line}: {text!r}")
    assert found == [], "machine facts written outside core/*.csv:\n" + "\n".join(found)


def test_the_scan_finds_a_second_copy(tmp_path):
    """The scan's own control: a table like the old ones is found."""
    copy = tmp_path / "copy.py"
    copy.write_text('"""Doc: a3-highgpu is fine here."""\nPER_GPU = {"a3-highgpu": (26, 234)}\n')
    lines = [(n, t) for n, t in _literals(copy) if t.strip(":-.") in _fact_words()]
    assert lines == [(2, "a3-highgpu")]
