"""The strong sandbox: a worker inside bubblewrap, the sandbox Flatpak uses (trusted side).

``dezero_grader.isolation.worker_process.Worker`` asks ``resolve(mode)`` which sandbox to use and, for bubblewrap, puts
``command(...)`` in front of the worker's command line. The worker then runs in

* a mount namespace of its own that holds only what it needs, read-only: the system's programs
  and libraries (/usr, /lib, /bin), the Python runtime and its packages, and the grader's
  `dezero_grader/` package -- never the reference implementation, its cache of answers or any other
  copy of the project, nor the course secret's file (a folder it may not see that lies inside one
  it needs is covered by an empty one, a file by an empty file); read-write: the submission's scratch copy, a private /tmp and /dev/shm; a minimal
  /dev; no host Unix socket (no /run, no home, nothing of /tmp);
* its own PID namespace, so that when its first process ends every process it started ends
  too (the kernel kills the whole namespace), whatever session or user namespace they made;
* its own user namespace without capabilities, its own network namespace (loopback only: no
  network), IPC and UTS namespaces, a new session (no terminal to write to), and
  ``--die-with-parent``: a grader stopped by any signal takes its workers with it.

The resource limits stay rlimits (set before bubblewrap starts, inherited by everything in the
sandbox) and the worker still confines itself with Landlock and its audit hook inside: a second
line. Where bubblewrap is missing or cannot run (macOS, a container that forbids namespaces)
`auto` falls back to the basic sandbox (namespaces where the kernel allows, Landlock, rlimits,
the process sweep); `bubblewrap` refuses to start without it; `basic` is the explicit opt-out.
"""
from __future__ import annotations

import functools
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

from dezero_grader.errors import GraderError

MODES = ('auto', 'bubblewrap', 'basic')
ENV = 'DEZERO_GRADER_SANDBOX'   # the default of --sandbox, for a machine where it is always the same
INSTALL_HINT = 'install bubblewrap (Debian and Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)'
_SYSTEM = ('/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32')
_ETC = ('/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d', '/etc/localtime',
        '/etc/alternatives')
_CONFINE = ['--unshare-all', '--unshare-user', '--cap-drop', 'ALL', '--die-with-parent',
            '--new-session']


@functools.lru_cache(maxsize=None)
def unavailable() -> str | None:
    """Why bubblewrap cannot confine a worker on this machine, or None when it can."""
    if not sys.platform.startswith('linux'):
        return 'bubblewrap runs on Linux only'
    exe = shutil.which('bwrap')
    if exe is None:
        return 'bubblewrap is not installed; ' + INSTALL_HINT
    try:
        probe = subprocess.run([exe] + _CONFINE + ['--ro-bind', '/', '/', '--proc', '/proc',
                                                   '--dev', '/dev', 'true'],
                               capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 'bubblewrap could not be started: {}'.format(exc)
    if probe.returncode != 0:
        return 'bubblewrap cannot make its namespaces here: {}'.format(
            probe.stderr.decode('utf-8', 'replace').strip()[:300])
    return None


def default_mode() -> str:
    """What --sandbox is when it is not given: $DEZERO_GRADER_SANDBOX, else auto."""
    mode = os.environ.get(ENV) or 'auto'
    if mode not in MODES:
        raise GraderError('{}={!r}: expected one of {}'.format(ENV, mode, ', '.join(MODES)))
    return mode


def resolve(mode: str) -> str:
    """The sandbox a worker gets for a requested mode: 'bubblewrap' or 'basic'."""
    if mode not in MODES:
        raise GraderError('unknown sandbox {!r} (known: {})'.format(mode, ', '.join(MODES)))
    if mode == 'basic':
        return 'basic'
    why = unavailable()
    if why is None:
        return 'bubblewrap'
    if mode == 'bubblewrap':
        raise GraderError('the bubblewrap sandbox was asked for, but {}'.format(why))
    return 'basic'


def require_strong(mode: str, what: str) -> str:
    """For work where the code of many learners meets (a batch, the Gradescope autograder): the
    strong sandbox, or an explicit opt-out. Returns the mode to grade with."""
    if mode == 'basic':
        return mode
    why = unavailable()
    if why is not None:
        raise GraderError('{} grades many learners\' code on one machine, so it needs the bubblewrap '
                          'sandbox, and {}. To grade anyway with the basic sandbox (namespaces, '
                          'Landlock, rlimits), pass --sandbox basic.'.format(what, why))
    return 'bubblewrap'


def _runtime_folders() -> list:
    """Read-only: the Python runtime (the interpreter's prefixes, where the executable really
    lives) and the folders its packages come from."""
    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
               os.path.dirname(os.path.realpath(sys.executable))}
    try:
        folders.update(site.getsitepackages())
    except AttributeError:
        pass
    if site.ENABLE_USER_SITE and site.USER_SITE and site.USER_SITE in sys.path:
        folders.add(site.USER_SITE)
    for p in sys.path:
        if p and os.path.isdir(p) and ('site-packages' in p or 'dist-packages' in p):
            folders.add(p)
    return sorted({os.path.realpath(f) for f in folders if f and os.path.isdir(f)})


def _inside(path: str, folders) -> bool:
    return any(path == f or path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)


def command(*, cwd: Path, grader_dir: Path, sys_path, hidden, network: bool) -> list:
    """The bubblewrap command line that runs what follows it confined to the worker's view."""
    exe = shutil.which('bwrap')
    if exe is None:
        raise GraderError('bubblewrap disappeared: ' + INSTALL_HINT)
    argv = [exe] + _CONFINE
    if network:
        argv.append('--share-net')
    # the private mounts first: what is bound afterwards may lie under them (a scratch copy or
    # a grader in /tmp)
    argv += ['--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--tmpfs', '/dev/shm']
    for folder in _SYSTEM:
        if os.path.islink(folder):
            argv += ['--symlink', os.readlink(folder), folder]
        elif os.path.isdir(folder):
            argv += ['--ro-bind', folder, folder]
    for path in _ETC:
        argv += ['--ro-bind-try', path, path]
    readable = _runtime_folders()
    for folder in readable:
        if not _inside(folder, _SYSTEM):
            argv += ['--ro-bind', folder, folder]
    grader_dir = os.path.realpath(grader_dir)
    argv += ['--ro-bind', grader_dir, grader_dir]
    readable.append(grader_dir)
    cwd = os.path.realpath(cwd)
    for folder in map(os.path.realpath, map(str, sys_path)):
        if os.path.isdir(folder) and not _inside(folder, [cwd]):
            argv += ['--ro-bind', folder, folder]
            readable.append(folder)
    for gpu in sorted(Path('/dev').glob('nvidia*')):
        argv += ['--dev-bind-try', str(gpu), str(gpu)]
    argv += ['--bind', cwd, cwd]
    # what the worker must not read, where it lies inside a folder it needs, is covered up: a
    # folder by an empty one, a file (the course secret inside a virtual environment, say) by an
    # empty file
    for path in map(os.path.realpath, map(str, hidden)):
        if not _inside(path, readable + [cwd]):
            continue
        if os.path.isdir(path):
            argv += ['--tmpfs', path, '--remount-ro', path]
        elif os.path.lexists(path):
            argv += ['--ro-bind', os.devnull, path]
    argv += ['--chdir', cwd, '--']
    return argv
