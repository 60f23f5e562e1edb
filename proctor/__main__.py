"""`python -m proctor`: the `proctor` command (a warm process runs it when one is up)."""

import sys

from proctor.warm.client import console_main

sys.exit(console_main())
