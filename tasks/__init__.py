"""Prefect tasks: thin wrappers around the plain stages of `proctor`, one per unit of work."""
