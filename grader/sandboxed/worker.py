"""The worker: the process that runs learner code, on the far side of the sandbox boundary.

Started by ``grader.sandbox.Worker`` as ``__main__`` (a ``-c`` bootstrap runs it with
``--handler MODULE --max-frame N``) in the submission's scratch folder. It reads length-prefixed
JSON requests (4-byte big-endian length, UTF-8 JSON) from one inherited pipe and writes answers on
another (their numbers arrive in ``DEZERO_GRADER_FDS``), dispatches ``msg["op"]`` to
``MODULE.HANDLERS[op](msg)`` and answers

* ``{"ok": true, "result": ...}``, or
* ``{"ok": false, "error": {"type", "message", "traceback", "where", ...}}`` when the request
  raised -- including ``SystemExit`` (a learner's ``sys.exit``) and ``KeyboardInterrupt``.
  ``traceback`` holds at most 20 ``"file:line in function"`` strings, innermost last, with paths
  relative to the scratch folder; ``where`` is the innermost one outside the grader package.
  Errors that are the grader's fault (unknown op, an answer that is not JSON-able) carry
  ``"internal": true``; an answer over the frame limit is the code's (``AnswerTooLarge``).

Built-in ops: ``ping`` (answers ``{"reply": "pong", "pid": N}``) and ``exit``. The first frame the
worker sends, unasked, is ``{"ok": true, "result": {"ready": true, "pid", "limits", "landlock"}}``
(or the error importing the handler). ``os._exit`` in learner code ends the process; the parent
reports it. The learner's import folders (``DEZERO_GRADER_PATH``) come last on ``sys.path`` while
the handler is imported, first afterwards.

Protections by the kernel, for the worker and everything it starts (Linux 5.13+, where Landlock
is enabled): creating, changing or deleting files only under the scratch folder (and writing to
devices under /dev, and in /dev/shm); from Linux 6.7 no TCP connection; from Linux 6.12 no signal
to a process outside the worker's own tree.

Protections inside the process (accidents, not a determined attacker -- the code shares the
process): private references to ``os.read``/``os.write`` and to a private JSON encoder and
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

_os_read = os.read
_os_write = os.write
_os_exit = os._exit
_getpid = os.getpid

import errno  # noqa: E402
import faulthandler  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402

from grader.sandboxed import capture  # noqa: E402  (standard library only)

# ASCII output: lone surrogates in learner strings (odd file names) stay valid JSON as escapes.
_encode_json = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode
_decode_json = json.JSONDecoder().decode

FDS_ENV = "DEZERO_GRADER_FDS"
PATH_ENV = "DEZERO_GRADER_PATH"      # the learner's import folders, os.pathsep-separated
HIDDEN_ENV = "DEZERO_GRADER_HIDDEN"  # folders the code may not read (the reference, its cached answers)
EXIT_CHANNEL_LOST = 86  # the answer pipe is gone (closed by learner code, or the parent died)
EXIT_BAD_START = 87     # the handler module could not be imported

_THIS_FILE = os.path.abspath(__file__)
_CWD = os.path.realpath(os.getcwd())
_REQUEST_FD = -1
_ANSWER_FD = -1
_MAX_FRAME = 64 * 1024 * 1024
_OUT_OF_MEMORY = b""
_OWNER_PID = _getpid()


# -- framing --------------------------------------------------------------------------------------

def _read_exact(n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = _os_read(_REQUEST_FD, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _send_bytes(payload: bytes) -> None:
    if _getpid() != _OWNER_PID:
        _os_exit(0)  # a fork of the worker made by learner code must not answer for it
    data = memoryview(len(payload).to_bytes(4, "big") + payload)
    try:
        while data:
            data = data[_os_write(_ANSWER_FD, data):]
    except OSError:
        _os_exit(EXIT_CHANNEL_LOST)


def _send(answer: dict) -> None:
    try:
        payload = _encode_json(answer).encode("ascii")
    except MemoryError:
        _send_bytes(_OUT_OF_MEMORY)
        return
    except (TypeError, ValueError, RecursionError) as exc:
        payload = _encode_json(_internal(f"the handler's answer is not plain JSON data: {_text(exc)}"))
        payload = payload.encode("utf-8")
    if len(payload) + 4 > _MAX_FRAME:
        # what the code computed is too large to send back (a huge array): an error of the code's
        payload = _encode_json({"ok": False, "error": {
            "type": "AnswerTooLarge", "where": None, "traceback": [],
            "message": f"what the code returned is {len(payload) / 2**20:.0f} MiB once encoded, over the "
                       f"{_MAX_FRAME / 2**20:.0f} MiB limit for one answer; does it build arrays far larger "
                       "than its inputs?"}}).encode("utf-8")
    _send_bytes(payload)


# -- error answers --------------------------------------------------------------------------------

_text = capture.text


def _error(exc: BaseException) -> dict:
    """An exception of the code as an error answer (``grader.sandboxed.capture.describe``),
    without this file's dispatch and guard frames."""
    return {"ok": False, "error": capture.describe(exc, top=_CWD, skip=(_THIS_FILE,))}


def _internal(message: str) -> dict:
    return {"ok": False, "error": {"type": "GraderError", "message": message, "traceback": [],
                                   "where": None, "internal": True}}


