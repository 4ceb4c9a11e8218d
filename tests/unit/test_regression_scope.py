"""Which earlier checks a step re-runs: derived from the assignment files (and, for step files,
from what the submission's own file keeps: tests/unit/test_stepfile_reach.py), never listed per
step."""
from dezero_grader.catalogue import assignments
from dezero_grader.grading import run


def _steps_of(step):
    _, regression = run.checks_of(assignments.load(step))
    return {u.step for u in regression}, {u.id for u in regression}


def test_a_package_answers_for_every_package_step_before_it():
    steps, _ = _steps_of(50)
    with_checks = {s for s in range(23, 50) if assignments.load(s).checks}
    assert steps == with_checks and min(steps) == 23
    assert assignments.load(50).regression == tuple(range(23, 50))


def test_the_first_package_step_and_the_first_step_re_run_nothing():
    assert assignments.load(23).regression == () and assignments.load(1).regression == ()


def test_a_pack_runs_after_the_step_it_is_filed_under_each_check_once():
    assert 'core' not in assignments.load(51).regression
    assert 'core' in assignments.load(52).regression
    own, regression = assignments.with_regression(assignments.load(60))
    ids = [u.id for u in own + regression]
    assert len(ids) == len(set(ids))
    # the pack's own contracts of the step files (graded on the package) are among them
    assert {'step14/reuse', 'step16/diamond', 'step18/no_grad'} <= set(ids)


def test_only_book_tier_checks_of_steps_the_catalogue_does_not_draw_from():
    a = assignments.load(60)
    _, regression = assignments.with_regression(a)
    for use in regression:
        assert use.tier == 'book' or use.step in a.faults_from, use.id


def test_a_step_file_answers_for_its_own_step_and_a_step_without_code_for_the_one_before():
    # which earlier contracts a step file carries is the learner's file's to say (a step 14
    # without Square is correct): read from the submission, not from the book's files
    assert assignments.load(13).regression == () and assignments.load(22).regression == ()
    assert assignments.load(15).regression == (14,) and assignments.load(5).regression == (4,)


def _clear_caches():
    for fn in (assignments.content_hash, assignments.load, assignments._document):
        fn.cache_clear()


def test_the_assignment_hash_covers_every_step_re_run(tmp_path, monkeypatch):
    """Editing step 23's file regrades step 50 (which re-runs it), not step 22."""
    import shutil
    from dezero_grader.records import schema
    folder = tmp_path / 'assignments'
    shutil.copytree(schema.data_dir('assignments'), folder)
    before = {s: assignments.content_hash(s) for s in (22, 50)}
    original = schema.data_dir
    monkeypatch.setattr(schema, 'data_dir',
                        lambda name: folder if name == 'assignments' else original(name))
    _clear_caches()
    try:
        text = (folder / 'step23.json').read_text(encoding='utf-8')
        (folder / 'step23.json').write_text(text.replace('"points": 1', '"points": 2', 1),
                                            encoding='utf-8')
        assert assignments.content_hash(50) != before[50]
        assert assignments.content_hash(22) == before[22]
    finally:
        monkeypatch.undo()
        _clear_caches()
