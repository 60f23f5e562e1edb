"""What reaches the terminal: an agent's error or a name never carries escape sequences
(clear screen, colours, cursor moves) to the user's terminal; they are shown as symbols."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from proctor.cli.console import escape, terminal_text
from tests.factories import echo_suite

HOSTILE = "\x1b[2J\x1b[31mred\x07\x9b0m\x00"

AGENT = f"""
def agent(request):
    raise RuntimeError({HOSTILE!r} + " in " + request.case_id)
"""


def test_control_characters_are_shown_as_symbols_and_newlines_kept() -> None:
    assert terminal_text(HOSTILE) == "␛[2J␛[31mred␇\ufffd0m␀"
    assert terminal_text("two\nlines\tand a tab") == "two\nlines␉and a tab"
    assert escape("[bold]\x1b[2J") == "\\[bold]␛[2J"


def test_an_agent_error_with_escape_sequences_reaches_the_terminal_as_symbols(tmp_path: Path) -> None:
    suite = echo_suite(tmp_path, name="escapes", cases=2, agent=AGENT, fails=lambda i: False)
    proctor = str(Path(sys.executable).with_name("proctor"))
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    done = subprocess.run(
        [proctor, "run", str(suite), "--db", f"sqlite:///{tmp_path / 'r.db'}", "--no-progress"],
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "␛[2J␛[31mred" in " ".join(output.split()) or "␛[2J" in output, output
    for raw in ("\x1b", "\x07", "\x9b", "\x00"):
        assert raw not in output, repr(output)


def test_a_stop_signal_is_found_behind_an_error_prefect_raised_while_handling_it() -> None:
    """SIGTERM inside a task run can surface as Prefect's own error ("Task run is not set")
    raised while it handled its TerminationSignal: still a stop (exit 143), not a failed run;
    a BaseException of another kind (a worker that died) is not a stop."""
    from prefect.exceptions import TerminationSignal

    from proctor.cli.console import Terminated, stopped_by_signal

    try:
        try:
            raise TerminationSignal(15)
        except BaseException:
            raise RuntimeError("Task run is not set") from None
    except RuntimeError as hidden:
        assert stopped_by_signal(hidden) is None  # `from None`: no chain, no guess
    try:
        try:
            raise TerminationSignal(15)
        except BaseException:
            raise RuntimeError("Task run is not set")  # noqa: B904 - as Prefect raises it
    except RuntimeError as raised:
        assert stopped_by_signal(raised) == 143

    class WorkerDied(BaseException):
        pass

    assert (stopped_by_signal(KeyboardInterrupt()), stopped_by_signal(Terminated())) == (130, 143)
    assert stopped_by_signal(WorkerDied()) is None and stopped_by_signal(ValueError()) is None
