"""The `--db` URL's password never reaches Prefect: a flow run's parameters are stored by the
API and shown in the UI, so the run gets the database by reference (issue 14, item 6)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

PASSWORD = "pw-sentinel-5d1c"  # the machine's PostgreSQL trusts local users: any password connects
SUITE = "name: s\ntest_cases: [{name: c1, input: q, ground_truth: hi}]\nevaluations:\n  metrics: [{metric: bleu}]\n"


def test_the_flow_runs_parameters_carry_no_database_password(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
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
    url = make_url(postgres_url).set(password=PASSWORD).render_as_string(hide_password=False)
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
