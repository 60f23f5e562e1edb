"""User code named in a suite or on the command line (`package.module:attr` or
`path/to/file.py:attr`): agents, their Python tools, code graders, all imported into this process.

It imports nothing else of Proctor, so agents, metrics and loaders can all use it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any


class AgentLoadError(ValueError):
    """The target cannot be imported or is not callable (agents, tools and graders alike)."""


@lru_cache(maxsize=256)
def load_python_target(target: str) -> Callable[..., Any]:
    """The callable `module:attr` or `file.py:attr` names; errors say what was tried."""
    module_ref, sep, attr = target.rpartition(":")
    if not sep or not module_ref or not attr:
        raise AgentLoadError(
            f"agent target {target!r} must look like 'package.module:attr' or 'file.py:attr'"
        )
    if module_ref.endswith(".py"):
        path = Path(module_ref)
        if not path.is_file():
            raise AgentLoadError(f"agent target {target!r}: file {path} not found")
        # As `python agent.py` would: the agent's own folder is importable, so its sibling
        # packages (a `models` or `tasks` of its own) import as the user wrote them.
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        name = f"proctor_agent_{hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise AgentLoadError(f"agent target {target!r}: cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except (Exception, SystemExit) as error:  # user code calling sys.exit() cannot end Proctor
            del sys.modules[name]
            raise AgentLoadError(f"agent target {target!r}: importing {path} failed: {error!r}") from None
    else:
        try:
            module = importlib.import_module(module_ref)
        except (Exception, SystemExit) as error:
            raise AgentLoadError(f"agent target {target!r}: cannot import {module_ref}: {error!r}") from None
    try:
        agent = getattr(module, attr)
    except AttributeError:
        raise AgentLoadError(f"agent target {target!r}: {module_ref} has no attribute {attr!r}") from None
    if not callable(agent):
        raise AgentLoadError(f"agent target {target!r} is a {type(agent).__name__}, not a callable")
    return agent


def describe_error(error: BaseException) -> str:
    """`Type: message` for an error user code raised, never raising itself: an exception
    whose `__str__` raises once stopped a whole run when its case's failure was written."""
    name = type(error).__name__
    try:
        text = str(error)
    except BaseException:  # noqa: BLE001 - whatever a user's __str__ raises
        return f"{name} (its message cannot be shown: its __str__ raised)"
    return f"{name}: {text}" if text else name


def error_message(error: BaseException) -> str:
    """The error's message, or its type when it has none (or none that can be shown)."""
    try:
        text = str(error)
    except BaseException:  # noqa: BLE001
        return describe_error(error)
    return text or type(error).__name__
