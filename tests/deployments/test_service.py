"""Proctor as a service, for real: a Prefect server and a process worker started here, the
deployments created from `prefect.yaml` by `prefect deploy`, runs triggered through the API
as the UI does, results found in the database and the summary received by a Slack server.

Slow (a server, a worker and two flow-run subprocesses: about a minute), so it runs once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, col, select

from proctor.models.tables import CaseResultRow, EvalRun, RunStatus
from proctor.storage import get_engine
from tests.conftest import ROOT
from tests.fakes.processes import free_port, running, wait_http
from tests.fakes.slack_server import FakeSlack

_SCRIPT = Path(sys.executable).with_name("prefect")
PREFECT = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "prefect"]
TOKEN = "xoxb-service-test-token"
FINAL_STATES = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A Prefect server, the `proctor` process pool, the deployments and one worker."""
    home = tmp_path_factory.mktemp("prefect-home")
    logs = tmp_path_factory.mktemp("logs")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {
        **os.environ,
        "PREFECT_HOME": str(home),
        "PREFECT_API_URL": api,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
    }
    env.pop("PREFECT_PROFILES_PATH", None)
    server_command = [*PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    with running(server_command, env=env, log=logs / "server.log") as server:
        wait_http(f"{api}/health", timeout=120, process=server, log=logs / "server.log")
        for command in (
            [*PREFECT, "work-pool", "create", "proctor", "--type", "process"],
            [*PREFECT, "--no-prompt", "deploy", "--all"],
        ):
            done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=180)
            assert done.returncode == 0, f"{command}: {done.stdout}\n{done.stderr}"
        with FakeSlack(token=TOKEN) as slack:
            worker_env = {**env, "SLACK_BOT_TOKEN": TOKEN}
            worker_command = [*PREFECT, "worker", "start", "--pool", "proctor", "--limit", "1"]
            with (
                running(
                    [*worker_command, "--name", "w1"], env=worker_env, log=logs / "worker.log", cwd=ROOT
                ) as one,
                running(
                    [*worker_command, "--name", "w2"], env=worker_env, log=logs / "worker2.log", cwd=ROOT
                ) as two,
            ):
                _wait_for_workers(api, {"w1", "w2"}, logs)
                yield {"api": api, "slack": slack, "workers": (one, two), "logs": logs}


def _wait_for_workers(api: str, names: set[str], logs: Path, timeout: float = 300.0) -> None:
    """Both workers polling the pool before any run is triggered: on a busy machine one may start
    a minute after the other, and would otherwise find no run left to take."""
    deadline = time.monotonic() + timeout
    seen: set[str] = set()
    while time.monotonic() < deadline:
        with _client(api) as client:
            seen = {worker.name for worker in client.read_workers_for_work_pool("proctor")}
        if names <= seen:
            return
        time.sleep(1)
    raise AssertionError(f"workers {sorted(names - seen)} never polled; see {logs}")


def _client(api: str) -> Any:
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    class _Scoped:
        def __enter__(self) -> Any:
            self._settings = temporary_settings({PREFECT_API_URL: api})
            self._settings.__enter__()
            self._client = get_client(sync_client=True)
            return self._client.__enter__()

        def __exit__(self, *exc: Any) -> None:
            self._client.__exit__(*exc)
            self._settings.__exit__(*exc)

    return _Scoped()


def _trigger_and_wait(service: dict[str, Any], deployment: str, *requests: dict[str, Any]) -> Any:
    """What the UI's 'Run' button does: flow runs created from the deployment, then polled.
    Returns the finished flow run, or all of them when given several requests."""
    with _client(service["api"]) as client:
        found = client.read_deployment_by_name(f"proctor-evaluate/{deployment}")
        flow_runs = [
            client.create_flow_run_from_deployment(found.id, parameters={"request": request})
            for request in requests
        ]
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            flow_runs = [client.read_flow_run(flow_run.id) for flow_run in flow_runs]
            if all(run.state and run.state.type.value in FINAL_STATES for run in flow_runs):
                return flow_runs[0] if len(flow_runs) == 1 else flow_runs
            time.sleep(1)
    worker_log = (service["logs"] / "worker.log").read_text()[-4000:]
    raise AssertionError(f"flow run did not finish; worker log:\n{worker_log}")


