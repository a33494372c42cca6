"""Moved to tpubench.run.runner; kept as an alias of it for old imports.

The same module object, so attributes set through either name are seen by both.
"""

import sys

from tpubench.run import runner as _moved

sys.modules[__name__] = _moved
