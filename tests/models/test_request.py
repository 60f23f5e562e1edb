"""The flow's request as the Prefect UI sees it: field order on any server database, labels,
and every rule the model enforces also refused by the schema the UI validates against."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from prefect.utilities.callables import parameter_schema
from prefect.utilities.schema_tools.validation import build_error_obj, validate
from pydantic import ValidationError

from proctor.flows.evaluate import evaluate
from proctor.models.notify import SlackSettings
from proctor.models.request import EvaluationRequest, VariantSpec


@pytest.fixture(scope="module")
def form() -> dict[str, Any]:
    """The flow's parameter schema exactly as `prefect deploy` stores it on the server."""
    return parameter_schema(evaluate.fn).model_dump()


def _as_jsonb(value: Any) -> Any:
    """What PostgreSQL's JSONB hands back: object keys shortest first, then bytewise."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda key: (len(key.encode()), key.encode()))
        return {key: _as_jsonb(value[key]) for key in keys}
    if isinstance(value, list):
        return [_as_jsonb(item) for item in value]
    return value


def _ui_order(properties: dict[str, Any]) -> list[str]:
    """The Prefect UI's layout order: a stable sort on `position` (0 when absent)."""
    return sorted(properties, key=lambda name: properties[name].get("position", 0))


@pytest.mark.parametrize(
    ("model", "scrambled"), [(EvaluationRequest, True), (SlackSettings, True), (VariantSpec, False)]
)
def test_the_form_keeps_the_models_field_order_on_a_postgresql_server(form, model, scrambled) -> None:
    stored = _as_jsonb(form)
    properties = stored["definitions"][model.__name__]["properties"]
    assert (list(properties) != list(model.model_fields)) is scrambled  # what JSONB does to keys
    assert _ui_order(properties) == list(model.model_fields)  # the form is in order anyway


def test_the_database_field_says_what_an_empty_one_means_on_a_worker(form) -> None:
    field = form["definitions"]["EvaluationRequest"]["properties"]["database_url"]
    assert field["title"] == "Results database"
    assert "PROCTOR_DATABASE_URL" in field["description"] and "worker" in field["description"]


def test_every_field_has_a_label_and_descriptions_have_no_tags(form) -> None:
    request = form["definitions"]["EvaluationRequest"]["properties"]
    assert request["slack"]["title"] == "Slack"  # the newer UI labelled it "Field"
    for name, model in form["definitions"].items():
        texts = [model.get("description") or ""] + [
            field.get("description") or "" for field in model.get("properties", {}).values()
        ]
        for text in texts:  # descriptions are shown as plain text: no tags, no markdown code spans
            assert not re.search(r"<[a-zA-Z][^>]*>", text) and "`" not in text, (name, text)


def _refusal(form: dict[str, Any], request: dict[str, Any]) -> str:
    """What the server answers the UI's submit-time check (`/ui/schemas/validate`) with."""
    return json.dumps(build_error_obj(validate({"request": request}, form)))


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"slack": {"channel": "#evals", "token": "xoxb-1234-literal"}}, "slack"),
        ({"slack": {"webhook_url": "https://hooks.slack.com/services/T0/B0/secret"}}, "slack"),
        ({"slack": {"notify": "always"}}, "slack"),  # on, with nowhere to post
        ({"slack": {"channel": ""}}, "slack"),
        ({"dask_address": "scheduler:8786"}, "dask_address"),
        ({"dask_address": "local:0"}, "dask_address"),
    ],
)
def test_what_the_model_refuses_the_form_refuses_at_submit(form, fields, where) -> None:
    request = {"suite": "examples/weather/weather.evalset.json", **fields}
    with pytest.raises(ValidationError) as refused:
        EvaluationRequest(**request)
    assert refused.value.errors()[0]["loc"][0] == where
    answer = json.loads(_refusal(form, request))
    assert answer["valid"] is False
    assert answer["errors"][0]["property"] == "request"
    assert answer["errors"][0]["errors"][0]["property"] == where


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"slack": {"channel": "#evals"}},
        {"slack": {"channel": "C0123", "token": "secret:slack-bot-token", "notify": "failure"}},
        {"slack": {"webhook_url": "${SLACK_WEBHOOK_URL}"}},
        {"dask_address": "tcp://10.0.0.5:8786"},
        {"dask_address": "local:4"},
    ],
)
def test_what_the_model_accepts_the_form_accepts(form, fields) -> None:
    request = {"suite": "examples/weather/weather.evalset.json", **fields}
    EvaluationRequest(**request)
    assert json.loads(_refusal(form, request)) == {"errors": [], "valid": True}