def test_deployments_from_prefect_yaml_have_schedule_and_form(service: dict[str, Any]) -> None:
    with _client(service["api"]) as client:
        nightly = client.read_deployment_by_name("proctor-evaluate/nightly")
        on_demand = client.read_deployment_by_name("proctor-evaluate/evaluate")
    schedule = nightly.schedules[0].schedule
    assert (schedule.cron, schedule.timezone) == ("0 3 * * *", "Europe/Paris")
    assert nightly.work_pool_name == on_demand.work_pool_name == "proctor"
    form = on_demand.parameter_openapi_schema
    request_schema = json.dumps(form)
    # The Pydantic request model is the UI's form: its fields are there with their descriptions.
    for field in ("suite", "agent", "variants", "repeat", "min_pass_rate", "slack", "notify", "channel"):
        assert f'"{field}"' in request_schema, field
    assert nightly.parameters["request"]["slack"]["notify"] == "regression"
    assert nightly.parameters["request"]["history_window"] == 30  # judged against its last 30 nights


def test_nightly_run_on_a_worker_stores_results_compares_and_posts_to_slack(
    service: dict[str, Any], tmp_path: Path
) -> None:
    database = tmp_path / "results.db"
    slack: FakeSlack = service["slack"]
    request = {
        "suite": "examples/weather/weather.evalset.json",
        "database_url": f"sqlite:///{database}",
        "report_dir": str(tmp_path / "reports"),
        "slack": {"channel": "#agent-evals", "notify": "always", "api_url": slack.api_url},
    }
    first = _trigger_and_wait(service, "nightly", request)
    # One case fails on purpose, so the nightly gate (every case must pass) does not hold: the
    # run is Failed (red in the UI, automations fire), named so the UI shows why at a glance.
    assert first.state.type.value == "FAILED", first.state
    assert (first.state.name, first.state.message) == ("Failed cases", "4/5 passed, 0 errored")
    second = _trigger_and_wait(service, "nightly", request | {"report_dir": str(tmp_path / "reports2")})
    assert (second.state.type.value, second.state.name) == ("FAILED", "Failed cases"), second.state

    with Session(get_engine(f"sqlite:///{database}")) as session:
        runs = {run.flow_run_id: run for run in session.exec(select(EvalRun)).all()}
        assert set(runs) == {str(first.id), str(second.id)}
        one, two = runs[str(first.id)], runs[str(second.id)]
        for run in (one, two):
            assert run.status is RunStatus.COMPLETED
            assert (run.total_cases, run.passed_cases) == (5, 4)
            cases = session.exec(select(CaseResultRow).where(CaseResultRow.run_id == run.id)).all()
            assert len(cases) == 5
        # The first run had no baseline; the second compared itself with the first: A/A, no alarm.
        assert one.comparison is None and one.baseline_run_id is None
        assert two.baseline_run_id == one.id
        assert two.comparison["regressed"] is False and two.comparison["newly_failing"] == []
        assert two.notification["status"] == "sent"
    assert (tmp_path / "reports2" / "report.html").exists()

    posts = [r for r in slack.requests if r["path"].endswith("chat.postMessage")]
    summaries = [p for p in posts if not p["body"].get("thread_ts")]
    threads = [p for p in posts if p["body"].get("thread_ts")]
    assert len(summaries) == 2 and len(threads) == 2
    text = json.dumps(summaries[-1]["body"])
    assert f"/runs/flow-run/{second.id}" in text
    assert TOKEN not in text


