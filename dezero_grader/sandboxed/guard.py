"""The worker's protections: what confines learner code, set up before any of it runs.

Protections by the kernel, for the worker and everything it starts (Linux 5.13+, where Landlock
is enabled): creating, changing or deleting files only under the scratch folder (and writing to
devices under /dev, and in /dev/shm); from Linux 6.7 no TCP connection; from Linux 6.12 no signal
to a process outside the worker's own tree.

Protections inside the process (accidents, not a determined attacker -- the code shares the
process): the worker keeps private references to ``os.read``/``os.write`` and to a private JSON encoder and
decoder, so learner code that monkeypatches ``json`` or ``os`` cannot change the framing; an
audit hook that refuses writes, deletions and renames outside the scratch folder (and its
``TMPDIR``), network connections, reading the folders in ``DEZERO_GRADER_HIDDEN`` (the
reference implementation and its cached answers), signals to processes the worker did not start
and changes of resource limits, raising ``PermissionError``; ``faulthandler`` on crashes and
on SIGUSR1 (the parent sends it before killing a request that ran out of time, so the output tail
shows where the code was); the worker makes itself a child subreaper on Linux so that processes
the learner's code daemonises stay its descendants, which the parent can find and kill.
"""

# Private references first: learner code imported later may monkeypatch these modules.
import os
import sys

_getpid = os.getpid

import errno  # noqa: E402

from dezero_grader.sandboxed import capture  # noqa: E402  (standard library only)

_any = any   # the builtin as it was before learner code ran (which may patch builtins)


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PATH_EVENTS = {  # event -> indexes of (path, dir_fd) pairs among its arguments
    "os.remove": ((0, 1),), "os.rmdir": ((0, 1),), "os.mkdir": ((0, 2),), "os.chmod": ((0, 2),),
    "os.chown": ((0, 3),), "os.utime": ((0, 4),), "os.truncate": ((0, None),),
    "os.rename": ((0, 2), (1, 3)), "os.link": ((0, 2), (1, 3)), "os.symlink": ((1, 2),),
    "shutil.rmtree": ((0, None),), "os.setxattr": ((0, None),), "os.removexattr": ((0, None),),
}
_NET_EVENTS = frozenset({"socket.connect", "socket.sendto", "socket.sendmsg"})
_LIST_EVENTS = frozenset({"os.listdir", "os.scandir"})


def install_audit_hook(roots: list[str], hidden: list[str] = ()) -> None:
    import socket
    local = {int(getattr(socket, "AF_UNIX", -1))}
    realpath, join, getcwd, fsdecode = os.path.realpath, os.path.join, os.getcwd, os.fsdecode
    readlink, sep, devnull = os.readlink, os.sep, os.devnull
    roots = [realpath(root) for root in roots]
    hidden = [realpath(root) for root in hidden]

    def resolve(path, dir_fd):
        base = readlink(f"/proc/self/fd/{dir_fd}") if isinstance(dir_fd, int) and dir_fd >= 0 else getcwd()
        return realpath(join(base, fsdecode(path)))

    def inside(path, dir_fd) -> bool:
        if path is None or isinstance(path, int):
            return True  # an already open descriptor
        try:
            full = resolve(path, dir_fd)
        except (OSError, TypeError, ValueError):
            return False
        return full == devnull or _any(full == r or full.startswith(r + sep) for r in roots)

    me = _getpid()

    def started_here(pid) -> bool:
        """True for this process, a process group it leads, or a process descending from it."""
        if not isinstance(pid, int) or pid <= 0:
            return False  # 0 and -1: the whole group or every process of the user
        if pid == me:
            return True
        seen = 0
        while pid > 1 and seen < 4096:
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    text = f.read().decode("ascii", "replace")
            except OSError:
                return False
            pid = int(text[text.rfind(")") + 2:].split()[1])
            if pid == me:
                return True
            seen += 1
        return False

    def concealed(path) -> bool:
        if not hidden or path is None or isinstance(path, int):
            return False
        try:
            full = resolve(path, None)
        except (OSError, TypeError, ValueError):
            return True
        return _any(full == r or full.startswith(r + sep) for r in hidden)

    def refuse(what: str, path) -> None:
        raise PermissionError(errno.EACCES, f"the grader runs submissions in a scratch folder and refuses to "
                              f"{what} outside it", fsdecode(path) if isinstance(path, (str, bytes)) else str(path))

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = args
            writing = (isinstance(mode, str) and _any(c in mode for c in "wax+")) or \
                      (isinstance(flags, int) and flags & _WRITE_FLAGS)
            if writing and not inside(path, None):
                refuse("write", path)
            if concealed(path):
                raise PermissionError(errno.EACCES, "the grader's own reference implementation and its "
                                      "results are not readable by submissions", fsdecode(path)
                                      if isinstance(path, (str, bytes)) else str(path))
        elif event in _LIST_EVENTS:
            if args and concealed(args[0]):
                raise PermissionError(errno.EACCES, "the grader's own reference implementation and its "
                                      "results are not readable by submissions")
        elif event in _PATH_EVENTS:
            for path_at, fd_at in _PATH_EVENTS[event]:
                dir_fd = args[fd_at] if fd_at is not None and fd_at < len(args) else None
                if path_at < len(args) and not inside(args[path_at], dir_fd):
                    refuse(f"change files ({event})", args[path_at])
        elif event in ("os.kill", "os.killpg"):
            if not started_here(args[0]):
                raise PermissionError(errno.EPERM, f"the grader refuses signals from submissions to processes they "
                                      f"did not start (refused {event}({capture.text(args[0])}, {capture.text(args[1])}))")
        elif event == "resource.setrlimit":
            raise PermissionError(errno.EPERM, "the grader sets the resource limits of submissions; "
                                  "they cannot be changed from inside")
        elif event in _NET_EVENTS:
            family = getattr(args[0], "family", None)
            if family is not None and int(family) not in local:
                raise PermissionError(errno.EACCES, f"the grader runs submissions without network access "
                                      f"(refused {event} to {capture.text(args[1])})")

    sys.addaudithook(hook)


