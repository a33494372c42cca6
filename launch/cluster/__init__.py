"""A real tf.distribute cluster on this machine: `local` runs it, `supervise` watches it.

The cluster's shape (tasks, roles, addresses, TF_CONFIG, the flags every
task shares) is `topology.py`, which the cloud executors and the Kubernetes
engines read too; this package holds what only the local run needs.
"""
