"""The run path, in two wings over shared session pieces (tests/test_layers.py keeps them apart).

Shared: session, interrupts, stopping, layout, efficiency, runner, progress, checkpoints.
Train: train (the command), planning, job, loop, controller, actions, profile, trainers,
saver, io_time, deadlines, lock, unsent, diagnosis.
Infer: infer (the command), infer_session, infer_timing, infer_scenario, scenarios,
loadgen_sut, loadgen_log, loadgen_conf, serving_curve, signal_watch, weights.
"""
