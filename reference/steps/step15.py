"""Step 15 has no code in the book (the theory of complex graphs): this file holds the state of
step 14, as a learner's step15.py may."""
from step14 import *  # noqa: F401,F403
