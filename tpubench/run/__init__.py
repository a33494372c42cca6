"""The run path: the session every model-running command opens, the outer loop
(controller), its actions, and the train and infer jobs built on them."""
