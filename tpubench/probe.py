"""Moved to tpubench.hardware.probe; kept as an alias of it for old imports.

The same module object, so attributes set through either name are seen by both.
"""

import sys

from tpubench.hardware import probe as _moved

sys.modules[__name__] = _moved
