"""A finished scorecard for a person: the terminal report, the HTML page, graph pictures, the progress
display, and the output paths checked before a grading."""
