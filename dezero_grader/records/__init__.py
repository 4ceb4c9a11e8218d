"""What the grader's data is: the records that flow through a grading, the statuses and verdicts with
their rules, and the JSON schemas every document is checked against."""
