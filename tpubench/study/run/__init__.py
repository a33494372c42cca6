"""Running a study: its cells, the plan, running them here or on executors, the records."""
