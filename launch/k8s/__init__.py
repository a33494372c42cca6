"""What every GKE engine and the gke executor share: the Kubernetes pieces, one concern each.

`objects` (names, labels, Kueue, the tpubench container, YAML out),
`sizing` (a pod's cores and memory from its node's machine type), `tpu`
(single-host TPU slices: node selectors, host machine types, the node pool)
and `wait` (`python -m tpubench_launch.k8s.wait`, a sweep run's task).
"""
