"""Prefect flows and the `proctor` command line."""
