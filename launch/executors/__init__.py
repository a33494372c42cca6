"""Where sweep configurations run: this machine, GCE VMs or Cloud TPU VMs."""
