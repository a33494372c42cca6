"""Tests for --machine parsing, TPU slice resolution and accelerator counts."""

import pytest

from tpubench.core import errors
from tpubench.cost import catalog, machine
from tpubench.cost.machine import Part


@pytest.fixture(scope="module")
def cat():
    return catalog.load()


@pytest.mark.parametrize(
    ("spec", "parts"),
    [
        ("gcp:n1-standard-8+4xgcp:v100", (Part(1, "gcp:n1-standard-8"), Part(4, "gcp:v100"))),
        ("2xgcp:n1-standard-8+8xgcp:v100", (Part(2, "gcp:n1-standard-8"), Part(8, "gcp:v100"))),
        ("gcp:tpu-v5e-8", (Part(1, "gcp:tpu-v5e-8"),)),
        ("aws:p3.2xlarge", (Part(1, "aws:p3.2xlarge"),)),
        ("gcp:k80@2017", (Part(1, "gcp:k80", "2017"),)),
        ("gcp:k80@2017-06-01", (Part(1, "gcp:k80", "2017-06-01"),)),
        (" GCP:V100 + 2 x gcp:t4 ", (Part(1, "gcp:v100"), Part(2, "gcp:t4"))),
        ("12xgcp:n1-vcpu", (Part(12, "gcp:n1-vcpu"),)),
    ],
)
def test_parse(spec, parts):
    assert machine.parse(spec).parts == parts


def test_canonical_spelling():
    m = machine.parse("1xgcp:n1-standard-1@2017 + 4xgcp:k80@2017")
    assert m.spec == "gcp:n1-standard-1@2017+4xgcp:k80@2017"
    assert machine.parse(m.spec) == m


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("gcp:v100+", "''"),
        ("+gcp:v100", "''"),
        ("gcp:v100++gcp:t4", "''"),
        ("0xgcp:v100", "'0xgcp:v100'"),
        ("-1xgcp:v100", "'-1xgcp:v100'"),
        ("2.5xgcp:v100", "'2.5xgcp:v100'"),
        ("v100", "'v100'"),
        ("4xv100", "'4xv100'"),
        ("gcp:", "'gcp:'"),
        ("4x", "'4x'"),
        ("gcp:v 100", "'gcp:v 100'"),
        ("gcp:k80@17", "'gcp:k80@17'"),
        ("gcp:k80@2017-02-30", "'gcp:k80@2017-02-30'"),
    ],
)
def test_bad_syntax_names_the_part_and_the_form(spec, named):
    with pytest.raises(errors.UsageError) as e:
        machine.parse(spec)
    message = str(e.value)
    assert named in message
    assert "[Nx]provider:name" in message
    assert "\n" not in message


def test_missing_provider_prefix_says_so():
    with pytest.raises(errors.UsageError, match="no provider prefix"):
        machine.parse("gcp:n1-standard-8+4xv100")


@pytest.mark.parametrize(
    ("key", "row_key", "units", "chips"),
    [
        ("gcp:tpu-v5e-8", "gcp:tpu-v5e", 8, 8),  # v5e suffix counts chips
        ("gcp:tpu-v6e-4", "gcp:tpu-v6e", 4, 4),
        ("gcp:tpu-v4-8", "gcp:tpu-v4", 4, 4),  # v4 suffix counts TensorCores
        ("gcp:tpu-v5p-16", "gcp:tpu-v5p", 8, 8),
        ("gcp:tpu-v2-8", "gcp:tpu-v2-8", 1, 4),  # its own slice row
        ("gcp:tpu-v3-8", "gcp:tpu-v3-8", 1, 4),
        ("gcp:tpu-v2-32", "gcp:tpu-v2-8", 4, 16),  # 4 x the v2-8 slice
        ("gcp:tpu-v3-128", "gcp:tpu-v3-8", 16, 64),
    ],
)
def test_tpu_slice_resolution(cat, key, row_key, units, chips):
    res = machine.resolve(Part(1, key), cat)
    assert (res.row.key, res.units, res.accelerators, res.accel_kind) == (
        row_key,
        units,
        chips,
        "tpu",
    )


def test_tpu_slice_with_a_date_pin(cat):
    res = machine.resolve(Part(1, "gcp:tpu-v2-32", "2018"), cat)
    assert (res.row.on_demand, res.units) == (6.50, 4)
    assert "32 TensorCores = 16 chips = 4 x gcp:tpu-v2-8" in res.note


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("gcp:tpu-v4-7", "must be even"),
        ("gcp:tpu-v2-12", "not a whole number of gcp:tpu-v2-8"),
        ("gcp:tpu-v9-8", "unknown TPU generation 'v9'"),
        ("gcp:tpu-v5e-0", "at least one chip"),
        ("aws:tpu-v5e-8", "neither aws:tpu-v5e"),
        ("gcp:v10", "gcp:v100"),
    ],
)
def test_unpriceable_keys(cat, key, expected):
    with pytest.raises(errors.PriceError, match=expected):
        machine.resolve(Part(1, key), cat)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("gcp:n1-standard-8+4xgcp:v100", ("gpu", "v100", 4)),
        ("2xgcp:n1-standard-8+8xgcp:v100", ("gpu", "v100", 8)),
        ("gcp:tpu-v5e-8", ("tpu", "tpu-v5e", 8)),
        ("gcp:tpu-v4-8", ("tpu", "tpu-v4", 4)),
        ("gcp:tpu-v2-32", ("tpu", "tpu-v2", 16)),
        ("gcp:tpu-v2-8@2018", ("tpu", "tpu-v2", 4)),
        ("aws:p3.2xlarge", ("gpu", "v100", 1)),
        ("2xaws:p4d.24xlarge", ("gpu", "a100-40gb", 16)),
        ("gcp:a2-highgpu-1g", ("gpu", "a100-40gb", 1)),
        ("gcp:n1-standard-1+gcp:k80@2017", ("gpu", "k80", 1)),
        ("gcp:n1-standard-8+gcp:v100+2xgcp:t4", ("gpu", "v100+t4", 3)),
        ("gcp:n1-highcpu-64", ("cpu", "", 0)),
        ("8xgcp:n1-vcpu+30xgcp:n1-gib", ("cpu", "", 0)),
        ("aws:c5.xlarge", ("cpu", "", 0)),
    ],
)
def test_accelerators(cat, spec, expected):
    assert machine.parse(spec).accelerators(cat) == expected


def test_accelerator_summary_text(cat):
    assert str(machine.parse("gcp:n1-standard-8+4xgcp:v100").accelerators(cat)) == "4 x v100"
    assert "CPU only" in str(machine.parse("gcp:c2-standard-8").accelerators(cat))