def _messages(answer: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str, str]]:
    """The server's answer as (field path, message) pairs, the way the form places them."""
    found: list[tuple[str, str]] = []
    for error in answer:
        if isinstance(error, str):
            found.append((".".join(map(str, path)), error))
        else:
            found += _messages(error["errors"], (*path, error.get("property", error.get("index"))))
    return found


TYPED_TOKEN = "xoxb-1234-typed-into-the-form"
PASSWORD_URL = "postgresql://proctor:hunter2@db.example/proctor"


@pytest.mark.parametrize(
    ("fields", "shown"),
    [
        (
            {"slack": {"channel": "#evals", "token": TYPED_TOKEN}},
            (
                "slack.token",
                "a name such as ${SLACK_BOT_TOKEN} or secret:BLOCK_NAME, never the secret itself",
            ),
        ),
        (
            {"slack": {"webhook_url": "https://hooks.slack.com/services/T0/B0/" + TYPED_TOKEN}},
            (
                "slack.webhook_url",
                "a name such as ${SLACK_BOT_TOKEN} or secret:BLOCK_NAME, never the secret itself",
            ),
        ),
        (
            {"slack": {"channel": None, "notify": "always"}},
            ("slack.channel", "a channel such as #agent-evals or its id, or else a Webhook URL"),
        ),
        (
            {"slack": {"channel": ""}},
            ("slack.channel", "a channel such as #agent-evals or its id, or else a Webhook URL"),
        ),
        (
            {"database_url": PASSWORD_URL},
            ("database_url", "a URL without its password, or its name: ${ENV_VAR} or secret:BLOCK_NAME"),
        ),
        (
            {"dask_address": "scheduler:8786"},
            (
                "dask_address",
                "a Dask scheduler address such as tcp://host:8786, or local, or local:N for N workers",
            ),
        ),
    ],
    ids=["typed token", "typed webhook", "no channel", "empty channel", "password in url", "dask address"],
)
def test_a_refused_value_is_said_in_words_under_its_field_and_never_repeated(form, fields, shown) -> None:
    """The form prints the server's messages as they are: for these, a sentence of ours
    ("'…' was expected"), not a regular expression, not "None is not of type 'string'", and
    never the typed value (a token, a password) or the Slack object holding it."""
    request = {"suite": "examples/weather/weather.evalset.json", **fields}
    answer = json.loads(_refusal(form, request))
    field, expected = shown
    assert _messages(answer["errors"]) == [(f"request.{field}", f"'{expected}' was expected")]
    said = json.dumps(answer)
    assert TYPED_TOKEN not in said and "hunter2" not in said and "^(" not in said


@pytest.mark.parametrize(
    ("fields", "shown"),
    [
        ({"chunk_size": 0}, ("chunk_size", "0 is less than the minimum of 1")),
        ({"min_pass_rate": 101}, ("min_pass_rate", "101 is greater than the maximum of 100")),
        ({"agent_timeout_s": 0}, ("agent_timeout_s", "0 is less than or equal to the minimum of 0")),
        ({"repeat": 0}, ("repeat", "0 is less than the minimum of 1")),
        (
            {"slack": {"channel": "#x", "token": "secret:bot", "max_failures": 500}},
            ("slack.max_failures", "500 is greater than the maximum of 200"),
        ),
        ({"rate_limits": [{"rpm": 0}]}, ("rate_limits.0.rpm", "0 is less than or equal to the minimum of 0")),
        ({"variants": [{"name": "", "agent": "a.py:f"}]}, ("variants.0.name", "'' should be non-empty")),
    ],
)
def test_an_optional_fields_limits_are_said_plainly(form, fields, shown) -> None:
    """A limit on an optional value (or inside the optional Slack form) is said as the limit,
    not as "… is not valid under any of the given schemas"."""
    request = {"suite": "examples/weather/weather.evalset.json", **fields}
    with pytest.raises(ValidationError):
        EvaluationRequest(**request)
    field, expected = shown
    assert _messages(json.loads(_refusal(form, request))["errors"]) == [(f"request.{field}", expected)]


