"""Is a Prefect API configured? Answered without importing Prefect (1-2 s here).

`proctor run` makes a Prefect flow run only when there is a Prefect server to record it;
otherwise it runs without Prefect rather than start a temporary server. Prefect reads its
API URL, highest priority first, from: the environment, a `.env` file, `prefect.toml`,
`pyproject.toml` ([tool.prefect]), and the active profile. The same places are read here;
once Prefect is imported in this process (tests, embedding code) its own settings answer.
"""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path
from typing import Any


def configured_api_url() -> str | None:
    """The Prefect API URL this process would use, or None when Prefect would start a
    temporary (ephemeral) server."""
    if "prefect.settings" in sys.modules:
        from prefect.settings import get_current_settings

        url = get_current_settings().api.url
        return str(url) if url else None
    return api_url_from_sources()


def api_url_from_sources() -> str | None:
    """The API URL from the environment and the files Prefect reads, in Prefect's order."""
    return (
        os.environ.get("PREFECT_API_URL")
        or _dotenv("PREFECT_API_URL")
        or _toml_value(Path("prefect.toml"), ("api", "url"))
        or _toml_value(Path("pyproject.toml"), ("tool", "prefect", "api", "url"))
        or _profile_value("PREFECT_API_URL")
    )


def _dotenv(key: str) -> str | None:
    try:
        lines = Path(".env").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        name, _, value = line.strip().removeprefix("export ").partition("=")
        if name.strip() == key:
            return value.strip().strip("'\"") or None
    return None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _toml_value(path: Path, keys: tuple[str, ...]) -> str | None:
    value: Any = _read_toml(path)
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return str(value) if value else None


def _profiles_path() -> Path:
    explicit = (
        os.environ.get("PREFECT_PROFILES_PATH")
        or _dotenv("PREFECT_PROFILES_PATH")
        or _toml_value(Path("prefect.toml"), ("profiles_path",))
        or _toml_value(Path("pyproject.toml"), ("tool", "prefect", "profiles_path"))
    )
    if explicit:
        return Path(explicit).expanduser()
    home = os.environ.get("PREFECT_HOME")
    return (Path(home) if home else Path.home() / ".prefect") / "profiles.toml"


def _profile_value(key: str) -> str | None:
    data = _read_toml(_profiles_path())
    active = os.environ.get("PREFECT_PROFILE") or data.get("active")
    profile = data.get("profiles", {}).get(active, {}) if active else {}
    value = profile.get(key) if isinstance(profile, dict) else None
    return str(value) if value else None
