"""What makes a Pydantic model a good Prefect UI form, whatever database the server uses.

The Prefect UI lays out an object's fields by each property's `position` and, without one,
in the order the schema's keys come back from the server; a server on PostgreSQL stores the
schema as JSONB, which reorders keys (shortest first), so Tags and Slack came before Suite.
`FormModel` numbers every property in declaration order. The UI can only refuse at submit
what the JSON schema says, so rules a validator enforces in Python are also written into the
schema (`pattern`, `if`/`then`) next to the field they guard.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

# A secret is only ever named: an environment variable or a Prefect Secret block.
SECRET_REFERENCE_PATTERN = r"^(\$\{[A-Za-z_][A-Za-z0-9_]*\}|secret:[A-Za-z0-9][A-Za-z0-9_.-]*)$"


def number_properties(schema: dict[str, Any], model: type | None = None) -> None:
    """`position` 0..n on the schema's properties, in the order the model declares them."""
    for position, field in enumerate(schema.get("properties", {}).values()):
        field["position"] = position


class FormModel(BaseModel):
    """A model shown as a Prefect UI form: its fields keep their declared order.

    Unknown fields are errors: a misspelt `concurrncy` in a deployment's parameters (prefect.yaml)
    or an API call would otherwise be dropped, and the run go ahead without it."""

    model_config = ConfigDict(json_schema_extra=number_properties, extra="forbid")
