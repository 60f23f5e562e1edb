"""`python -m proctor.cli`, the same as the `proctor` command."""

import sys

from proctor.cli.main import console_main

sys.exit(console_main())
