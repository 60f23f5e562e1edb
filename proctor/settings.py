"""Every environment variable Proctor reads, with its default and what it sets, in one table.

The code reads the `PROCTOR_*` limits and folders through `value()`, so the default a user is
told (docs/configuration.md is generated from `SETTINGS` by `scripts/docs_reference.py`) is
the one in force; `tests/test_docs.py` checks that every `PROCTOR_*` name in the code is here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    """One row of the configuration table: variables read in order (the first set wins)."""

    names: tuple[str, ...]
    what: str
    default: str | None = None  # the value in force when none is set, as the code parses it
    shown: str | None = None  # the default as the table says it, when not the raw value

    @property
    def default_text(self) -> str:
        if self.shown is not None:
            return self.shown
        return "unset" if self.default is None else f"`{self.default}`"


SETTINGS: tuple[Setting, ...] = (
    Setting(
        ("PROCTOR_DATABASE_URL",),
        "results database (any SQLAlchemy URL, or a reference: `${VAR}`, `secret:BLOCK`)",
        shown="`sqlite:///./.proctor/proctor.db`",
    ),
    Setting(
        ("PROCTOR_JUDGE_API_KEY", "OPENAI_API_KEY"),
        "the `openai` provider's key, for judges and agents (a model's `api_key` reference wins); "
        "never sent to another provider",
    ),
    Setting(
        ("PROCTOR_JUDGE_BASE_URL", "OPENAI_BASE_URL"),
        "judge endpoint (a metric's `model.endpoint` wins)",
        shown="OpenAI",
    ),
    Setting(
        ("AZURE_OPENAI_API_KEY", "ANTHROPIC_API_KEY"),
        "the `azure_openai` / `anthropic` provider's key (a model's `api_key` reference wins); "
        "Ollama takes none",
    ),
    Setting(
        ("PROCTOR_FILE_CACHE",),
        "where downloaded file inputs are kept",
        default=".proctor/cache/files",
    ),
    Setting(
        ("PROCTOR_FILE_CACHE_TTL_S",),
        "how long a downloaded file input is kept, in seconds (24 h)",
        default="86400",
    ),
    Setting(
        ("PROCTOR_MAX_DOWNLOAD_BYTES",),
        "largest file input downloaded (25 MB)",
        default="26214400",
    ),
    Setting(
        ("PROCTOR_FILE_TIMEOUT_S",),
        "how long one attached file (download and conversion) may take when the case has no `--case-timeout`",
        default="120",
    ),
    Setting(
        ("PROCTOR_MAX_EXPANDED_BYTES",),
        "what an attached .docx/.xlsx/.pptx (a zip) may expand to before markitdown opens it (256 MB)",
        default="268435456",
    ),
    Setting(
        ("PROCTOR_ALLOWED_FILE_ROOTS",),
        "extra folders (os.pathsep-separated) a suite's files and `test_cases_file` may come from",
    ),
    Setting(
        ("PROCTOR_MAX_SUITE_BYTES",),
        "largest suite or config file read (bigger suites: a folder of files); nesting is limited "
        "to 100 levels, YAML aliases to 100,000 repeated values, ids to 200 characters, and "
        "duplicate keys are refused",
        default="268435456",
        shown="`268435456` (256 MB)",
    ),
    Setting(
        ("PROCTOR_MAX_ALIAS_CHARS",),
        "characters YAML aliases may repeat beyond those written out (10 MB)",
        default="10485760",
    ),
    Setting(
        ("PROCTOR_DB_RETRY_S",),
        "how long a run waits for an unreachable results database before it fails",
        default="30",
    ),
    Setting(
        ("PROCTOR_LEASE_S",),
        "how old a run's heartbeat must be before another process may take the run over",
        default="60",
    ),
    Setting(
        ("PROCTOR_RATE_LIMITS",),
        "the model provider's quota, as `--rate-limit` takes it, `;`-separated per endpoint "
        "(`600rpm,90000tpm` or `https://host/v1=500rpm;http://localhost:8000/v1=60rpm`); "
        "`--rate-limit` wins",
        shown="unset (learned from the provider)",
    ),
    Setting(
        ("PROCTOR_SHARED_QUOTA",),
        "`0` paces each process alone; by default every process using the same results database "
        "shares one endpoint and key's quota (its `quota_share` table)",
        default="1",
    ),
    Setting(
        ("PROCTOR_STORED_FILE_CHARS",),
        "how much of each processed file's markdown a case row keeps (shown in report.json; 0 keeps none)",
        default="20000",
    ),
    Setting(
        ("PROCTOR_PRICES",),
        'a JSON file `{"model": [input, output]}` (USD per million tokens) that adds models to the '
        "`cost` metric's price table",
    ),
    Setting(
        ("PROCTOR_EMBEDDINGS",),
        "`local`: every retrieval tool embeds with the `embeddings` extra's all-MiniLM-L6-v2 "
        "(a warning says the scores are then not HoloDeck's)",
    ),
    Setting(
        ("PROCTOR_KEYWORD_INDEX",),
        "`in-memory`: a `hierarchical_document` tool whose `keyword_index` is OpenSearch uses the "
        "in-memory BM25 index instead of being refused (a warning names it and why rankings may differ)",
    ),
    Setting(
        ("PROCTOR_INDEX_CACHE",),
        "where retrieval tools' indexes are kept between runs",
        default=".proctor/cache/indexes",
    ),
    Setting(
        ("SLACK_BOT_TOKEN", "SLACK_WEBHOOK_URL"),
        "Slack credentials, referenced by the `slack` settings (`${SLACK_BOT_TOKEN}` by default)",
    ),
    Setting(("PREFECT_UI_URL",), "base of the flow-run link in Slack messages"),
    Setting(
        ("PREFECT_UI_API_URL",),
        "where the Prefect UI calls the API, set for `prefect server start`: `/api` for any port or host",
        shown="`PREFECT_API_URL` at server start, else `http://127.0.0.1:4200/api`",
    ),
    Setting(
        ("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS",),
        "how long the temporary Prefect server `--prefect` starts may take to come up",
        default="120",
    ),
    Setting(
        ("PROCTOR_TEST_POSTGRES_URL",),
        "server the tests create a throwaway database on",
        shown="unset (PostgreSQL tests skip, and say so in the test header)",
    ),
    Setting(("PREFECT_API_URL",), "a Prefect server to report to", shown="unset (ephemeral API)"),
    Setting(
        ("PROCTOR_WARM",),
        "`0`: the `proctor` command never starts in a warm process (`proctor warm start`), "
        "even when one is up",
        shown="unset (a warm process runs the command when one is up)",
    ),
    Setting(
        ("PROCTOR_WARM_SOCKET",),
        "the warm process's socket, for `proctor warm` and the commands it runs",
        shown="`$XDG_RUNTIME_DIR` (else `$TMPDIR`, else `/tmp`)`/proctor-UID/warm-HASH.sock`, one per "
        "Python environment and checkout",
    ),
)

_BY_NAME = {name: setting for setting in SETTINGS for name in setting.names}


def setting(name: str) -> Setting:
    return _BY_NAME[name]


def value(name: str) -> str | None:
    """The variable's value, else its documented default (blank counts as unset)."""
    return os.environ.get(name, "").strip() or _BY_NAME[name].default
