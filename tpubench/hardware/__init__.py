"""What the run stands on: strategy and placement (strategy), the probed
machine (probe), host CPU sampling (hostcpu), datasheet and measured peak
FLOP/s (peaks) and model FLOPs utilisation (mfu).  Imports only the layers
below: config, errors, cache, the model API and the pure-Python cost code."""
