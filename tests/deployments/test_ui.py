"""The Prefect UI's run form, in a real browser, on a server set up as docs/service.md says.

A Prefect server on a free port (on PostgreSQL when PROCTOR_TEST_POSTGRES_URL names one: its
JSONB is what scrambled the form), `PREFECT_UI_API_URL=/api` as for a team host, the work
pool, `prefect deploy --all` on this `prefect.yaml`, a worker, and a local Slack. Headless
Chromium (Debian's `chromium`) opens the on-demand deployment's form, fills it as a person
would, submits it, and the run is followed to its rows, its Slack messages and a screenshot.
Every field shows its title and description; a form with a typed-in token, a password in the
database URL, a malformed Dask address and Slack without a channel is refused at submit, each
field saying in words what it expected, no message showing a typed secret back.

Slow (a server, a worker, a browser, two flow runs: a minute or two), so the module shares
one service.
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

import httpx
import pytest
from sqlmodel import Session, select

from proctor.models.notify import CHANNEL_NEEDED, NAMED_SECRET
from proctor.models.request import DASK_ADDRESS, URL_WITHOUT_PASSWORD, EvaluationRequest
from proctor.models.tables import CaseResultRow, EvalRun
from proctor.storage import get_engine
from tests.conftest import POSTGRES_ENV, ROOT
from tests.fakes.browser import Browser, browser, chromium_path
from tests.fakes.processes import free_port, running, wait_http
from tests.fakes.slack_server import FakeSlack

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        chromium_path() is None,
        reason="browser test SKIPPED: chromium is not installed (apt-get install chromium)",
    ),
]

_SCRIPT = Path(sys.executable).with_name("prefect")
PREFECT = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "prefect"]
TOKEN = "xoxb-ui-test-token"
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}

# Page helpers: a form field is the `.group` around the <label> bearing its title.
FIELD = """((label) => { const l = [...document.querySelectorAll('label')].find(
    e => e.textContent.trim().replace(/ \\(Optional\\)$/, '') === label); return l && l.closest('.group'); })"""
SUBMIT = "[...document.querySelectorAll('button')].find(b => b.textContent.trim() === 'Submit')"


def field(label: str) -> str:
    return f"{FIELD}({json.dumps(label)})"


def tab(label: str, name: str) -> str:
    """One of the tabs an optional field shows, named for what it means ("URL" / "The worker's")."""
    return f"[...({field(label)}).querySelectorAll('[role=tab]')].find(t => t.textContent.trim() === {json.dumps(name)})"


def text_box(label: str) -> str:
    return f"({field(label)}).querySelector('textarea, input')"


def fill(page: Browser, label: str, text: str, choice: str | None = None) -> None:
    if choice:  # an optional field starts at its empty choice: choose its value's tab first
        page.click_until(tab(label, choice), f"!!{text_box(label)}", what=f"{label}: its {choice} box")
    page.type_into(text_box(label), text)


def shown(page: Browser, label: str) -> str:
    """The text a person reads in a field's part of the form (its title, description, errors)."""
    return page.evaluate(f"({field(label)}).innerText")


