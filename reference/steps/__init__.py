"""The reference's single-file steps 1-22, one ``stepNN.py`` each, as a learner hands them in.

Before step 23 the book keeps the whole framework in one file per step that runs a short demo
when it is executed. These files are the correct submissions the grader's selftest grades for
those steps (``dezero_grader.proof.selftest.reference_source``); they never import the ``dezero`` package.
Steps 5 and 15 have no code in the book: their files hold the state of steps 4 and 14.
"""