# Landlock (Linux 5.13+): the kernel, not this process, refuses what the rules do not allow, for the
# worker and everything it starts -- a shell or a ctypes call included. Numbers from the kernel's
# uapi (linux/landlock.h); the syscall numbers are the same on every architecture.
_LL_CREATE, _LL_ADD_RULE, _LL_RESTRICT = 444, 445, 446
_LL_WRITE_FILE = 1 << 1
_LL_TREE = sum(1 << bit for bit in (4, 5, 6, 7, 8, 9, 10, 11, 12))  # remove, make dir/file/link/...
_LL_REFER, _LL_TRUNCATE = 1 << 13, 1 << 14                          # ABI 2, ABI 3
_LL_NET_TCP = 0b11                                                  # bind, connect (ABI 4)
_LL_SCOPE_SIGNAL = 1 << 1                                           # ABI 6


def confine(roots: list[str]) -> int:
    """Let this process and its descendants create, change or delete files only under ``roots``
    (and write to devices under /dev), make no TCP connection, and signal no process outside
    their own tree; return the Landlock ABI used, 0 where the kernel has no Landlock."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        syscall = libc.syscall
        syscall.restype = ctypes.c_long
        abi = syscall(_LL_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
        if abi < 1:
            return 0
        handled = _LL_WRITE_FILE | _LL_TREE | (_LL_REFER if abi >= 2 else 0) | (_LL_TRUNCATE if abi >= 3 else 0)

        class Ruleset(ctypes.Structure):
            _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

        class Beneath(ctypes.Structure):
            _pack_ = 1
            _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

        ruleset = Ruleset(handled, _LL_NET_TCP if abi >= 4 else 0, _LL_SCOPE_SIGNAL if abi >= 6 else 0)
        size = 24 if abi >= 6 else 16 if abi >= 4 else 8
        fd = syscall(_LL_CREATE, ctypes.byref(ruleset), ctypes.c_size_t(size), ctypes.c_uint32(0))
        if fd < 0:
            return 0
        try:
            rules = [(root, handled) for root in roots] + [
                ("/dev", _LL_WRITE_FILE | (_LL_TRUNCATE if abi >= 3 else 0)),  # /dev/null, a GPU's files
                ("/dev/shm", handled)]                                          # shared memory
            for path, allowed in rules:
                try:
                    parent = os.open(path, getattr(os, "O_PATH", os.O_RDONLY) | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    rule = Beneath(allowed, parent)
                    syscall(_LL_ADD_RULE, ctypes.c_int(fd), ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0))
                finally:
                    os.close(parent)
            if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS, which Landlock requires
                return 0
            if syscall(_LL_RESTRICT, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
                return 0
        finally:
            os.close(fd)
        return int(abi)
    except (OSError, AttributeError, ValueError, TypeError):
        return 0


def become_subreaper() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass
