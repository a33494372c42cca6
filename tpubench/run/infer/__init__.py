"""The infer wing: `command.run` (the infer command), `infer_session.InferSession` (the seam
the closed-loop sweep and the LoadGen scenarios share), timing, LoadGen's SUT and settings.

Stands on the shared session pieces of run/; never imports run/train/.
"""
