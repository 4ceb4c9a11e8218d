"""`python -m dezero_grader` is `dezero-grade`."""
import sys

from dezero_grader.cli import main

sys.exit(main())
