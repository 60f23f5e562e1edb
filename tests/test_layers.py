"""The rooms of the package import each other in one direction: no circle between them, lazy
imports inside functions included. A circle is how a tree of rooms turns back into a pile: each
room can then only be understood, tested or moved together with the others in it."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

INSTALLED_AS = {"models": "models", "tasks": "tasks", "flows": "flows", "deployments": "deployments"}


def _room_of(module: str) -> str:
    """`proctor.run.engine` -> `proctor.run`; `proctor.costs` -> `proctor.costs`; `proctor.models.x` -> `models`."""
    parts = module.split(".")
    if parts[0] != "proctor" or len(parts) == 1:
        return module
    if parts[1] in INSTALLED_AS:
        return INSTALLED_AS[parts[1]]
    return ".".join(parts[:2])


def _room_of_file(path: Path) -> str:
    relative = path.relative_to(ROOT).with_suffix("")
    parts = list(relative.parts)
    if parts[0] in INSTALLED_AS:
        return parts[0]
    return _room_of(".".join(parts))


def room_imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for folder in ("proctor", *INSTALLED_AS):
        for path in (ROOT / folder).rglob("*.py"):
            room = _room_of_file(path)
            targets = graph.setdefault(room, set())
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = []
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                elif isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                for name in names:
                    if name.startswith("proctor.") and _room_of(name) not in (room, "proctor"):
                        targets.add(_room_of(name))
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one room (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(room: str) -> None:
        index[room] = low[room] = len(index)
        stack.append(room)
        for other in graph.get(room, ()):
            if other not in index:
                visit(other)
                low[room] = min(low[room], low[other])
            elif other in stack:
                low[room] = min(low[room], index[other])
        if low[room] == index[room]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == room:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for room in sorted(graph):
        if room not in index:
            visit(room)
    return found


# HoloDeck's design puts `to_markdown()` on its `TestReport` model: the model renders itself
# through the one Jinja2 environment (a lazy import inside that method), while the environment's
# `verdict` filter reads the comparison labels the models define. The one edge allowed back.
ALLOWED = {("models", "proctor.rendering")}


def test_no_room_imports_a_room_that_imports_it_back() -> None:
    graph = room_imports()
    for source, target in ALLOWED:
        assert target in graph[source], f"{source} no longer imports {target}: drop it from ALLOWED"
        graph[source].discard(target)
    assert {"proctor.run", "proctor.execution", "proctor.metrics", "models"} <= set(graph)
    assert "proctor.storage" in graph["proctor.run"]  # the scan sees imports between rooms
    assert circles(graph) == [], "rooms importing each other: " + "; ".join(
        " <-> ".join(group) for group in circles(graph)
    )


def test_the_check_finds_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