@pytest.fixture(scope="module")
def prefect_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str | None]:
    """A fresh PostgreSQL database for Prefect itself (docs/service.md: create it first), or None."""
    server = os.environ.get(POSTGRES_ENV)
    if not server:
        yield None
        return
    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(server)
    name = f"proctor_ui_prefect_{uuid.uuid4().hex[:8]}"
    admin = f"host={url.host} port={url.port or 5432} user={url.username} dbname={url.database}"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield url.set(drivername="postgresql+asyncpg", database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory, prefect_database: str | None
) -> Iterator[dict[str, Any]]:
    home, logs = tmp_path_factory.mktemp("prefect-home"), tmp_path_factory.mktemp("logs")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server_env = {key: value for key, value in os.environ.items() if not key.startswith("PREFECT_")} | {
        "PREFECT_HOME": str(home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
        # docs/service.md, "Operating Proctor as a service": the UI calls the API on the host it was
        # loaded from, so any port and any host name work.
        "PREFECT_UI_API_URL": "/api",
    }
    if prefect_database:
        server_env["PREFECT_API_DATABASE_CONNECTION_URL"] = prefect_database
    client_env = {**server_env, "PREFECT_API_URL": f"{base}/api", "PREFECT_UI_URL": base}
    command = [*PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    with running(command, env=server_env, log=logs / "server.log") as server:
        wait_http(f"{base}/api/health", timeout=240, process=server, log=logs / "server.log")
        for step in (
            ["work-pool", "create", "proctor", "--type", "process"],
            ["--no-prompt", "deploy", "--all"],
        ):
            done = subprocess.run(
                [*PREFECT, *step], env=client_env, cwd=ROOT, capture_output=True, text=True, timeout=300
            )
            assert done.returncode == 0, f"{step}: {done.stdout}\n{done.stderr}"
        with FakeSlack(token=TOKEN) as slack:
            worker = [*PREFECT, "worker", "start", "--pool", "proctor", "--limit", "1", "--name", "ui"]
            worker_env = {**client_env, "SLACK_BOT_TOKEN": TOKEN}
            with (
                running(worker, env=worker_env, log=logs / "worker.log", cwd=ROOT),
                httpx.Client(base_url=f"{base}/api", timeout=30) as api,
            ):
                yield {
                    "base": base,
                    "api": api,
                    "deployment": api.get("/deployments/name/proctor-evaluate/evaluate").json(),
                    "slack": slack,
                    "logs": logs,
                    "env": client_env,
                    "postgres": prefect_database is not None,
                }


def _open_form(page: Browser, service: dict[str, Any]) -> None:
    page.goto(f"{service['base']}/v2/deployments/deployment/{service['deployment']['id']}/run")
    page.wait_for(f"!!{field('Resume run')}", timeout=120, what="the run form")


def _wait_final(service: dict[str, Any], flow_run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 420
    while time.monotonic() < deadline:
        run = service["api"].get(f"/flow_runs/{flow_run_id}").json()
        if run["state"] and run["state"]["type"] in FINAL:
            return run
        time.sleep(1)
    worker_log = (service["logs"] / "worker.log").read_text()[-4000:]
    raise AssertionError(f"flow run {flow_run_id} did not finish; worker log:\n{worker_log}")


def _flow_run_ids(service: dict[str, Any]) -> set[str]:
    body = {"deployments": {"id": {"any_": [service["deployment"]["id"]]}}, "limit": 200}
    return {run["id"] for run in service["api"].post("/flow_runs/filter", json=body).json()}


def test_the_run_form_starts_a_run_that_ends_red_and_posts_to_slack(service, tmp_path) -> None:
    database = tmp_path / "results.db"
    slack: FakeSlack = service["slack"]
    with browser(tmp_path / "chromium") as page:
        _open_form(page, service)
        # The form's fields in the model's order, whatever Prefect's database did to the schema.
        labels = page.evaluate(
            f"[...({field('request')} || document).querySelectorAll('label')].map(l => l.textContent.trim())"
        )
        titles = [schema["title"] for schema in EvaluationRequest.model_json_schema()["properties"].values()]
        shown = [
            label.removesuffix(" (Optional)")
            for label in labels
            if label.removesuffix(" (Optional)") in titles
        ]
        assert shown == titles, f"form order on {'PostgreSQL' if service['postgres'] else 'SQLite'}: {shown}"

        page.type_into(text_box("Suite"), "examples/weather/weather.evalset.json")
        fill(page, "Results database", f"sqlite:///{database}", choice="URL")
        fill(page, "Report folder", str(tmp_path / "report"), choice="Folder")
        page.click_until(tab("Slack", "Slack settings"), f"!!{field('Channel')}", what="the Slack settings")
        fill(page, "Channel", "#agent-evals", choice="Channel")
        fill(page, "Slack API URL", slack.api_url, choice="URL")
        earlier = _flow_run_ids(service)
        page.click(SUBMIT)  # the UI creates the run and goes back to the deployment's runs
        page.wait_for(
            "location.href.includes('tab=Runs')", timeout=60, what="the deployment's runs after submit"
        )
        (flow_run_id,) = _flow_run_ids(service) - earlier
        run = _wait_final(service, flow_run_id)
        # The bundled agent fails one of five cases on purpose: the gate does not hold, and the
        # flow run is red (Failed), named after why.
        assert (run["state"]["type"], run["state"]["name"]) == ("FAILED", "Failed cases"), run["state"]
        page.goto(f"{service['base']}/v2/runs/flow-run/{flow_run_id}")
        page.wait_for("document.body.innerText.includes('Failed cases')", timeout=60, what="the red badge")
        shot = page.screenshot(tmp_path / "flow-run.png")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000

    with Session(get_engine(f"sqlite:///{database}")) as session:
        (stored,) = session.exec(select(EvalRun).where(EvalRun.flow_run_id == flow_run_id)).all()
        rows = session.exec(select(CaseResultRow).where(CaseResultRow.run_id == stored.id)).all()
    assert (stored.total_cases, stored.passed_cases, len(rows)) == (5, 4, 5)
    assert stored.config["slack"]["token"] == "${SLACK_BOT_TOKEN}" and TOKEN not in json.dumps(stored.config)
    assert stored.notification["status"] == "sent"

    summary, thread = slack.messages()[-2:]
    assert summary["channel"] == "#agent-evals" and not summary.get("thread_ts") and thread["thread_ts"]
    assert f"{service['base']}/runs/flow-run/{flow_run_id}" in json.dumps(summary["blocks"])
    assert "1 case(s) did not pass" in json.dumps(thread["blocks"])


def test_every_field_shows_its_title_its_description_and_named_choices(service, tmp_path) -> None:
    """What a person reads before filling the form: each field's title and what it is for, and
    an optional field's tabs named for what each choice means, Slack's fields included."""
    schema = EvaluationRequest.model_json_schema()
    request, slack = schema["properties"], schema["$defs"]["SlackSettings"]["properties"]
    with browser(tmp_path / "chromium") as page:
        _open_form(page, service)
        page.click_until(tab("Slack", "Slack settings"), f"!!{field('Channel')}", what="the Slack settings")
        for properties in (request, slack):
            for spec in properties.values():
                description = json.dumps(" ".join(spec["description"].split()))
                page.wait_for(  # found by its title (the form shows it), its description under it
                    f"({field(spec['title'])}).innerText.replace(/\\s+/g, ' ').includes({description})",
                    timeout=30,
                    what=f"{spec['title']!r} with its description",
                )
                names = [choice.get("title") for choice in spec.get("anyOf", [])]
                for name in filter(None, names):  # Slack's first tab is the nested form's title
                    page.wait_for(
                        f"!!{tab(spec['title'], name)}", timeout=30, what=f"{spec['title']}: {name}"
                    )
        page.wait_for(f"!!{tab('Slack', 'Off')}", timeout=30, what="Slack's Off tab")
        assert page.evaluate(f"({text_box('Bot token (its name)')}).type") == "password"  # masked
        page.screenshot(tmp_path / "form.png")


def test_a_refused_value_is_said_in_words_under_its_field_and_never_shown_back(service, tmp_path) -> None:
    """A typed-in token, a database URL with its password, a malformed Dask address and Slack
    turned on without a channel: the form stays, each field says in words what it expected
    (no regular expression, no "None is not of type 'string'"), no message shows the token or
    the password back, and the token's input is masked."""
    typed, password = "xoxb-typed-into-the-form", "hunter2-typed"
    before = _flow_run_ids(service)
    with browser(tmp_path / "chromium") as page:
        _open_form(page, service)
        fill(page, "Results database", f"postgresql://proctor:{password}@db.example/proctor", choice="URL")
        fill(page, "Dask cluster", "scheduler-without-scheme:8786", choice="Address")
        page.click_until(tab("Slack", "Slack settings"), f"!!{field('Channel')}", what="the Slack settings")
        page.type_into(text_box("Bot token (its name)"), typed)
        expected = {
            "Bot token (its name)": NAMED_SECRET,
            "Channel": CHANNEL_NEEDED,
            "Dask cluster": DASK_ADDRESS,
            "Results database": URL_WITHOUT_PASSWORD,
        }
        # A refused form creates nothing, so a submit the page did not take is clicked again.
        page.click_until(
            SUBMIT,
            f"({field('Dask cluster')}).innerText.includes({json.dumps(DASK_ADDRESS)})",
            what="the form's refusal after submit",
        )
        for label, sentence in expected.items():
            page.wait_for(
                f"({field(label)}).innerText.includes({json.dumps(sentence)})",
                timeout=60,
                what=f"{label}'s message",
            )
        time.sleep(3)  # the messages stay while the values are wrong
        page.screenshot(tmp_path / "refused.png")
        everything = page.evaluate("document.body.innerText")
        for label, sentence in expected.items():
            assert f"'{sentence}' was expected" in shown(page, label), label
        for raw in ("does not match", "^(", "is not valid under", "is not of type", typed, password):
            assert raw not in everything, raw
        assert page.evaluate(f"({text_box('Bot token (its name)')}).type") == "password"
        assert page.evaluate("location.href").endswith("/run")  # still on the form
    time.sleep(2)  # a run the UI had created would be listed by now
    assert _flow_run_ids(service) == before


def test_a_watched_run_whose_gate_fails_exits_non_zero(service, tmp_path) -> None:
    request = {
        "suite": "examples/weather/weather.evalset.json",
        "database_url": f"sqlite:///{tmp_path}/r.db",
        "report_dir": str(tmp_path / "report"),
    }
    done = subprocess.run(
        [
            *PREFECT,
            "deployment",
            "run",
            "proctor-evaluate/evaluate",
            "--param",
            f"request={json.dumps(request)}",
            "--watch",
        ],
        env=service["env"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=480,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Failed cases" in done.stdout + done.stderr
