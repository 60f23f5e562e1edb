"""`${VAR}` references in configuration, expanded from the environment in one place."""

from __future__ import annotations

import os
import re
from collections.abc import Callable

ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(text: str, on_missing: Callable[[str], str]) -> str:
    """Each `${VAR}` replaced by its value; `on_missing(name)` decides for unset ones."""
    return ENV_REFERENCE.sub(lambda match: os.environ.get(match.group(1)) or on_missing(match.group(1)), text)
