"""Every import of Proctor's own names resolves, the lazy ones inside functions too: a module
moved or a name renamed otherwise breaks only the run that reaches that line (a report, a Slack
message), long after the tests that import the module at its top have passed."""

from __future__ import annotations

import ast
import importlib

from tests.conftest import ROOT

PACKAGE_FOLDERS = ("proctor", "models", "tasks", "flows", "deployments")
INSTALLED_AS = {"models": "proctor.models", "tasks": "proctor.tasks", "flows": "proctor.flows"}


def _own_imports() -> list[tuple[str, int, str, str | None]]:
    found = []
    for folder in PACKAGE_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    if node.module.split(".")[0] == "proctor":
                        for alias in node.names:
                            found.append((str(path.relative_to(ROOT)), node.lineno, node.module, alias.name))
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.name.split(".")[0] == "proctor":
                            found.append((str(path.relative_to(ROOT)), node.lineno, alias.name, None))
    return found


def _resolves(module: str, name: str | None) -> bool:
    imported = importlib.import_module(module)
    if name is None or name == "*" or hasattr(imported, name):
        return True
    try:
        importlib.import_module(f"{module}.{name}")
    except ImportError:
        return False
    return True


def test_every_import_of_proctors_own_names_resolves() -> None:
    imports = _own_imports()
    assert len(imports) > 500  # the scan found the package's imports
    broken = []
    for file, line, module, name in imports:
        try:
            ok = _resolves(module, name)
        except ModuleNotFoundError as error:
            if not (error.name or "").startswith("proctor"):
                continue  # an extra's package (google-adk, chromadb...) not installed here
            broken.append(f"{file}:{line}: {module}: {error}")
            continue
        except ImportError as error:
            broken.append(f"{file}:{line}: {module}: {error}")
            continue
        if not ok:
            broken.append(f"{file}:{line}: {module} has no {name}")
    assert not broken, "\n".join(broken)


def test_the_scan_catches_a_name_that_moved() -> None:
    assert not _resolves("proctor.stats.regression", "LABEL_NAMES")  # it moved to proctor.models.comparison
    assert _resolves("proctor.models.comparison", "LABEL_NAMES")
