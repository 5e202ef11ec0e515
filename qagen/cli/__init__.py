"""The `qagen` command line: the only place that knows flag names (`app.main` is the group)."""
