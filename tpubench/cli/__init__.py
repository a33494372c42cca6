"""tpubench.cli."""
