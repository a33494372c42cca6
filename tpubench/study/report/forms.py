"""The report forms a study may name, written once: the study file's check, the report's
tables and its charts all read FORMS.

A form is a name here and, in each of tables.py and charts.py, the function
of that name that draws a part in it; a new form is one entry here and one
function in each (tests/study/test_study_forms.py holds all three to it).
"""

from __future__ import annotations

# form.kind -> what its report shows.
FORMS = {
    "relative": "time and cost against a baseline machine (the CPU-vs-GPU study's charts)",
    "devices": "$/hour, examples/s and $/epoch per device, and per GPU or TPU chip",
    "knee": "rate against host vCPUs",
    "scaling": "images/s per device count against ideal",
    "strategies": "rate per gradient method and device count",
}


def drawer(module, kind: str):
    """The function of MODULE (tables or charts) that draws a part in form KIND."""
    return getattr(module, kind)