def test_a_missing_suite_is_named(form) -> None:
    answer = build_error_obj(validate({"request": {}}, form))
    assert _messages(answer["errors"]) == [("request.suite", "'suite' is a required property")]


def test_every_field_has_a_title_and_a_description_and_every_choice_a_label(form) -> None:
    """What a person reads in the form: a title and a description on every field of every
    part of it, and each optional field's tabs named for what they mean (not "str" / "None")."""
    for name, definition in form["definitions"].items():
        if "properties" not in definition:
            continue  # an enum
        for key, field in definition["properties"].items():
            assert field.get("title") and field.get("description"), (name, key)
            if "_" in key:  # not Pydantic's "Report Dir" made of the attribute's name
                assert field["title"] != key.replace("_", " ").title(), (name, key)
            for choice in field.get("anyOf", []):
                assert "$ref" in choice or choice.get("title"), (name, key, choice)
    assert form["definitions"]["SlackSettings"]["title"] == "Slack settings"


def test_a_typed_secret_is_masked_in_the_form(form) -> None:
    """Prefect's form draws a `password`-format string as a masked input (shown on a click)."""
    slack = form["definitions"]["SlackSettings"]["properties"]
    assert slack["token"]["format"] == "password"
    assert slack["webhook_url"]["anyOf"][0]["format"] == "password"


def test_a_literal_secret_is_refused_without_being_repeated() -> None:
    with pytest.raises(ValidationError) as refused:
        EvaluationRequest(suite="s.json", slack={"channel": "#x", "token": "xoxb-9999-literal"})
    assert "xoxb-9999-literal" not in refused.value.errors()[0]["msg"]


def test_a_secret_that_arrives_anyway_is_never_stored() -> None:
    """`for_storage` is what goes into `eval_run.config` and `eval_report.json`."""
    slack = SlackSettings.model_construct(
        **(SlackSettings(channel="#x").__dict__ | {"token": "xoxb-smuggled", "webhook_url": "https://h/s"})
    )
    request = EvaluationRequest.model_construct(
        **(
            EvaluationRequest(suite="s.json", database_url="postgresql://u:pw@db/r").__dict__
            | {"slack": slack}
        )
    )
    stored = json.dumps(request.for_storage())
    assert "xoxb-smuggled" not in stored and "https://h/s" not in stored and "pw@" not in stored
    assert request.for_storage()["slack"]["channel"] == "#x"
    fine = EvaluationRequest(suite="s.json", slack={"channel": "#x", "token": "secret:bot"})
    assert fine.for_storage()["slack"]["token"] == "secret:bot"


def test_a_misspelt_request_field_is_an_error_not_a_default() -> None:
    """A deployment's parameters or an API call with `concurrncy` must not run at the default."""
    with pytest.raises(ValidationError, match="concurrncy"):
        EvaluationRequest(suite="s.evalset.json", concurrncy=4)
    with pytest.raises(ValidationError, match="chanel"):
        EvaluationRequest(suite="s.evalset.json", slack={"channel": "#evals", "chanel": "#typo"})


def test_every_deployment_in_prefect_yaml_has_parameters_a_request_accepts() -> None:
    import yaml

    from tests.conftest import ROOT

    deployments = yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]
    assert deployments
    for deployment in deployments:
        EvaluationRequest.model_validate(deployment["parameters"]["request"])
