"""`python -m assembler`: the same as the `assemble` command."""

import sys

from assembler.cli import main

sys.exit(main())
