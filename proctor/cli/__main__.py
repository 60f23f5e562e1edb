"""`python -m proctor.cli`, the same as the `proctor` command."""

import sys

from proctor.cli.main import main

sys.exit(main())
