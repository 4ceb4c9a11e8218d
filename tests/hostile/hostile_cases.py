"""Generators of hostile and broken submissions for the corpus in ``test_hostile.py``.

Every submission is written by code, into a folder the test gives: a copy of the reference
DeZero (optionally with one fault injected through ``grader.faults.inject``) plus a few lines of
misbehaviour appended to its ``dezero/__init__.py``, or a broken package, or a crafted zip. No
binary blob is committed. Processes a submission starts carry a unique marker in their command
line, so the tests can prove that none of them outlives grading.
"""
import os
import random
import shutil
import stat
import textwrap
import time
import zipfile
from pathlib import Path

import reference
from grader import assignments, faults, load

STEP = 52
LAYER_FAULT = 'gpu-layer-shallow'        # caught by step52/device.layer: reject
MATMUL_FAULT = 'matmul-grad-transpose'   # caught by step41/matmul (regression): rollback


# -- bases ----------------------------------------------------------------------------------------

def reference_copy(dest: Path) -> Path:
    """A copy of the reference package: a correct submission."""
    dest.mkdir(parents=True)
    shutil.copytree(reference.ROOT / 'dezero', dest / 'dezero',
                    ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
    return dest


def faulty_copy(dest: Path, fault_id: str) -> Path:
    """The reference with one real bug from the fault catalogue."""
    fault = {f.id: f for f in assignments.fault_catalogue(assignments.load(STEP))}[fault_id]
    base = reference_copy(dest.parent / ('.base-' + dest.name))
    out = faults.inject(base, dest, fault, load.find_entry(base, STEP))
    shutil.rmtree(base)
    return out


def append_to_init(sub: Path, code: str) -> Path:
    init = sub / 'dezero' / '__init__.py'
    init.write_text(init.read_text(encoding='utf-8') + '\n\n# --- hostile addition ---\n'
                    + textwrap.dedent(code), encoding='utf-8')
    return sub


def in_backward(sub: Path, body: str) -> Path:
    """Make every ``Variable.backward`` run ``body`` (misbehaviour inside a check)."""
    return append_to_init(sub, (
        'import dezero as _dz\n\n\n'
        'def _hostile_backward(self, *args, **kwargs):\n'
        '{}\n\n'
        '_dz.Variable.backward = _hostile_backward\n').format(
            textwrap.indent(textwrap.dedent(body).strip('\n'), '    ')))


# -- processes that try to outlive the worker ------------------------------------------------------

def marker() -> str:
    return 'dezero-hostile-{}-{}'.format(os.getpid(), time.monotonic_ns())


def survivors(mark: str, wait_s: float = 60.0) -> list:
    """Live (not zombie) processes whose command line holds ``mark``, once there are none or
    after ``wait_s`` (a limit that only a process that outlives its worker reaches; a loaded
    machine can take a while to deliver the kill)."""
    end = time.monotonic() + wait_s
    while True:
        found = []
        for name in os.listdir('/proc'):
            if not name.isdigit():
                continue
            try:
                with open('/proc/{}/cmdline'.format(name), 'rb') as f:
                    cmdline = f.read()
                with open('/proc/{}/stat'.format(name), 'rb') as f:
                    state = f.read().rsplit(b')', 1)[1].split()[0]
            except OSError:
                continue
            if mark.encode() in cmdline and state not in (b'Z', b'X'):
                found.append(int(name))
        if not found or time.monotonic() > end:
            return found
        time.sleep(0.05)


SPAWN_LINGERING = '''
import os as _os, subprocess as _sp, sys as _sys
_SLEEPER = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
_DAEMON = (
    "import os, signal, sys, time\\n"
    "if os.fork(): os._exit(0)\\n"
    "os.setsid()\\n"
    "if os.fork(): os._exit(0)\\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
    "time.sleep(600)\\n")
# a child in its own session that ignores SIGTERM, and a double-forked daemon
_sp.Popen([_sys.executable, "-c", _SLEEPER, {mark!r}], start_new_session=True)
_sp.Popen([_sys.executable, "-c", _DAEMON, {mark!r}]).wait()
'''


# -- zips -----------------------------------------------------------------------------------------

def zip_with(path: Path, entries) -> Path:
    """``entries``: (name, bytes) pairs, or (name, bytes, unix mode) for links and special files."""
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
        for entry in entries:
            name, data = entry[0], entry[1]
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if len(entry) > 2:
                info.external_attr = entry[2] << 16
            z.writestr(info, data)
    return path


def zip_bomb(path: Path, megabytes: int = 20) -> Path:
    """One entry of zeros: megabytes of data in a few kilobytes (a ratio near 1000)."""
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
        z.writestr('dezero/__init__.py', 'x = 1\n')
        with z.open('dezero/data.bin', 'w', force_zip64=True) as f:
            block = b'\0' * 2**20
            for _ in range(megabytes):
                f.write(block)
    return path


def symlink_mode() -> int:
    return stat.S_IFLNK | 0o777


def garbage(n: int = 4096, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(n)
