"""Placeholder: being written."""
class Dataset: pass
