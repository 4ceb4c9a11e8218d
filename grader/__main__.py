"""`python -m grader` is `dezero-grade`."""
import sys

from grader.cli import main

sys.exit(main())
