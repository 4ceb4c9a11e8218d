"""Placeholder: being written."""
class DataLoader: pass
class SeqDataLoader(DataLoader): pass
