"""History's judging on its own: bisection over commits whose gradings are given (no git, no
worker), and the cache key of a grading."""
from types import SimpleNamespace

from dezero_grader.history import grading, judge

CHECK = 'step44/linear'


class _Card:
    """The little of a scorecard record that judging reads."""

    def __init__(self, status):
        self.status, self.is_invalid, self.invalid = status, False, None

    def check(self, check_id):
        return SimpleNamespace(status=self.status) if check_id == CHECK else None


class _Grader:
    """Commits c0 (good) .. c6 (bad); `outcome[sha]` is 'passed', 'failed' or a problem code."""

    def __init__(self, outcome):
        self.outcome = outcome
        self.graded = []
        self.repo = SimpleNamespace(between=lambda good, bad: ['c{}'.format(i) for i in range(1, 7)])

    def prepare(self, step, sha, only=()):
        self.graded.append(sha)
        result = self.outcome[sha]
        if result in ('passed', 'failed'):
            return SimpleNamespace(problem=None, card=_Card(result))
        return SimpleNamespace(problem={'code': result, 'message': ''}, card=None)

    def grade(self, gradings):
        pass


def _search(outcome):
    g = _Grader(outcome)
    s = {'step': 45, 'check': CHECK, 'good': 'c0', 'bad': 'c6'}
    judge._first_bad(g, {}, [s])
    return s, g


def test_a_grader_error_in_bisection_is_unknown_not_broken():
    """c3's grading failed in the grader: it says nothing about the code. Treated as a failing
    check, it was named the first bad commit; now the search steps around it, names c4, and
    says that c3 could not be graded."""
    s, g = _search({'c1': 'passed', 'c2': 'passed', 'c3': 'grader-error', 'c4': 'failed',
                    'c5': 'failed', 'c6': 'failed'})
    first_bad, last_good = s['commits'][s['hi']], s['commits'][s['lo']]
    assert (last_good, first_bad) == ('c2', 'c4')
    assert sorted(s['commits'][i] for i in s['unknown']) == ['c3']


def test_an_invalid_commit_still_counts_as_broken():
    """A commit whose code does not load is evidence (the check does not pass there)."""
    s, _ = _search({'c1': 'passed', 'c2': 'passed', 'c3': 'syntax-error', 'c4': 'failed',
                    'c5': 'failed', 'c6': 'failed'})
    assert s['commits'][s['hi']] == 'c3' and not s.get('unknown')


def test_the_cache_key_holds_a_digest_of_the_course_secret(monkeypatch):
    """Scorecards graded under one course secret (or none) are never served under another:
    their seeds were others."""
    from dezero_grader.grading import run
    keys = []
    for secret in (None, 'one', 'two'):
        if secret is None:
            monkeypatch.delenv(run.SECRET_ENV, raising=False)
        else:
            monkeypatch.setenv(run.SECRET_ENV, secret)
        keys.append(grading.cache_key('sha256:' + '0' * 64, 44, run.Options(device='sim')))
    assert len(set(keys)) == 3
    monkeypatch.setenv(run.SECRET_ENV, 'one')
    assert grading.cache_key('sha256:' + '0' * 64, 44, run.Options(device='sim')) == keys[1]
