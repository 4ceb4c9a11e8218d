"""The pipeline of one grading: plan the checks, observe the learner and the reference through workers,
judge, diagnose, score, write the scorecard (run.py reads in order)."""
