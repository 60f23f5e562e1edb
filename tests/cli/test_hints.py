"""What the CLI adds to an error the user can act on."""

from __future__ import annotations

from proctor.cli.run import _hint


def test_a_temporary_server_timeout_names_both_ways_out() -> None:
    error = RuntimeError("Timed out while attempting to connect to ephemeral Prefect API server.")
    hint = _hint(error)
    assert "PREFECT_API_URL" in hint and "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS" in hint
    assert _hint(RuntimeError("results database sqlite:///x cannot be opened")) == ""
