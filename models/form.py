"""What makes a Pydantic model a good Prefect UI form, whatever database the server uses.

Order: the Prefect UI lays out an object's fields by each property's `position` and, without
one, in the order the schema's keys come back from the server; a server on PostgreSQL stores
the schema as JSONB, which reorders keys (shortest first), so Tags and Slack came before
Suite. `FormModel` numbers every property in declaration order.

Refusals: the UI can only refuse at submit what the JSON schema says, so rules a validator
enforces in Python are also written into the schema next to the field they guard. The form
shows the server's jsonschema messages word for word, and most of them quote the value (a
typed-in token, a password) and the rule as written (a raw regular expression, or for an
optional field "… is not valid under any of the given schemas" with the whole Slack object).
So: a pattern is written with `refused_unless`, whose message is ours and quotes no value;
the limits of an optional field sit beside its `anyOf` (jsonschema's own words then: "0 is
less than the minimum of 1"); and an optional nested form (Slack) keeps only its shape in
its definition, its checks beside the `anyOf` too.

Labels: an optional field shows one tab per choice, labelled "str" and "None" unless its
choices have titles (`tabs`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.json_schema import GetJsonSchemaHandler, JsonSchemaValue
from pydantic_core import CoreSchema

# A secret is only ever named: an environment variable or a Prefect Secret block.
SECRET_REFERENCE_PATTERN = r"^(\$\{[A-Za-z_][A-Za-z0-9_]*\}|secret:[A-Za-z0-9][A-Za-z0-9_.-]*)$"

# Keywords that only constrain a value, as opposed to saying what it is (which the form draws).
CHECKS = frozenset(
    {
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "pattern",
        "minItems",
        "maxItems",
        "if",
        "then",
        "else",
    }
)


def refused_unless(pattern: str, expected: str) -> dict[str, Any]:
    """Schema keywords refusing a string that does not match `pattern`, in words.

    `const` is the one keyword whose message is entirely ours and quotes nothing typed:
    the form says "'<expected>' was expected". (Keep `expected` free of apostrophes: the
    message is its Python repr.)"""
    return {"if": {"type": "string", "not": {"pattern": pattern}}, "then": {"const": expected}}


def tabs(
    value: str, none: str, *, beside: dict[str, Any] | None = None, **value_keywords: Any
) -> Callable[[dict[str, Any]], None]:
    """A field's `json_schema_extra`: the titles of an optional field's two choices, shown as
    its tabs (for a nested form, the tab takes the form's own title); keywords for the value's
    choice (`format="password"` masks what is typed) and `beside` its `anyOf` (a refusal)."""

    def apply(schema: dict[str, Any]) -> None:
        value_choice, none_choice = schema["anyOf"]
        if "$ref" not in value_choice:
            value_choice.update(title=value, **value_keywords)
        none_choice["title"] = none
        schema.update(beside or {})

    return apply


def number_properties(schema: dict[str, Any], model: type | None = None) -> None:
    """`position` 0..n on the schema's properties, in the order the model declares them; the
    limits of an optional field moved beside its `anyOf`, where their messages are plain."""
    for position, field in enumerate(schema.get("properties", {}).values()):
        field["position"] = position
        for choice in field.get("anyOf", []):
            if "$ref" not in choice and choice.get("type") != "null":
                for keyword in CHECKS & set(choice):
                    field.setdefault(keyword, choice.pop(keyword))


def take_checks(definition: dict[str, Any]) -> dict[str, Any]:
    """The checks of a nested form's definition, taken out of it: what a property or the
    whole object refuses (`CHECKS`), leaving its shape (types, titles, defaults)."""
    checks: dict[str, Any] = {key: definition.pop(key) for key in CHECKS & set(definition)}
    for name, field in definition.get("properties", {}).items():
        taken = {key: field.pop(key) for key in CHECKS & set(field)}
        for choice in field.get("anyOf", []):
            taken |= {key: choice.pop(key) for key in CHECKS & set(choice) if choice.get("type") != "null"}
        if taken:
            checks.setdefault("properties", {})[name] = taken
    return checks


class FormModel(BaseModel):
    """A model shown as a Prefect UI form: its fields keep their declared order.

    Unknown fields are errors: a misspelt `concurrncy` in a deployment's parameters (prefect.yaml)
    or an API call would otherwise be dropped, and the run go ahead without it."""

    model_config = ConfigDict(json_schema_extra=number_properties, extra="forbid")

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        """An optional nested form (`slack: SlackSettings | None`) keeps its checks beside the
        field's `anyOf`, applied when the value is an object: inside it, any refusal would be
        reported as the `anyOf`'s, "{…the whole object, token included…} is not valid under
        any of the given schemas"."""
        schema = handler(core_schema)
        own = handler.resolve_ref_schema(schema)
        for field in own.get("properties", {}).values():
            for choice in field.get("anyOf", []):
                if "$ref" in choice and (checks := take_checks(handler.resolve_ref_schema(choice))):
                    field.update({"if": {"type": "object"}, "then": checks})
        return schema
