"""The scenarios of `dezero_grader.sandboxed.probes.scenarios.data`: parameters and report shapes."""
from dezero_grader.contracts import P, declare
from dezero_grader.contracts.shapes import INT


declare(
    'data.loader',
    'Labels of every batch of `epochs` epochs, shuffled, plus a replay with the same '
    'NumPy seed and one unshuffled epoch',
    params={'n': P('int'), 'batch': P('int'), 'epochs': P('int'), 'seed': P('int')},
    report={'epochs': [[[INT]]], 'replay': [[[INT]]], 'unshuffled': [[INT]]})


declare(
    'data.seqloader',
    'Labels of each batch of one epoch of SeqDataLoader',
    params={'n': P('int'), 'batch': P('int')},
    report={'batches': [[INT]]})
