"""Studies: published comparisons as study files, run cell by cell, reported in their form."""
