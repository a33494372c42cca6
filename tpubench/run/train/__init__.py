"""The train wing: `command.train` (the train command), its Plan, Job, controller and actions.

Stands on the shared session pieces of run/; never imports run/infer/.
"""
