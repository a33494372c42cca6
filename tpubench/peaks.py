"""Moved to tpubench.hardware.peaks; kept as an alias of it for old imports.

The same module object, so attributes set through either name are seen by both.
"""

import sys

from tpubench.hardware import peaks as _moved

sys.modules[__name__] = _moved
