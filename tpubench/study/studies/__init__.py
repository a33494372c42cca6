"""The shipped study files: YAML data installed with the package, no code."""
