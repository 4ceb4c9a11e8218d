"""A DOT label of spaces is a blank label: a learner's get_dot_graph that labels unnamed
variables ' ' (as one corpus repository does) draws the same graph as the book's ''."""
from dezero_grader.sandboxed.probes.scenarios import dot


def test_a_label_of_spaces_reads_as_blank_and_names_are_kept():
    text = ('digraph g {\n1 [label=" ", color=orange, style=filled]\n'
            '2 [label="x0", color=orange, style=filled]\n'
            '3 [label="Add", color=lightblue, style=filled, shape=box]\n'
            '2 -> 3\n3 -> 1\n}')
    labels, kinds, _ = dot.parse(text)
    assert labels == {'1': '', '2': 'x0', '3': 'Add'}
    assert kinds['3'] == 'function' and kinds['1'] == 'variable'
