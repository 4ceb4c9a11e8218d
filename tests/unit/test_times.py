"""Hand-in times for a batch's late penalty, read as the platforms write them: Gradescope's
submission_metadata.yml (Ruby's YAML) and grades export, Canvas's submissions JSON, a times CSV,
a roster column; every mistake a clear message."""
import datetime
import json

import pytest

from dezero_grader.batch import times
from dezero_grader.intake import roster
from dezero_grader.scoring import policy

UTC = datetime.timezone.utc

# the form of "Export Submissions": one entry per submission folder, Ruby symbols as keys
METADATA = """\
submission_1001:
  :submitters:
  - :name: Alice Liddell
    :sid: S-1
    :email: alice@uni.example
  :created_at: 2026-05-01 22:10:05.123456000 -07:00
  :score: 30.0
  :history: []
submission_1002:
  :submitters:
  - :name: Bob Builder
    :sid: S-2
    :email: bob@uni.example
  - :name: Carol Cooper
    :sid: S-3
    :email: carol@uni.example
  :created_at: 2026-05-03 09:00:00.000000000 -07:00
  :score: 12.0
"""

CANVAS = [
    {'id': 1, 'user_id': 1001, 'submitted_at': '2026-05-02T05:10:05Z',
     'cached_due_date': '2026-05-02T06:59:59Z', 'late': False, 'workflow_state': 'submitted'},
    {'id': 2, 'user_id': 1002, 'submitted_at': '2026-05-03T16:00:00Z',
     'cached_due_date': '2026-05-09T06:59:59Z', 'user': {'login_id': 'bob', 'sis_user_id': 'S-2'}},
    {'id': 3, 'user_id': 1003, 'submitted_at': None, 'workflow_state': 'unsubmitted'},
]


def _at(text):
    return policy.parse_time(text)


def test_gradescope_submission_metadata(tmp_path):
    (tmp_path / 'submission_metadata.yml').write_text(METADATA)
    t = times.read(tmp_path / 'submission_metadata.yml')
    assert t.of('submission_1001').submitted_at == _at('2026-05-01T22:10:05.123456-07:00')
    # a folder renamed after a learner is found by their SID, email or its local part
    for name in ('S-2', 'carol@uni.example', 'carol', 'submission_1002'):
        assert t.of(name).submitted_at == _at('2026-05-03T09:00:00-07:00')
    assert t.of('nobody') is None


def test_canvas_submissions_with_their_own_due_dates(tmp_path):
    (tmp_path / 'subs.json').write_text(json.dumps(CANVAS))
    t = times.read(tmp_path / 'subs.json')
    bob = t.of('bob')
    assert bob.submitted_at == _at('2026-05-03T16:00:00Z') and bob.due == _at('2026-05-09T06:59:59Z')
    # the user id in the file names Canvas's "Download Submissions" gives
    assert t.of('liddellalice_1001_9001_step52').submitted_at == _at('2026-05-02T05:10:05Z')
    assert t.of('smithjo_late_1003_9003_step52') is None     # never handed in
    # or the roster's person whose Canvas ID it is
    r = roster.parse_csv('submission,id\nalice-folder,1001\n')
    assert t.of('alice-folder', r).due == _at('2026-05-02T06:59:59Z')
    course = policy.from_document({'schema_version': '1.0', 'late': {
        'due': '2026-05-01T00:00:00Z', 'penalty_per_day': 0.1}})
    timing = t.timing('bob', course)
    assert timing.due == _at('2026-05-09T06:59:59Z')      # the learner's own due date wins
    assert t.timing('nobody', course) is None


def test_a_times_csv_and_a_roster_column(tmp_path):
    (tmp_path / 't.csv').write_text('submission,submitted_at\nalice,2026-05-02T10:00:00+09:00\n'
                                    'bob,2026-05-02 10:00:00 -0700\n')
    t = times.read(tmp_path / 't.csv')
    assert t.of('bob').submitted_at.astimezone(UTC) == datetime.datetime(2026, 5, 2, 17, tzinfo=UTC)
    r = roster.parse_csv('submission,student,submitted_at,due\n'
                         'alice,A,2026-05-02T10:00:00Z,2026-05-09T00:00:00Z\nbob,B,\n')
    from_roster = times.from_roster(r)
    assert from_roster.of('alice').due == _at('2026-05-09T00:00:00Z')
    assert from_roster.of('bob') is None
    assert times.from_roster(roster.parse_csv('submission\nalice\n')) is None


@pytest.mark.parametrize('name, text, words', [
    ('t.csv', 'submission,student\nalice,A\n', 'has no submission times'),
    ('t.csv', 'submission,submitted_at\nalice,2026-05-02 10:00\n', 'UTC offset'),
    ('t.yml', 'a: [unclosed\n', 'not the YAML Gradescope writes'),
    ('t.yml', '- 1\n- 2\n', "not Gradescope's submission_metadata.yml"),
    ('t.yml', 'submission_1:\n  :submitters: []\n', 'has no :created_at:'),
    ('t.yml', 'submission_1:\n  :created_at: 2026-05-01 10:00:00\n', 'UTC offset'),
    ('t.json', '{"a": 1}', "not Canvas's list of submissions"),
    ('t.json', '[{"user_id": 1, "submitted_at": null}]', 'lists no submission'),
])
def test_what_cannot_be_used_is_said(tmp_path, name, text, words):
    (tmp_path / name).write_text(text)
    with pytest.raises(times.TimesError, match=words):
        times.read(tmp_path / name)


def test_a_missing_file_is_said(tmp_path):
    with pytest.raises(times.TimesError, match='no times file at'):
        times.read(tmp_path / 'nope.csv')
