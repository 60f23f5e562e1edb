"""The two commands the README opens with, read from its first bash block.

`python tests/readme_commands.py test` prints the test command: `.ci/run` runs exactly that,
and `tests/test_readme.py` checks both commands are there and shaped as promised.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_commands(text: str | None = None) -> dict[str, str]:
    """{'run': ..., 'test': ...}: each the command line after its comment in the first block."""
    text = README.read_text(encoding="utf-8") if text is None else text
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    if block is None:
        raise ValueError("README.md has no bash block")
    commands = [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]
    if len(commands) != 2:
        raise ValueError(f"README.md's first bash block should hold two commands; found {len(commands)}")
    return {"run": commands[0], "test": commands[1]}


if __name__ == "__main__":
    print(readme_commands()[sys.argv[1] if len(sys.argv) > 1 else "test"])
