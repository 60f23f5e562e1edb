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
        for text in texts:  # descriptions are rendered as HTML-capable markdown
            assert not re.search(r"<[a-zA-Z][^>]*>", text), (name, text)


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
