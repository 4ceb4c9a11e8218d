"""dezero-grader: an acceptance gate for learners who rebuild DeZero step by step."""
