"""The one progress display: check's probe count, batch's and history's bar or log lines."""
from dezero_grader.present import progress


class _Stream:
    def __init__(self, tty):
        self.tty, self.parts = tty, []

    def isatty(self):
        return self.tty

    def write(self, text):
        self.parts.append(text)

    def flush(self):
        pass

    @property
    def text(self):
        return ''.join(self.parts)


def test_checks_probe_count_is_one_redrawn_line_wiped_before_the_report():
    terminal = _Stream(tty=True)
    p = progress.of_probes('step 9', terminal)
    p.start(3)
    for _ in range(3):
        p.advance()
    p.finish()
    drawn = terminal.text.split('\r')
    assert drawn[-2].startswith('step 9 [') and '3/3 probes' in drawn[-2]
    assert terminal.text.endswith('\r\033[K') and '\n' not in terminal.text


def test_probes_write_nothing_into_a_log_but_finished_items_do():
    log = _Stream(tty=False)
    p = progress.of_probes('step 9', log)
    p.start(2)
    p.advance()
    p.finish()
    assert log.text == ''
    batch = progress.Progress(2, 0, log)
    batch.update('alice', 'accept 3/3')
    batch.note('a line of its own')
    batch.update('bob\x1b[31m', 'reject 1/3')
    lines = log.text.splitlines()
    assert lines[0].startswith('[1/2] alice: accept 3/3  (ETA ')
    assert lines[1] == 'a line of its own'
    assert lines[2].startswith('[2/2] bob') and '\x1b' not in lines[2]


def test_a_note_under_a_bar_starts_a_line_of_its_own():
    terminal = _Stream(tty=True)
    p = progress.Progress(2, 0, terminal, 'step 52 ')
    p.update('alice', 'accept 3/3')
    p.note('grading the rest')
    assert terminal.text.endswith('\ngrading the rest\n')
    p.finish()   # nothing drawn since the note: nothing to close
    assert terminal.text.endswith('\ngrading the rest\n')


def test_clock():
    assert progress.clock(None) == '--:--'
    assert progress.clock(65) == '1:05'
    assert progress.clock(3725) == '1:02:05'


def test_while_nothing_finishes_the_display_says_what_is_happening():
    # check's count used to stand at 0/109 while the worker started and the reference's
    # answers were computed (issue 23): the phase is shown beside it until a probe is done
    terminal = _Stream(tty=True)
    p = progress.of_probes('step 52', terminal)
    p.start(3)
    p.phase('starting the sandbox and importing your code')
    assert 'starting the sandbox' in terminal.text.split('\r')[-1]
    p.advance()
    assert '1/3 probes' in terminal.text.split('\r')[-1]
    assert 'starting the sandbox' not in terminal.text.split('\r')[-1]
    p.phase("waiting for the reference's answers")
    assert "waiting for the reference's answers" in terminal.text.split('\r')[-1]
    p.finish()
    assert terminal.text.endswith('\r\033[K')
    log = _Stream(tty=False)
    quiet = progress.of_probes('step 52', log)
    quiet.start(3)
    quiet.phase('starting')
    quiet.finish()
    assert log.text == ''     # a log gets no redrawn line
