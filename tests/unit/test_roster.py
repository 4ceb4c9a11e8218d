"""Rosters from what instructors have: Canvas's gradebook export and Gradescope's roster export,
read as the platforms write them (a BOM, quoted names with commas, the points row, the test
student, staff), and the roster CSV with a submission column; every mistake a clear message."""
import pytest

from dezero_grader.intake import roster

CANVAS = ('\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,"Step 51 (812)","Step 52 (813)",'
          'Current Score\r\n'
          '    Points Possible,,,,,2.00,30.00,(read only)\r\n'
          '"Liddell, Alice",1001,S-0001,alice,"Section A, Tuesday",2.00,,100\r\n'
          '"Builder, Bob",1002,S-0002,,Section B,,,0\r\n'
          '"Cooper, Carol",1003,,,Section B,1,,50\r\n'
          '"Student, Test",9999,,,Section A,,,\r\n')
GRADESCOPE = ('First Name,Last Name,SID,Email,Role,Sections\n'
              'Alice,Liddell,S-0001,alice@uni.example,Student,A\n'
              'Dave,Dent,,dave@uni.example,Student,B\n'
              'Ian,Instructor,,ian@uni.example,Instructor,\n'
              'Tess,Assistant,,tess@uni.example,TA,\n')


def test_a_canvas_gradebook_export_as_it_comes():
    r = roster.parse_csv(CANVAS, 'grades.csv')
    assert [p.student for p in r.people] == ['Liddell, Alice', 'Builder, Bob', 'Cooper, Carol']
    alice, bob, carol = r.people
    assert (alice.submission, alice.aliases) == ('alice', ('S-0001', '1001'))
    assert (alice.canvas_id, alice.sis_user_id, alice.section) == ('1001', 'S-0001',
                                                                    'Section A, Tuesday')
    assert (bob.submission, carol.submission) == ('S-0002', '1003')
    people = r.by_submission()
    for name in ('alice', 'S-0001', '1001'):   # any id names the person
        assert people[name] is alice
    assert '9999' not in people                # the test student


def test_a_gradescope_roster_export_as_it_comes():
    r = roster.parse_csv(GRADESCOPE, 'roster.csv')
    assert [p.student for p in r.people] == ['Liddell, Alice', 'Dent, Dave']   # no staff
    alice, dave = r.people
    assert (alice.submission, alice.email) == ('S-0001', 'alice@uni.example')
    assert dave.submission == 'dave@uni.example' and dave.keys == ('dave@uni.example', 'dave')
    assert r.by_submission()['dave'] is dave


def test_columns_an_instructor_adds_to_an_export_are_read():
    """Canvas's export has no LTI user ids or hand-in times: an instructor adds the columns."""
    text = CANVAS.replace('Section,', 'Section,LTI User ID,Submitted At,', 1)
    lines = text.split('\r\n')
    lines[1] = lines[1].replace(',,,,,', ',,,,,,,', 1)
    lines[2] = lines[2].replace('Tuesday",', 'Tuesday",lti-alice,2026-05-02T10:30:00+00:00,')
    lines[3] = lines[3].replace('Section B,', 'Section B,,,')
    lines[4] = lines[4].replace('Section B,', 'Section B,lti-carol,,')
    lines[5] = lines[5].replace('Section A,', 'Section A,,,')
    r = roster.parse_csv('\r\n'.join(lines), 'grades.csv')
    alice, bob, carol = r.people
    assert (alice.lti_user_id, alice.submitted_at) == ('lti-alice', '2026-05-02T10:30:00+00:00')
    assert (bob.lti_user_id, carol.lti_user_id) == ('', 'lti-carol')
    assert r.has_lti_ids and r.by_submission()['lti-carol'] is carol
    plain = roster.parse_csv(CANVAS, 'grades.csv')
    assert not plain.has_lti_ids


def test_a_roster_with_aliases_survives_its_json_round_trip(tmp_path):
    r = roster.parse_csv(CANVAS, 'grades.csv')
    roster.write_json(tmp_path / 'roster.json', r)
    again = roster.load_json(tmp_path / 'roster.json')
    assert again == r


@pytest.mark.parametrize('text, words', [
    ('', 'is empty'),
    ('Name,Mail\nAlice,a@x\n', 'neither a Canvas gradebook export'),
    ('Student,ID,SIS User ID,SIS Login ID,Section\n    Points Possible,,,,\n', 'lists no students'),
    ('Student,ID,SIS User ID,SIS Login ID,Section\n"A, A",1,,x,\n"B, B",2,,x,\n',
     "'x' names the people on lines 2 and 3"),
    ('First Name,Last Name,SID,Email,Role\nA,A,1,a@x,Student\nB,B,1,b@x,Student\n',
     "'1' names the people on lines 2 and 3"),
])
def test_what_cannot_be_used_is_said(text, words):
    with pytest.raises(roster.RosterError, match=words):
        roster.parse_csv(text, 'r.csv')


def test_a_roster_in_another_encoding_is_refused_with_the_fix(tmp_path):
    (tmp_path / 'r.csv').write_bytes('Student,ID,SIS User ID,SIS Login ID,Section\n'
                                     '"M\u00fcller, Jan",1,,,\n'.encode('latin-1'))
    with pytest.raises(roster.RosterError, match='CSV UTF-8'):
        roster.read_csv(tmp_path / 'r.csv')


def test_a_person_is_found_by_any_of_their_ids():
    # a Gradescope roster names Alice by SID first; a batch whose folders are named by email,
    # by the email's local part or by a Canvas id still finds her, once (issue 23)
    text = ('submission,student,id,sis_user_id,email,lti_user_id\n'
            'alice,"Liddell, Alice",1001,S-1,alice@uni.example,lti-a\n'
            'bob,"Builder, Bob",1002,S-2,bob@uni.example,\n'
            'carol,"Cooper, Carol",1003,S-2,carol@uni.example,\n')
    r = roster.parse_csv(text)
    alice, bob, carol = r.people
    by = r.by_submission()
    for key in ('alice', '1001', 'S-1', 'alice@uni.example', 'lti-a'):
        assert by[key] is alice
    assert 'S-2' not in by          # two people share it: it names neither
    found, without, lone = r.match(['alice@uni.example', '1002', 'nobody'])
    assert found == {'alice@uni.example': alice, '1002': bob}
    assert without == [carol] and lone == ['nobody']
    gs = roster.parse_csv(GRADESCOPE)
    found, without, _ = gs.match(['alice', 'dave'])
    assert set(found) == {'alice', 'dave'} and without == []


def test_a_gradescope_grades_export_gives_submission_times_and_export_folders():
    text = ('First Name,Last Name,SID,Email,Sections,Total Score,Max Points,Status,Submission ID,'
            'Submission Time,Lateness (H:M:S),View Count,Submission Count\n'
            'Alice,Liddell,S-1,alice@uni.example,,30.0,30.0,Graded,128746829,'
            '2026-05-02 10:30:00 -0700,11:30:00,1,1\n'
            'Dave,Dent,S-4,dave@uni.example,,,30.0,Missing,,,,0,0\n')
    r = roster.parse_csv(text)
    alice, dave = r.people
    assert alice.submitted_at == '2026-05-02 10:30:00 -0700' and not dave.submitted_at
    assert r.by_submission()['submission_128746829'] is alice
