"""`python -m assembler`: the same as the `assemble` command."""

import sys

from assembler.cli.main import main

sys.exit(main())
