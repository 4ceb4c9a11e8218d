"""JSON Schemas of every document dezero-grader reads or writes (package data)."""