def _flow_run_logs(service: dict[str, Any], flow_run_id: Any) -> list[str]:
    """The flow run's log lines as the UI's Logs tab shows them (read through the API), once
    Prefect's last line for the run ("Finished in state …") has arrived."""
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.client.schemas.sorting import LogSort

    deadline = time.monotonic() + 60
    while True:
        with _client(service["api"]) as client:
            logs = client.read_logs(
                LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])), sort=LogSort.TIMESTAMP_ASC
            )
        lines = [log.message for log in logs]
        if any(line.startswith("Finished in state") for line in lines) or time.monotonic() > deadline:
            return lines
        time.sleep(1)


@pytest.mark.parametrize(
    ("suite", "database", "said"),
    [
        (f"examples/{uuid.uuid4().hex}.evalset.json", None, "file not found"),
        ("INVALID", None, "eval_cases"),
        ("examples/weather/weather.evalset.json", "postgresql://proctor@127.0.0.1:9/proctor", "127.0.0.1:9"),
    ],
    ids=["missing suite", "invalid suite", "unreachable database"],
)
def test_a_run_that_cannot_start_fails_with_one_line_in_its_logs(
    service: dict[str, Any], tmp_path: Path, suite: str, database: str | None, said: str
) -> None:
    """What the command line prints for a run that cannot start is what the flow run's logs say:
    one line naming the problem, no traceback (docs/service.md: Operating Proctor as a service)."""
    if suite == "INVALID":
        suite = str(tmp_path / "broken.evalset.json")
        Path(suite).write_text(json.dumps({"eval_set_id": "broken"}))
    request = {"suite": suite, "database_url": database or f"sqlite:///{tmp_path}/r.db"}
    flow_run = _trigger_and_wait(service, "evaluate", request)
    assert flow_run.state.type.value == "FAILED"
    assert said in (flow_run.state.message or "")
    lines = _flow_run_logs(service, flow_run.id)
    assert not [line for line in lines if "Traceback" in line or "\n  File " in line], lines
    errors = [line for line in lines if said in line and not line.startswith("Finished in state")]
    assert len(errors) == 1 and "\n" not in errors[0], lines
    assert errors[0].startswith(f"the run of {suite} could not complete: "), errors


def test_two_workers_share_the_pool_and_one_postgresql_database(
    service: dict[str, Any], tmp_path: Path, postgres_url: str
) -> None:
    """Four on-demand runs at once: both workers take some, every result lands once in one database."""
    requests = [
        {
            "suite": "examples/weather/weather.evalset.json",
            "database_url": postgres_url,
            "report_dir": str(tmp_path / f"r{index}"),
            "metadata": {},
        }
        for index in range(4)
    ]
    flow_runs = _trigger_and_wait(service, "evaluate", *requests)
    # Every run completes and stores its results; the bundled agent's failing case makes each red.
    assert [(run.state.type.value, run.state.name) for run in flow_runs] == [("FAILED", "Failed cases")] * 4
    ids = {str(run.id) for run in flow_runs}
    # A worker's log names each flow run it ran, by id or by its name ('horned-dragon'); a worker
    # may write the line a moment after the run ended, so the logs are read until all are named.
    deadline = time.monotonic() + 60
    while True:
        logs = [(service["logs"] / name).read_text() for name in ("worker.log", "worker2.log")]
        taken = [
            {str(run.id) for run in flow_runs if str(run.id) in log or f"'{run.name}'" in log} for log in logs
        ]
        if (all(taken) and taken[0] | taken[1] == ids) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert all(taken) and taken[0] | taken[1] == ids, [log[-3000:] for log in logs]  # each worker ran some
    with Session(get_engine(postgres_url)) as session:
        runs = session.exec(select(EvalRun).where(col(EvalRun.flow_run_id).in_(ids))).all()
        assert len(runs) == 4 and all(run.status is RunStatus.COMPLETED for run in runs)
        rows = session.exec(
            select(CaseResultRow.run_id, CaseResultRow.case_id).where(
                col(CaseResultRow.run_id).in_([run.id for run in runs])
            )
        ).all()
    assert len(rows) == len(set(rows)) == 20  # 4 runs x 5 cases, none twice
