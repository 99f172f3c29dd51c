"""``python -m aotcheck.cli ...``: the ``aotcheck`` command, for an environment whose scripts are
not on PATH (a venv run by its python, a subprocess in a test)."""
import sys

from . import main

sys.exit(main())
