"""Moved to tpubench.hardware.strategy; kept as an alias of it for old imports.

The same module object, so attributes set through either name are seen by both.
"""

import sys

from tpubench.hardware import strategy as _moved

sys.modules[__name__] = _moved
