"""Escapes that only an existing sandbox stops, tried against bubblewrap: a host Unix socket (a
terminal multiplexer's or a container engine's, which would run commands outside every
restriction), a process that makes its own user namespace and session to outlive grading, files
left in /dev/shm, the host's terminal, and the hidden reference read through a folder's fd.

Each test plants what a real machine has (a listening socket in a folder of the grader's user),
grades a submission that attacks it, and shows that nothing got through and that the submission
still got its scorecard. These run where bubblewrap runs (CI installs it)."""
import os
import socket
import threading

import pytest

import dezero_grader
from dezero_grader.grading import run
from dezero_grader.isolation import bwrap
from dezero_grader.isolation.worker_process import Limits
from dezero_grader.records import schema

import hostile_cases as hc

pytestmark = pytest.mark.skipif(bwrap.unavailable() is not None,
                                reason=bwrap.unavailable() or 'bubblewrap runs here')

HANG_S = 120   # how long a test waits for an event before it calls it a hang
LIMITS = Limits(call_s=5, total_s=30, cpu_s=30, memory_mb=1024, fsize_mb=16, grace_s=0.2,
                sandbox='bubblewrap')
REPO = os.path.dirname(os.path.dirname(os.path.abspath(dezero_grader.__file__)))


def grade(path, only=('step52/api',)):
    doc = run.grade(path, hc.STEP, run.Options(device='sim', seed=7, limits=LIMITS, only=only))
    assert schema.errors('scorecard', doc) == []
    assert doc['environment']['sandbox'] == 'bubblewrap'
    return doc


class _Listener:
    """A Unix socket server of the grader's own user, as a tmux or docker socket would be."""

    def __init__(self, path):
        self.path, self.received = str(path), []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    self.received.append(conn.recv(100))
                except OSError:
                    self.received.append(b'(connected)')

    def close(self):
        """Stop serving, then take what is still waiting in the backlog: a connection the
        submission made is counted whether or not the thread got to it (no waiting for a time
        that a loaded machine may exceed)."""
        self.stop = True
        self.thread.join(HANG_S)
        assert not self.thread.is_alive(), 'the listener did not stop within {} s: a hang (the ' \
            'limit is there only to catch one)'.format(HANG_S)
        self.sock.setblocking(False)
        try:
            while True:
                conn, _ = self.sock.accept()
                conn.close()
                self.received.append(b'(connected)')
        except BlockingIOError:
            pass
        finally:
            self.sock.close()


def test_a_host_unix_socket_cannot_be_reached(tmp_path):
    listener = _Listener(tmp_path / 'server.sock')
    try:
        sub = hc.append_to_init(hc.reference_copy(tmp_path / 'sub'), '''
            import socket as _socket
            try:
                _s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
                _s.connect({path!r})
                _s.sendall(b"run-this-outside")
            except OSError:
                pass
            '''.format(path=listener.path))
        doc = grade(sub)
    finally:
        listener.close()
    assert listener.received == []
    assert doc['verdict'] == 'accept'   # the submission itself is graded as usual


def test_a_process_with_its_own_user_namespace_and_session_does_not_outlive_grading(tmp_path):
    mark = hc.marker()
    sub = hc.append_to_init(hc.reference_copy(tmp_path / 'sub'), '''
        import ctypes as _ct, os as _os, subprocess as _sp, sys as _sys
        _CODE = (
            "import ctypes, os, time\\n"
            "os.setsid()\\n"
            "ctypes.CDLL(None, use_errno=True).unshare(0x10000000)\\n"   # a user namespace
            "time.sleep(600)\\n")
        _sp.Popen([_sys.executable, "-c", _CODE, {mark!r}], start_new_session=True)
        '''.format(mark=mark))
    doc = grade(sub)
    assert doc['verdict'] == 'accept'
    assert hc.survivors(mark) == []


def test_files_left_in_dev_shm_and_tmp_are_gone_with_the_worker(tmp_path):
    name = hc.marker()
    sub = hc.append_to_init(hc.reference_copy(tmp_path / 'sub'), '''
        for _folder in ("/dev/shm", "/tmp"):
            with open(_folder + "/" + {name!r}, "wb") as _f:
                _f.write(b"x" * 4096)
        '''.format(name=name))
    grade(sub)
    assert not os.path.exists('/dev/shm/' + name) and not os.path.exists('/tmp/' + name)


def test_the_terminal_and_host_devices_are_not_there(tmp_path):
    sub = hc.append_to_init(hc.reference_copy(tmp_path / 'sub'), '''
        import os as _os
        _seen = [d for d in _os.listdir("/dev") if d.startswith(("kmsg", "kvm", "loop", "console"))]
        _pts = [p for p in _os.listdir("/dev/pts") if p != "ptmx"]
        if _seen or _pts:
            raise RuntimeError("host devices visible: %s %s" % (_seen, _pts))
        ''')
    assert grade(sub)['verdict'] == 'accept'


def test_the_reference_cannot_be_read_through_a_folder_fd(tmp_path):
    sub = hc.append_to_init(hc.reference_copy(tmp_path / 'sub'), '''
        import os as _os
        try:
            _fd = _os.open({repo!r}, _os.O_RDONLY)
            _text = _os.read(_os.open("reference/dezero/core.py", _os.O_RDONLY, dir_fd=_fd), 200)
        except OSError as _e:
            _text = repr(_e)
        raise RuntimeError("read: " + str(_text))
        '''.format(repo=REPO))
    doc = grade(sub)
    assert doc['verdict'] == 'invalid' and doc['invalid']['code'] == 'import-error'
    assert 'FileNotFoundError' in doc['reason'] and 'class' not in doc['reason']
