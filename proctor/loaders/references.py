"""Targets a suite file names (`file.py:attr`, `openai:agent.yaml`, `http:endpoint.yaml`),
resolved against the suite's own folder, so a suite runs the same from any working directory."""

from __future__ import annotations

from pathlib import Path

# Targets `KIND:config.yaml` that name a configured agent rather than a Python callable.
CONFIGURED_AGENTS = ("openai", "http", "adk")


def resolve_relative_target(target: str, base_dir: Path) -> str:
    """`file.py:attr` and `openai:`/`http:` config files resolve against `base_dir`."""
    kind, sep, rest = target.partition(":")
    if sep and kind in CONFIGURED_AGENTS and not Path(rest).is_absolute():
        return f"{kind}:{(base_dir / rest).resolve()}"
    module, sep, attr = target.rpartition(":")
    if sep and module.endswith(".py") and not Path(module).is_absolute():
        return f"{(base_dir / module).resolve()}:{attr}"
    return target
