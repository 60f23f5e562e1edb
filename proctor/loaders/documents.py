"""Reading a suite or config file into plain data, refusing what would hang or crash later.

A suite is input from whoever wrote it: beyond broken syntax, a file may be huge, not text,
nested thousands of levels deep, repeat a key (JSON and YAML keep the last one silently), or
be a YAML "billion laughs" whose aliases expand to more values than memory holds. Each of
these is one problem naming the file, never a traceback or a hung loader.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from proctor.loaders.errors import Problem, SuiteError, json_path
from proctor.settings import value as setting_value

MAX_DOCUMENT_BYTES = int(setting_value("PROCTOR_MAX_SUITE_BYTES"))  # 100k cases: ~21 MB
MAX_DEPTH = 100  # suites nest about 12 levels; tool arguments take a few more
MAX_ALIAS_VALUES = 100_000  # values YAML aliases may repeat beyond those written out
# Characters YAML aliases may repeat beyond those written out: a few large anchored texts
# repeated a few thousand times expanded a 1 MB file into 400 MB of messages.
MAX_ALIAS_CHARS = int(setting_value("PROCTOR_MAX_ALIAS_CHARS"))
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _DuplicateKey(ValueError):
    pass


class _StrictLoader(yaml.SafeLoader):
    """Safe YAML that refuses a key given twice in one mapping (merge keys `<<` may be overridden)."""

    def compose_mapping_node(self, anchor: str | None) -> yaml.MappingNode:
        node = super().compose_mapping_node(anchor)
        seen: set[tuple[str, str]] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            key = (key_node.tag, key_node.value)
            if key in seen:
                raise yaml.composer.ComposerError(
                    None, None, f"duplicate key {key_node.value!r}", key_node.start_mark
                )
            seen.add(key)
        return node


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(f"duplicate key {key!r}")
        result[key] = value
    return result


def _children(value: Any) -> list[tuple[int | str, Any]]:
    if isinstance(value, dict):
        return [(str(key), item) for key, item in value.items()]
    if isinstance(value, list):
        return list(enumerate(value))
    return []


def _too_deep(document: Any) -> tuple[int | str, ...] | None:
    """Where the document first nests deeper than `MAX_DEPTH`, without recursing."""
    stack: list[tuple[tuple[int | str, ...], Any]] = [((), document)]
    while stack:
        location, value = stack.pop()
        if len(location) > MAX_DEPTH:
            return location
        stack.extend((location + (key,), item) for key, item in _children(value))
    return None


def _node_children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_yaml_graph(node: yaml.Node) -> str | None:
    """What is wrong with a composed YAML graph: an alias inside itself, or aliases repeating
    more values than `MAX_ALIAS_VALUES`; sizes are counted once per node, so a bomb is cheap
    to measure."""
    sizes: dict[int, int] = {}
    chars: dict[int, int] = {}  # characters of text each node stands for, expanded
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(node, False)]
    while stack:
        current, children_done = stack.pop()
        key = id(current)
        if children_done:
            on_path.discard(key)
            children = _node_children(current)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            own = len(current.value) if isinstance(current, yaml.ScalarNode) else 0
            chars[key] = own + sum(chars[id(child)] for child in children)
            continue
        if key in sizes:
            continue
        if key in on_path:
            return "an alias refers to the value it is part of (a recursive anchor)"
        on_path.add(key)
        stack.append((current, True))
        for child in _node_children(current):
            if id(child) in on_path:
                return "an alias refers to the value it is part of (a recursive anchor)"
            if id(child) not in sizes:
                stack.append((child, False))
    repeated = sizes[id(node)] - len(sizes)
    if repeated > MAX_ALIAS_VALUES:
        return (
            f"aliases repeat {repeated} values, more than the {MAX_ALIAS_VALUES} allowed "
            "(a 'billion laughs' document?)"
        )
    written = sum(len(n.value) for n in _unique_scalars(node))
    repeated_chars = chars[id(node)] - written
    if repeated_chars > MAX_ALIAS_CHARS:
        return (
            f"aliases repeat {repeated_chars / 2**20:.1f} MB of text, more than the "
            f"{MAX_ALIAS_CHARS / 2**20:g} MB allowed (PROCTOR_MAX_ALIAS_CHARS)"
        )
    return None


def _unique_scalars(node: yaml.Node) -> list[yaml.ScalarNode]:
    """Each scalar node of the graph once, however many aliases reach it."""
    seen: set[int] = set()
    found: list[yaml.ScalarNode] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, yaml.ScalarNode):
            found.append(current)
        stack.extend(_node_children(current))
    return found


def _parse_yaml(path: Path, text: str) -> Any:
    loader = None
    try:
        loader = _StrictLoader(text)  # checks every character first
        node = loader.get_single_node()
        if node is None:
            return None
        problem = _check_yaml_graph(node)
        if problem:
            raise SuiteError([Problem(str(path), "", f"invalid YAML: {problem}")])
        return loader.construct_document(node)
    except RecursionError:
        raise SuiteError(
            [Problem(str(path), "", f"invalid YAML: nested deeper than {MAX_DEPTH} levels")]
        ) from None
    except ValueError as error:  # Python refuses integers of more than 4,300 digits
        raise SuiteError([Problem(str(path), "", f"invalid YAML: {_number_problem(error)}")]) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        location = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None)
        if isinstance(error, yaml.reader.ReaderError):
            prefix = text[: error.position]
            location = f"line {prefix.count(chr(10)) + 1}, column {error.position - prefix.rfind(chr(10))}"
            problem = f"character #x{error.character:04x} is not allowed in YAML (is this a binary file?)"
        raise SuiteError([Problem(str(path), location, f"invalid YAML: {problem or error}")]) from None
    finally:
        if loader is not None:
            loader.dispose()


def _number_problem(error: ValueError) -> str:
    if "integer string conversion" in str(error):
        digits = sys.get_int_max_str_digits()
        return f"a number with more than {digits} digits; expected a number a suite can use"
    return str(error)[:200]


def _parse_json(path: Path, text: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as error:
        location = f"line {error.lineno}, column {error.colno}"
        raise SuiteError([Problem(str(path), location, f"invalid JSON: {error.msg}")]) from None
    except _DuplicateKey as error:
        raise SuiteError([Problem(str(path), "", f"invalid JSON: {error}")]) from None
    except ValueError as error:  # Python refuses integers of more than 4,300 digits
        raise SuiteError([Problem(str(path), "", f"invalid JSON: {_number_problem(error)}")]) from None
    except RecursionError:
        raise SuiteError(
            [Problem(str(path), "", f"invalid JSON: nested deeper than {MAX_DEPTH} levels")]
        ) from None


def read_document(path: Path) -> Any:
    """Parse a JSON or YAML file; syntax errors name the line and column."""
    if not path.exists():
        raise SuiteError([Problem(str(path), "", "file not found")])
    if path.is_dir():
        raise SuiteError([Problem(str(path), "", "is a folder; expected a JSON or YAML file")])
    if not path.is_file():
        raise SuiteError([Problem(str(path), "", "not a regular file; expected a JSON or YAML file")])
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            raise SuiteError(
                [
                    Problem(
                        str(path),
                        "",
                        f"the file is {size / 2**20:.1f} MB, over the {MAX_DOCUMENT_BYTES / 2**20:g} MB "
                        "limit for a suite file (PROCTOR_MAX_SUITE_BYTES)",
                    )
                ]
            )
        data = path.read_bytes()
    except OSError as error:
        raise SuiteError([Problem(str(path), "", f"cannot read file: {error.strerror or error}")]) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise SuiteError(
            [
                Problem(
                    str(path),
                    "",
                    f"not UTF-8 text (byte {error.start}: {error.reason}); save the file as UTF-8",
                )
            ]
        ) from None
    if not text.strip():
        raise SuiteError([Problem(str(path), "", "the file is empty")])
    document = _parse_json(path, text) if path.suffix.lower() == ".json" else _parse_yaml(path, text)
    where = _too_deep(document)
    if where is not None:
        raise SuiteError(
            [Problem(str(path), json_path(where[:3]) + "...", f"nested deeper than {MAX_DEPTH} levels")]
        )
    return document
