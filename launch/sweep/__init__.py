"""`tpubench-launch sweep FILE`: a sweep file read, expanded and driven through an executor.

`file` reads the file (YAML, top-level keys, trust), then `grid` (a grid's
configurations and their stable ids; what one configuration is) or `runs`
(runs written out, each with its label) expands it; `run` checks every
configuration's plan, shows the cost preview and drives the executor.
"""
