"""The manual is run, not just read: every YAML and JSON example in README.md and docs/ parses
(and those that are whole files, a dataset, an agent file, an ADK config, validate), every shell
example is valid bash and every Python one compiles, the generated reference tables match the
code, and the site builds in MkDocs' strict mode (no broken link, anchor or page left out of
the nav)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
BLOCKS = [
    (path.relative_to(ROOT).as_posix(), match.group(1), match.group(2), text[: match.start()].count("\n") + 1)
    for path in PAGES
    for text in [path.read_text(encoding="utf-8")]
    for match in FENCE.finditer(text)
]
DATA_BLOCKS = [block for block in BLOCKS if block[1] in ("yaml", "json")]
BASH_BLOCKS = [block for block in BLOCKS if block[1] == "bash"]
SOURCE_FOLDERS = ("proctor", "models", "tasks", "flows", "deployments")


def _ids(blocks: list[tuple[str, str, str, int]]) -> list[str]:
    return [f"{page}:{line}" for page, _, _, line in blocks]


def _docs_reference():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import docs_reference
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return docs_reference


def test_the_manual_has_examples_of_every_kind() -> None:
    kinds = {kind for _, kind, _, _ in BLOCKS}
    assert {"yaml", "json", "bash", "python"} <= kinds
    assert len(DATA_BLOCKS) >= 5


@pytest.mark.parametrize(("page", "kind", "text", "line"), DATA_BLOCKS, ids=_ids(DATA_BLOCKS))
def test_every_yaml_and_json_example_parses(page: str, kind: str, text: str, line: int) -> None:
    try:
        document = yaml.safe_load(text) if kind == "yaml" else json.loads(text)
    except (yaml.YAMLError, json.JSONDecodeError) as error:
        pytest.fail(f"{page} line {line}: the {kind} example does not parse: {error}")
    assert document is not None, f"{page} line {line}: empty {kind} example"


@pytest.mark.parametrize(("page", "kind", "text", "line"), BASH_BLOCKS, ids=_ids(BASH_BLOCKS))
def test_every_shell_example_is_valid_bash(page: str, kind: str, text: str, line: int) -> None:
    """Syntax only (`bash -n`): the README's two commands are run by .ci/run and the service
    page's block by tests/deployments/test_service_section.py."""
    done = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True)
    assert done.returncode == 0, f"{page} line {line}: the shell example is not valid bash: {done.stderr}"


def test_the_home_page_gives_the_readmes_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    first = re.compile(r"```bash\n(.*?)```", re.S)
    assert first.search(home).group(1) == first.search(readme).group(1)


