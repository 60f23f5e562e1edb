"""The `--db` URL's password never reaches Prefect: a flow run's parameters are stored by the
API and shown in the UI, so the run gets the database by reference (issue 14, item 6)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

PASSWORD = "pw-sentinel-5d1c"  # the machine's PostgreSQL trusts local users: any password connects
SUITE = "name: s\ntest_cases: [{name: c1, input: q, ground_truth: hi}]\nevaluations:\n  metrics: [{metric: bleu}]\n"


@pytest.mark.parametrize("where", ["user part", "query"])
def test_the_flow_runs_parameters_carry_no_database_password(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    from prefect.client.orchestration import get_client
    from sqlalchemy.engine import make_url

    from proctor.flows.evaluate import run_evaluation
    from proctor.models.request import EvaluationRequest
    from proctor.storage.db import DATABASE_URL_ENV

    monkeypatch.setenv(DATABASE_URL_ENV, "unset")  # so that what the run sets is undone afterwards
    monkeypatch.delenv(DATABASE_URL_ENV)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.py").write_text("def agent(request):\n    return 'hi'\n")
    (tmp_path / "agent.yaml").write_text(SUITE)
    if where == "user part":
        url = make_url(postgres_url).set(password=PASSWORD).render_as_string(hide_password=False)
    else:  # the PostgreSQL driver reads ?password= too (before: stored in the flow run's parameters)
        url = make_url(postgres_url).update_query_dict({"password": PASSWORD}).render_as_string(False)
    request = EvaluationRequest(
        suite=str(tmp_path / "agent.yaml"),
        agent=f"{tmp_path / 'agent.py'}:agent",
        database_url=url,
        report_dir=str(tmp_path / "out"),
    )
    summary = asyncio.run(run_evaluation(request))
    assert summary.total == 1  # the run really used the database

    async def parameters() -> str:
        async with get_client() as client:  # every flow run this API holds
            runs = await client.read_flow_runs()
        assert runs
        return "\n".join(run.model_dump_json() for run in runs)

    stored = asyncio.run(parameters())
    assert "database_url" in stored and PASSWORD not in stored


LITERAL = "postgresql://proctor:pw-sentinel-5d1c@127.0.0.1:5432/results"


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        (LITERAL, True),
        ("postgresql+psycopg://proctor:p%40ss@db.internal/results", True),
        ("postgresql://proctor:pa/ss#w@rd@db.internal/results", True),  # not percent-encoded
        # Before: passed, though the driver reads a password from the query, or the URL from its blank.
        ("postgresql://proctor@db.internal/results?password=pw-sentinel-5d1c", True),
        ("postgresql:///results?host=/run/pg&user=proctor&password=pw-sentinel-5d1c", True),
        ("postgresql://proctor@db.internal/results?pass%77ord=pw-sentinel-5d1c", True),
        (" postgresql://proctor:pw-sentinel-5d1c@db.internal/results", True),
        ("postgresql://proctor@db.internal/results?sslmode=require&password=", False),
        ("postgresql://proctor@db.internal/results?sslmode=require", False),
        ("${PROCTOR_DATABASE_URL}", False),
        ("secret:results-db-url", False),
        ("postgresql://postgres@127.0.0.1:5432/test", False),  # no password: trust or .pgpass
        ("postgresql://127.0.0.1:5432/test", False),
        ("sqlite:////var/lib/proctor/results.db", False),
    ],
)
def test_the_form_and_deployment_parameters_refuse_a_database_url_holding_a_password(url, refused) -> None:
    """The Prefect UI validates its form, and a deployment's parameters, against this schema."""
    from prefect.utilities.callables import parameter_schema
    from prefect.utilities.schema_tools.validation import build_error_obj, validate

    from proctor.flows.evaluate import evaluate

    form = parameter_schema(evaluate.fn).model_dump()
    errors = build_error_obj(validate({"request": {"suite": "s.yaml", "database_url": url}}, form))
    assert (not errors["valid"]) is refused, errors


def test_a_flow_run_handed_a_literal_password_fails_before_running_anything(tmp_path: Path) -> None:
    """As a deployment's parameters would hand it (before: run, with the password in the
    flow run's Parameters tab)."""
    from proctor.flows.evaluate import evaluate
    from proctor.models.request import EvaluationRequest

    (tmp_path / "agent.yaml").write_text(SUITE)
    request = EvaluationRequest(suite=str(tmp_path / "agent.yaml"), database_url=LITERAL)
    state = asyncio.run(evaluate(request, return_state=True))
    assert state.is_failed()
    with pytest.raises(ValueError, match="database_url holds a password") as refused:
        state.result()
    assert "pw-sentinel" not in str(refused.value)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://proctor:s3cr@t:w/rd#9f2c@127.0.0.1:9/results",  # the '@' not percent-encoded
        "postgresql://proctor:s3cr@tw9f2crd@127.0.0.1:9/results",
    ],
)
def test_a_database_password_not_percent_encoded_is_never_shown_in_part(url: str) -> None:
    import os
    import subprocess
    import sys

    proctor = str(Path(sys.executable).with_name("proctor"))
    for command in (["history"], ["run", "missing-suite.yaml", "--no-prefect"]):
        done = subprocess.run(
            [proctor, *command, "--db", url],
            capture_output=True,
            text=True,
            timeout=600,
            env=dict(os.environ),
        )
        output = done.stdout + done.stderr
        # Before: "user:***@t:w/rd#9f2c@127.0.0.1": the URL parser took part of it for the host.
        assert done.returncode == 2, output
        assert "percent-encoded" in output and "proctor:***@127.0.0.1:9/results" in output, output
        for fragment in ("s3cr", "9f2c", "w/rd", "tw9f"):
            assert fragment not in output, (fragment, output)


def test_a_database_password_given_as_a_query_parameter_is_never_shown() -> None:
    import os
    import subprocess
    import sys

    from proctor.cli import EXIT_ERROR

    proctor = str(Path(sys.executable).with_name("proctor"))
    url = "postgresql://proctor@127.0.0.1:9/results?sslmode=disable&password=qp-sentinel-77a1"
    done = subprocess.run(
        [proctor, "history", "--db", url], capture_output=True, text=True, timeout=600, env=dict(os.environ)
    )
    output = done.stdout + done.stderr
    assert done.returncode == EXIT_ERROR, output  # unreachable: nothing listens on port 9
    # Before: the URL was shown as typed, password and all.
    assert "proctor@127.0.0.1:9/results?sslmode=disable&password=***" in output, output
    assert "qp-sentinel" not in output, output
