"""Persistence: the results database, the group-commit writer, and run queries."""

from proctor.storage.db import default_database_url, get_engine, redact_url
from proctor.storage.writer import DatabaseWriteError, ResultWriter, get_writer

__all__ = [
    "DatabaseWriteError",
    "ResultWriter",
    "default_database_url",
    "get_engine",
    "get_writer",
    "redact_url",
]
