"""Proctor's plain core: loading suites, agents, metrics, storage and reports, free of Prefect."""

__version__ = "0.1.0"