def test_the_readme_is_a_front_door_whose_links_lead_somewhere() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300, "README.md is the front door; the manual is docs/"
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    assert links, "README.md links to no chapter"
    missing = [link for link in links if "://" not in link and not (ROOT / link).is_file()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_the_generated_tables_match_the_registry_and_the_settings() -> None:
    docs_reference = _docs_reference()
    stale = docs_reference.stale_pages()
    assert not stale, f"{stale}: stale; run python scripts/docs_reference.py"
    from proctor.metrics.registry import METRIC_LOCATIONS

    metrics = (ROOT / "docs" / "metrics" / "index.md").read_text(encoding="utf-8")
    assert all(f"| `{name}` |" in metrics for name in METRIC_LOCATIONS)


def test_every_proctor_variable_the_code_reads_is_in_the_settings_table() -> None:
    from proctor.settings import SETTINGS

    documented = {name for setting in SETTINGS for name in setting.names}
    in_code: dict[str, str] = {}
    for folder in SOURCE_FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            for name in re.findall(r"\bPROCTOR_[A-Z0-9_]+\b", path.read_text(encoding="utf-8")):
                in_code.setdefault(name, path.relative_to(ROOT).as_posix())
    in_code.pop("PROCTOR_RULE", None)  # a constant's name (reporting/comparison.py), not a variable
    undocumented = {name: where for name, where in in_code.items() if name not in documented}
    assert not undocumented, f"read by the code, missing from proctor/settings.py: {undocumented}"
    tests_only = {"PROCTOR_TEST_POSTGRES_URL"}
    unread = {n for n in documented if n.startswith("PROCTOR_") and n not in in_code} - tests_only
    assert not unread, f"in proctor/settings.py but read by no code: {unread}"


def test_a_setting_left_blank_takes_its_documented_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from proctor.settings import setting, value

    monkeypatch.setenv("PROCTOR_DB_RETRY_S", " ")
    assert value("PROCTOR_DB_RETRY_S") == setting("PROCTOR_DB_RETRY_S").default == "30"
    monkeypatch.setenv("PROCTOR_DB_RETRY_S", "5")
    assert value("PROCTOR_DB_RETRY_S") == "5"


@pytest.mark.needs_extra  # CI runs it with the docs extra installed
def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[docs]')")
    pytest.importorskip("material", reason="mkdocs-material is not installed (pip install -e '.[docs]')")
    site = tmp_path / "site"
    command = ["mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)]
    done = subprocess.run(
        [sys.executable, "-m", *command],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    metrics = (site / "metrics" / "index.html").read_text(encoding="utf-8")
    assert "tool_trajectory_avg_score" in metrics and "LLMAsJudgeEvaluator" in metrics
    assert "PROCTOR_DB_RETRY_S" in (site / "configuration" / "index.html").read_text(encoding="utf-8")


PYTHON_BLOCKS = [block for block in BLOCKS if block[1] == "python"]


@pytest.mark.parametrize(("page", "kind", "text", "line"), PYTHON_BLOCKS, ids=_ids(PYTHON_BLOCKS))
def test_every_python_example_compiles(page: str, kind: str, text: str, line: int) -> None:
    try:
        compile(text, f"{page}:{line}", "exec")
    except SyntaxError as error:
        pytest.fail(f"{page} line {line}: the python example does not compile: {error}")


def _block(page: str, kind: str, starts: str) -> str:
    found = [text for name, k, text, _ in BLOCKS if name == page and k == kind and text.startswith(starts)]
    assert len(found) == 1, f"{page}: expected one {kind} example starting {starts!r}, found {len(found)}"
    return found[0]


def _validate(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    from proctor.cli import EXIT_PASSED, main

    status = main(["validate", str(path)])
    out = capsys.readouterr()
    assert status == EXIT_PASSED, out.out + out.err
    return out.out


def test_the_readmes_dataset_and_the_http_agent_example_validate_as_whole_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's Vanna dataset with the agents chapter's `http:endpoint.yaml`: the suite
    loads, the agent file's URL, templates and `${AGENT_TOKEN}` header check out."""
    monkeypatch.setenv("AGENT_TOKEN", "token-for-the-test")
    (tmp_path / "orders.dataset.yaml").write_text(_block("README.md", "yaml", "dataset:"))
    (tmp_path / "endpoint.yaml").write_text(_block("docs/agents.md", "yaml", "url:"))
    assert "orders.dataset.yaml: valid vanna suite" in _validate(tmp_path, capsys)


def test_the_adk_test_config_example_is_accepted_beside_an_adk_eval_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import ADK_DATA

    monkeypatch.setenv("PROCTOR_JUDGE_API_KEY", "key-for-the-test")  # its judges need one
    suite = tmp_path / "dice_agent"
    shutil.copytree(ADK_DATA / "dice_agent", suite)
    (suite / "test_config.json").write_text(_block("docs/suites/adk.md", "json", "{"))
    out = _validate(suite / "dice.test.json", capsys)
    assert "hallucinations_v1" in out and "rubric_based_multi_turn_trajectory_quality_v1" in out


def test_every_path_of_this_repository_the_manual_names_exists() -> None:
    """`proctor/run/engine.py`, `tests/flows/test_resume.py`, `bench/alarms.py`...: a file moved
    or renamed fails here until the chapter that names it follows."""
    top = ("proctor/", "models/", "tasks/", "flows/", "deployments/", "tests/", "bench/", "examples/")
    top += ("scripts/", "docs/", ".ci/")
    folders = "|".join(map(re.escape, top))
    named = re.compile(rf"`((?:{folders})[A-Za-z0-9_./-]*)(?:::[A-Za-z_.]+)?`")
    missing = [
        f"{page.relative_to(ROOT)}: {match.group(1)}"
        for page in PAGES
        for match in named.finditer(page.read_text(encoding="utf-8"))
        if not (ROOT / match.group(1)).exists()
    ]
    assert not missing, f"the manual names paths that do not exist: {missing}"
