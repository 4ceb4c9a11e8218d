"""The one progress display of the grader, on stderr: `check` counts its probes, `batch` and
`history` their gradings.

On a terminal it is one redrawn bar (counts, elapsed time, ETA); in a log (CI) each finished
item with an outcome is one line, and items without one (probes) write nothing. The ETA is what
is left times this run's pace so far. A transient display (check's, whose report follows on
stdout) is wiped when it finishes; a batch's last bar stays.
"""
from __future__ import annotations

import collections
import sys
import threading
import time

from dezero_grader.present import terminal

_WIDTH = 24


def clock(seconds) -> str:
    """Seconds as m:ss (h:mm:ss from an hour); '--:--' when not known yet."""
    if seconds is None:
        return '--:--'
    seconds = int(round(seconds))
    return '{}:{:02d}'.format(seconds // 60, seconds % 60) if seconds < 3600 else \
        '{}:{:02d}:{:02d}'.format(seconds // 3600, seconds // 60 % 60, seconds % 60)


class Progress:
    """Counts of `total` items, `already` of them done before this run started."""

    def __init__(self, total: int = 0, already: int = 0, stream=sys.stderr, label: str = '', *,
                 unit: str = '', transient: bool = False):
        self.total, self.done, self.already = total, already, already
        self.stream, self.label, self.unit, self.transient = stream, label, unit, transient
        self.tty = hasattr(stream, 'isatty') and stream.isatty()
        self.started = time.monotonic()
        self.outcomes = collections.Counter()
        self._drawn = False
        self.activity = ''          # what is happening while the count stands still
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = None

    def start(self, total: int) -> None:
        """(Re)start counting `total` items from none."""
        self.total, self.done, self.already = total, 0, 0
        self.started = time.monotonic()
        self._draw()

    def eta(self):
        ran = self.done - self.already
        if ran <= 0:
            return None
        return (time.monotonic() - self.started) / ran * (self.total - self.done)

    def advance(self) -> None:
        """One more item done, with nothing to say about it (a probe)."""
        self.done += 1
        self.activity = ''
        self._draw()

    def phase(self, text: str) -> None:
        """Say what is happening while no item finishes (a worker starting, the reference's
        answers computed): shown beside the count, the elapsed time kept running, until the next
        item is done."""
        self.activity = text
        self._draw()
        if self.tty and self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, daemon=True, name='progress')
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            if self.activity:
                self._draw()

    def update(self, item_id: str, outcome: str) -> None:
        """One more item done: `outcome` starts with the word it is counted under."""
        self.done += 1
        self.outcomes[outcome.split(' ')[0]] += 1
        if self.tty:
            self._draw()
            return
        self.stream.write('[{:>{w}}/{}] {}: {}  (ETA {})\n'.format(
            self.done, self.total, terminal.printable(item_id, lines=False),
            terminal.printable(outcome, lines=False), clock(self.eta()),
            w=len(str(self.total))))
        self.stream.flush()

    def _draw(self) -> None:
        if not (self.tty and self.total):
            return
        with self._lock:
            self._draw_locked()

    def _draw_locked(self) -> None:
        filled = int(_WIDTH * self.done / self.total)
        counts = ' '.join('{} {}'.format(k, v) for k, v in sorted(self.outcomes.items()))
        what = ' '.join(part for part in ('{}/{}'.format(self.done, self.total), self.unit, counts,
                                          self.activity and '· ' + self.activity) if part)
        line = '\r{}[{}{}] {}  {} elapsed, ETA {}'.format(
            self.label, '#' * filled, '.' * (_WIDTH - filled), what,
            clock(time.monotonic() - self.started), clock(self.eta()))
        self.stream.write(line[:240] + '\033[K')
        self.stream.flush()
        self._drawn = True

    def note(self, text: str) -> None:
        """A line of its own, below the bar (which is redrawn by the next item)."""
        if self._drawn:
            self.stream.write('\n')
            self._drawn = False
        self.stream.write(text.rstrip('\n') + '\n')
        self.stream.flush()

    def finish(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        if self._drawn:
            self.stream.write('\r\033[K' if self.transient else '\n')
            self.stream.flush()
            self._drawn = False


def of_probes(label: str, stream=sys.stderr) -> Progress:
    """`check`'s display: its probes counted on a terminal, wiped before the report."""
    return Progress(0, 0, stream, label + ' ', unit='probes', transient=True)
