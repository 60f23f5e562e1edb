"""A function tool's JSON schema from its Python signature and docstring, as HoloDeck derives it
when an agent.yaml gives `file:` + `function:` and no `parameters`.

Each parameter becomes a property typed from its annotation (str, int, float, bool, list, dict,
Optional/| None), described by its line in the docstring's `Args:` section; a parameter without
a default is required. The tool's description falls back to the docstring's first line.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any

_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    tuple: "array",
    dict: "object",
}
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.+)$")


def _json_type(annotation: Any) -> dict[str, Any]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return _json_type(options[0]) if len(options) == 1 else {}
    if origin is not None:
        annotation = origin
    kind = _JSON_TYPES.get(annotation)
    return {"type": kind} if kind else {}


def docstring_args(doc: str) -> dict[str, str]:
    """The `Args:` section of a Google-style docstring: parameter name -> description."""
    described: dict[str, str] = {}
    in_args = False
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        if in_args and stripped.endswith(":") and not _ARG_LINE.match(line):
            break  # the next section (Returns:, Raises:)
        match = _ARG_LINE.match(line) if in_args else None
        if match:
            described[match.group(1).lstrip("*")] = match.group(2).strip()
    return described


def schema_from_function(function: Callable[..., Any]) -> tuple[dict[str, Any], str]:
    """The parameters schema and the description of a tool implemented by `function`."""
    doc = inspect.getdoc(function) or ""
    described = docstring_args(doc)
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # unresolvable annotations: fall back to untyped properties
        hints = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD) or name in ("self", "cls"):
            continue
        prop = _json_type(hints.get(name, parameter.annotation))
        if name in described:
            prop["description"] = described[name]
        properties[name] = prop
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema, doc.split("\n\n")[0].strip()
