"""One assignment file per step (package data)."""
