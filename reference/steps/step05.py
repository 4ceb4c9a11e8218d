"""Step 5 has no code in the book (the theory of backpropagation): this file holds the state of
step 4, as a learner's step05.py may."""
from step04 import *  # noqa: F401,F403
