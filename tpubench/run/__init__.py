"""The run path, in two wings over shared session pieces (tests/test_layers.py keeps them apart).

Shared (here): session, interrupts, stopping, layout, efficiency, runner, progress, checkpoints,
restoring.
train/: the train command and what only it uses (plan, job, loop, controller, actions, saver...).
infer/: the infer command, its InferSession, the closed-loop timing and the LoadGen scenarios.
"""
