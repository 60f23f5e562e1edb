"""The reference tables of the manual, generated from the code so they cannot drift.

`docs/metrics/index.md` carries the metric registry (`proctor/metrics/registry.py`): every name a
suite may use, its arguments and their defaults, its default threshold and how it scores (the
metric class's `how_it_scores`); `docs/metrics/adk-vanna.md` the ADK metrics refused by name.
`docs/configuration.md` carries the settings table (`proctor/settings.py`), `docs/suites/holodeck.md`
what Proctor does with each HoloDeck tool kind and provider (`proctor/agents/tools/holodeck_support.py`).
Each table sits between `<!-- generated: NAME -->` and `<!-- end generated -->`.

    python scripts/docs_reference.py          # rewrite the tables in place
    python scripts/docs_reference.py --check  # exit 1, naming the page, when one is stale

`tests/test_docs.py` runs the check; as a MkDocs hook (`hooks:` in mkdocs.yml) the same check
stops `mkdocs build` on a stale page.
"""

from __future__ import annotations

import enum
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "docs" / "metrics" / "index.md",
    ROOT / "docs" / "metrics" / "adk-vanna.md",
    ROOT / "docs" / "configuration.md",
    ROOT / "docs" / "suites" / "holodeck.md",
]
BLOCK = re.compile(r"(<!-- generated: (\w+) -->\n)(.*?)(<!-- end generated -->)", re.S)
KINDS = {"deterministic": "deterministic", "nlp": "NLP", "llm": "LLM judge"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _shown(value: object) -> str:
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def metrics_table() -> str:
    from proctor.metrics.registry import METRIC_LOCATIONS, REGISTRY

    lines = [
        "| name | from | kind | arguments (default) | passes at | what it scores |",
        "|---|---|---|---|---|---|",
    ]
    for name, location in METRIC_LOCATIONS.items():
        metric = REGISTRY.get(name)
        upstream = location.split(".")[0] if "." in location.split(":")[0] else "proctor"
        origin = {"adk": "Google ADK", "vanna": "Vanna", "holodeck": "HoloDeck"}.get(upstream, "Proctor")
        arguments = []
        for field_name, field in metric.model_fields.items():
            if field.is_required():
                arguments.append(f"`{field_name}`")
            else:
                default = field.get_default(call_default_factory=True)
                arguments.append(f"`{field_name}` ({_cell(_shown(default))})")
        kind = "informational" if metric.informational else KINDS.get(metric.kind, metric.kind)
        threshold = "never fails" if metric.informational else f"{metric.default_threshold:g}"
        lines.append(
            f"| `{name}` | {origin} | {kind} | {', '.join(arguments) or '–'} | {threshold} "
            f"| {_cell(metric.how_it_scores or metric.summary)} |"
        )
    return "\n".join(lines) + "\n"


def adk_refused_table() -> str:
    from proctor.metrics.adk.names import ADK_METRICS_NOT_SCORED

    lines = ["| ADK name | why Proctor refuses it |", "|---|---|"]
    lines += [f"| `{name}` | {_cell(why)} |" for name, why in ADK_METRICS_NOT_SCORED.items()]
    return "\n".join(lines) + "\n"


def settings_table() -> str:
    from proctor.settings import SETTINGS

    lines = ["| variable | default | what |", "|---|---|---|"]
    for setting in SETTINGS:
        names = ", ".join(f"`{name}`" for name in setting.names)
        lines.append(f"| {names} | {_cell(setting.default_text)} | {_cell(setting.what)} |")
    return "\n".join(lines) + "\n"


def holodeck_support_table() -> str:
    from proctor.agents.tools.holodeck_support import support_table

    return support_table()


TABLES = {
    "metrics": metrics_table,
    "adk_refused": adk_refused_table,
    "settings": settings_table,
    "holodeck_support": holodeck_support_table,
}


def rendered(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + TABLES[m.group(2)]() + m.group(4), text)


def stale_pages() -> list[Path]:
    stale = []
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        if not BLOCK.search(text) or rendered(text) != text:
            stale.append(path)
    return stale


def on_pre_build(config: object) -> None:
    """MkDocs hook: a page whose table no longer matches the code stops the build."""
    stale = stale_pages()
    if stale:
        names = ", ".join(str(path.relative_to(ROOT)) for path in stale)
        from mkdocs.exceptions import PluginError

        raise PluginError(f"{names}: generated tables are stale; run python scripts/docs_reference.py")


def main(argv: list[str]) -> int:
    if "--check" in argv:
        stale = stale_pages()
        for path in stale:
            print(f"{path.relative_to(ROOT)}: stale; run python scripts/docs_reference.py", file=sys.stderr)
        return 1 if stale else 0
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        path.write_text(rendered(text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
