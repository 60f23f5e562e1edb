"""Whether a Prefect API is configured, read from where Prefect reads it, without importing Prefect."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from proctor.cli.prefect_api import api_url_from_sources

URL = "http://127.0.0.1:4299/api"


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in list(os.environ):
        if key.startswith("PREFECT_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_nothing_configured_means_no_api(bare: Path) -> None:
    assert api_url_from_sources() is None


def test_the_environment_names_the_api(bare: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_API_URL", URL)
    assert api_url_from_sources() == URL


def test_the_active_profile_names_the_api(bare: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (bare / ".prefect").mkdir()
    (bare / ".prefect" / "profiles.toml").write_text(
        f'active = "local"\n[profiles.local]\nPREFECT_API_URL = "{URL}"\n[profiles.other]\n'
    )
    assert api_url_from_sources() == URL
    monkeypatch.setenv("PREFECT_PROFILE", "other")
    assert api_url_from_sources() is None


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (".env", f"PREFECT_API_URL={URL}\n"),
        ("prefect.toml", f'[api]\nurl = "{URL}"\n'),
        ("pyproject.toml", f'[tool.prefect.api]\nurl = "{URL}"\n'),
    ],
)
def test_project_files_name_the_api(bare: Path, name: str, text: str) -> None:
    (bare / name).write_text(text)
    assert api_url_from_sources() == URL


def test_prefect_agrees(bare: Path) -> None:
    """Prefect's own settings read the same profile the same way."""
    (bare / ".prefect").mkdir()
    (bare / ".prefect" / "profiles.toml").write_text(
        f'active = "x"\n[profiles.x]\nPREFECT_API_URL = "{URL}"\n'
    )
    code = "from prefect.settings import get_current_settings; print(get_current_settings().api.url)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == api_url_from_sources() == URL
