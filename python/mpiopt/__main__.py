"""`python -m mpiopt`: the same as the `mpiopt` command."""
import sys

from .cli import main

sys.exit(main())