# -- protections ----------------------------------------------------------------------------------

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PATH_EVENTS = {  # event -> indexes of (path, dir_fd) pairs among its arguments
    "os.remove": ((0, 1),), "os.rmdir": ((0, 1),), "os.mkdir": ((0, 2),), "os.chmod": ((0, 2),),
    "os.chown": ((0, 3),), "os.utime": ((0, 4),), "os.truncate": ((0, None),),
    "os.rename": ((0, 2), (1, 3)), "os.link": ((0, 2), (1, 3)), "os.symlink": ((1, 2),),
    "shutil.rmtree": ((0, None),), "os.setxattr": ((0, None),), "os.removexattr": ((0, None),),
}
_NET_EVENTS = frozenset({"socket.connect", "socket.sendto", "socket.sendmsg"})
_LIST_EVENTS = frozenset({"os.listdir", "os.scandir"})


def _install_guard(roots: list[str], hidden: list[str] = ()) -> None:
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
        return full == devnull or any(full == r or full.startswith(r + sep) for r in roots)

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
        return any(full == r or full.startswith(r + sep) for r in hidden)

    def refuse(what: str, path) -> None:
        raise PermissionError(errno.EACCES, f"the grader runs submissions in a scratch folder and refuses to "
                              f"{what} outside it", fsdecode(path) if isinstance(path, (str, bytes)) else str(path))

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = args
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
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
                                      f"did not start (refused {event}({_text(args[0])}, {_text(args[1])}))")
        elif event == "resource.setrlimit":
            raise PermissionError(errno.EPERM, "the grader sets the resource limits of submissions; "
                                  "they cannot be changed from inside")
        elif event in _NET_EVENTS:
            family = getattr(args[0], "family", None)
            if family is not None and int(family) not in local:
                raise PermissionError(errno.EACCES, f"the grader runs submissions without network access "
                                      f"(refused {event} to {_text(args[1])})")

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


def _confine(roots: list[str]) -> int:
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


def _become_subreaper() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _limits() -> dict:
    try:
        import resource
    except ImportError:
        return {}
    out = {}
    for name in ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NPROC", "RLIMIT_CORE"):
        if hasattr(resource, name):
            out[name[7:].lower()] = list(resource.getrlimit(getattr(resource, name)))
    return out


# -- main loop ------------------------------------------------------------------------------------

def _handle(handlers: dict, payload: bytes) -> dict | None:
    """The answer to one request, or None for ``exit``."""
    try:
        msg = _decode_json(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return _internal(f"the request is not UTF-8 JSON: {_text(exc)}")
    if not isinstance(msg, dict) or not isinstance(msg.get("op"), str):
        return _internal("a request must be a JSON object with a string 'op'")
    op = msg["op"]
    if op == "exit":
        return None
    if op == "ping":
        return {"ok": True, "result": {"reply": "pong", "pid": _getpid()}}
    fn = handlers.get(op)
    if fn is None:
        return _internal(f"unknown op {op!r}; this worker knows ping, exit, {', '.join(sorted(handlers))}")
    call = capture.Call.of(fn, msg)   # SystemExit and KeyboardInterrupt are answers too
    return {"ok": True, "result": call.value} if call.ok else _error(call.exception)


def main(argv: list[str]) -> None:
    global _REQUEST_FD, _ANSWER_FD, _MAX_FRAME, _OUT_OF_MEMORY
    handler_name = argv[argv.index("--handler") + 1]
    _MAX_FRAME = int(argv[argv.index("--max-frame") + 1])
    _REQUEST_FD, _ANSWER_FD = (int(fd) for fd in os.environ.pop(FDS_ENV).split(","))
    os.set_inheritable(_REQUEST_FD, False)  # processes the learner starts must not hold the channel
    os.set_inheritable(_ANSWER_FD, False)
    _OUT_OF_MEMORY = _encode_json({"ok": False, "error": {
        "type": "MemoryError", "message": "out of memory while answering", "traceback": [], "where": None,
    }}).encode("utf-8")
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(line_buffering=True, errors="backslashreplace")
    faulthandler.enable()
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    _become_subreaper()
    learner_path = [p for p in os.environ.pop(PATH_ENV, "").split(os.pathsep) if p]
    hidden = [p for p in os.environ.pop(HIDDEN_ENV, "").split(os.pathsep) if p]
    roots = [_CWD] + ([os.environ["TMPDIR"]] if os.environ.get("TMPDIR") else [])
    landlock = _confine(roots)
    _install_guard(roots, hidden)
    # While the handler and what it needs (NumPy, the grader) are imported, the learner's folders
    # come last: a module of theirs can shadow nothing; then they come first, for their imports.
    sys.path.extend(learner_path)
    try:
        handlers = dict(importlib.import_module(handler_name).HANDLERS)
    except BaseException as exc:
        answer = _error(exc)
        answer["error"]["internal"] = True
        _send(answer)
        _os_exit(EXIT_BAD_START)
    for folder in reversed(learner_path):
        del sys.path[len(sys.path) - 1 - sys.path[::-1].index(folder)]
    sys.path[:0] = learner_path
    os.environ["PYTHONPATH"] = os.pathsep.join(learner_path + [p for p in [os.environ.get("PYTHONPATH")] if p])
    _send({"ok": True, "result": {"ready": True, "pid": _getpid(), "limits": _limits(),
                                  "landlock": landlock}})
    while True:
        if _getpid() != _OWNER_PID:
            _os_exit(0)  # learner code forked and the child fell through into this loop
        header = _read_exact(4)
        if header is None:
            _os_exit(0)  # the grader closed the channel: nothing more to do
        size = int.from_bytes(header, "big")
        if size > _MAX_FRAME:
            _send(_internal(f"request frame of {size} bytes is over the limit of {_MAX_FRAME}"))
            _os_exit(EXIT_CHANNEL_LOST)
        payload = _read_exact(size)
        if payload is None:
            _os_exit(0)
        answer = _handle(handlers, payload)
        if answer is None:
            _send({"ok": True, "result": "bye"})
            break
        _send(answer)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    _os_exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
