"""tpubench.core."""
