"""tpubench.model."""
