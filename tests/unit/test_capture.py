"""The one way learner code is called and its exceptions recorded inside the worker."""
import errno

from dezero_grader.sandboxed.capture import MAX_TRACEBACK, Call, describe, text


def _submission(tmp_path, source):
    """A function defined in a file under `tmp_path` (the submission's top)."""
    path = tmp_path / 'mine.py'
    path.write_text(source)
    namespace = {}
    exec(compile(source, str(path), 'exec'), namespace)
    return namespace


def test_a_call_keeps_its_value_or_the_exception_and_the_time(tmp_path):
    ok = Call.of(lambda a, b=0: a + b, 2, b=3)
    assert ok.ok and ok.value == 5 and ok.exception is None and ok.duration_s >= 0
    failed = Call.of(int, 'x')
    assert not failed.ok and isinstance(failed.exception, ValueError) and failed.value is None


def test_sys_exit_is_an_answer_unless_only_ordinary_exceptions_are_caught():
    def leave():
        raise SystemExit(3)
    assert isinstance(Call.of(leave).exception, SystemExit)
    try:
        Call.of(leave, catch=Exception)
    except SystemExit:
        pass
    else:
        raise AssertionError('SystemExit was swallowed by a catch of Exception')
    assert describe(Call.of(leave).exception)['message'] == 'the code called sys.exit(3)'


def test_where_is_the_innermost_line_of_the_submission_and_paths_are_the_learners(tmp_path):
    mine = _submission(tmp_path, 'import json\n'
                                 'def outer(path):\n'
                                 '    return inner(path)\n'
                                 'def inner(path):\n'
                                 '    return json.loads(open(path).read())\n')
    (tmp_path / 'data.json').write_text('{not json')
    call = Call.of(mine['outer'], str(tmp_path / 'data.json'))
    record = describe(call.exception, top=str(tmp_path))
    assert record['type'] == 'JSONDecodeError'
    assert record['where'] == 'mine.py:5 in inner'        # not json's own line, where it raised
    assert 'mine.py:3 in outer' in record['traceback']
    assert not any('capture.py' in line for line in record['traceback'])
    missing = describe(Call.of(open, str(tmp_path / 'gone.txt')).exception, top=str(tmp_path))
    assert missing['errno'] == errno.ENOENT and str(tmp_path) not in missing['message']
    assert 'gone.txt' in missing['message']


def test_a_deep_recursion_keeps_only_the_innermost_frames(tmp_path):
    mine = _submission(tmp_path, 'def down(n):\n    return down(n + 1)\n')
    record = describe(Call.of(mine['down'], 0).exception, top=str(tmp_path))
    assert record['type'] == 'RecursionError'
    assert len(record['traceback']) == MAX_TRACEBACK and record['where'] == 'mine.py:2 in down'


def test_a_message_whose_str_raises_is_still_text():
    class Odd(Exception):
        def __str__(self):
            raise RuntimeError('no')
    assert text(Odd()) == '<unprintable Odd>'
    assert describe(Odd())['message'] == '<unprintable Odd>'
    assert len(text('x' * 5000)) < 4100
    assert describe(ValueError('never raised'))['traceback'] == []   # no traceback at all
