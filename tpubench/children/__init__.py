"""Child processes tpubench and tpubench-launch start: the one runner.

`process` starts a labelled child (its own process group, pinned cores, a
log), passes SIGINT/SIGTERM on, stops it with a grace period and reads the
last error line of its log (`fork_side`: what the child does between fork
and exec); `command` turns flags into argv and names the
interpreter a child runs in; `labels` holds the rules for stable labels and
where a labelled run's model_dir goes.  `tpubench study`, `tpubench tune`
and `tpubench-launch` all run their children through it; pure Python, no
TensorFlow.
"""
