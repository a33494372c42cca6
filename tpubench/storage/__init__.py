"""tpubench.storage."""
