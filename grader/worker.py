"""The worker: the process that runs learner code, on the far side of the sandbox boundary.

Started by ``grader.sandbox.Worker`` as ``python -m grader.worker --handler MODULE --max-frame N``
in the submission's scratch folder. It reads length-prefixed JSON requests (4-byte big-endian
length, UTF-8 JSON) from one inherited pipe and writes answers on another (their numbers arrive
in ``DEZERO_GRADER_FDS``), dispatches ``msg["op"]`` to ``MODULE.HANDLERS[op](msg)`` and answers

* ``{"ok": true, "result": ...}``, or
* ``{"ok": false, "error": {"type", "message", "traceback", "where", ...}}`` when the request
  raised -- including ``SystemExit`` (a learner's ``sys.exit``) and ``KeyboardInterrupt``.
  ``traceback`` holds at most 20 ``"file:line in function"`` strings, innermost last, with paths
  relative to the scratch folder; ``where`` is the innermost one outside the grader package.
  Errors that are the grader's fault (unknown op, an answer that is not JSON-able or too large)
  carry ``"internal": true``.

Built-in ops: ``ping`` (answers ``{"reply": "pong", "pid": N}``) and ``exit``. The first frame the
worker sends, unasked, is ``{"ok": true, "result": {"ready": true, "pid", "limits"}}`` (or the error
importing the handler). ``os._exit`` in learner code ends the process; the parent reports it.

Protections inside the process (accidents, not a determined attacker -- the code shares the
process): private references to ``os.read``/``os.write`` and to a private JSON encoder and
decoder, so learner code that monkeypatches ``json`` or ``os`` cannot change the framing; an
audit hook that refuses writes, deletions and renames outside the scratch folder (and its
``TMPDIR``) and network connections, raising ``PermissionError``; ``faulthandler`` on crashes and
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
import traceback  # noqa: E402

# ASCII output: lone surrogates in learner strings (odd file names) stay valid JSON as escapes.
_encode_json = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode
_decode_json = json.JSONDecoder().decode
_extract_tb = traceback.extract_tb

FDS_ENV = "DEZERO_GRADER_FDS"
EXIT_CHANNEL_LOST = 86  # the answer pipe is gone (closed by learner code, or the parent died)
EXIT_BAD_START = 87     # the handler module could not be imported
MAX_TRACEBACK = 20
MAX_TEXT = 4000

_THIS_FILE = os.path.abspath(__file__)
_GRADER_DIR = os.path.dirname(_THIS_FILE)
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
        payload = _encode_json(_internal(f"the answer is {len(payload)} bytes, over the frame limit of "
                                         f"{_MAX_FRAME} bytes")).encode("utf-8")
    _send_bytes(payload)


# -- error answers --------------------------------------------------------------------------------

def _text(value: object) -> str:
    try:
        text = str(value)
    except BaseException:  # a learner's __str__ may itself raise
        text = f"<unprintable {type(value).__name__}>"
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + " ..."


def _rel(filename: str) -> str:
    if filename.startswith(_CWD + os.sep):
        return filename[len(_CWD) + 1:]
    return filename


def _ours(filename: str) -> bool:
    return filename.startswith(_GRADER_DIR + os.sep) or filename.startswith("<frozen")


def _error(exc: BaseException) -> dict:
    frames = [f for f in _extract_tb(exc.__traceback__) if f.filename != _THIS_FILE]  # dispatch and guard frames
    lines = [f"{_rel(f.filename)}:{f.lineno} in {f.name}" for f in frames]
    where = next((line for f, line in zip(reversed(frames), reversed(lines)) if not _ours(f.filename)), None)
    if isinstance(exc, SyntaxError) and exc.filename:
        where = f"{_rel(exc.filename)}:{exc.lineno} in <module>"
    if isinstance(exc, SystemExit):
        message = f"the code called sys.exit({exc.code!r})"
    else:
        message = _text(exc)
    error = {"type": type(exc).__name__, "message": message, "traceback": lines[-MAX_TRACEBACK:], "where": where}
    if isinstance(exc, OSError) and isinstance(exc.errno, int):
        error["errno"] = exc.errno
    return {"ok": False, "error": error}


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


def _install_guard(roots: list[str]) -> None:
    import socket
    local = {int(getattr(socket, "AF_UNIX", -1))}
    realpath, join, getcwd, fsdecode = os.path.realpath, os.path.join, os.getcwd, os.fsdecode
    readlink, sep, devnull = os.readlink, os.sep, os.devnull
    roots = [realpath(root) for root in roots]

    def inside(path, dir_fd) -> bool:
        if path is None or isinstance(path, int):
            return True  # an already open descriptor
        try:
            base = readlink(f"/proc/self/fd/{dir_fd}") if isinstance(dir_fd, int) and dir_fd >= 0 else getcwd()
            full = realpath(join(base, fsdecode(path)))
        except (OSError, TypeError, ValueError):
            return False
        return full == devnull or any(full == r or full.startswith(r + sep) for r in roots)

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
        elif event in _PATH_EVENTS:
            for path_at, fd_at in _PATH_EVENTS[event]:
                dir_fd = args[fd_at] if fd_at is not None and fd_at < len(args) else None
                if path_at < len(args) and not inside(args[path_at], dir_fd):
                    refuse(f"change files ({event})", args[path_at])
        elif event in _NET_EVENTS:
            family = getattr(args[0], "family", None)
            if family is not None and int(family) not in local:
                raise PermissionError(errno.EACCES, f"the grader runs submissions without network access "
                                      f"(refused {event} to {_text(args[1])})")

    sys.addaudithook(hook)


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
    try:
        return {"ok": True, "result": fn(msg)}
    except BaseException as exc:  # SystemExit and KeyboardInterrupt are answers too
        return _error(exc)


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
    _install_guard([_CWD] + ([os.environ["TMPDIR"]] if os.environ.get("TMPDIR") else []))
    try:
        handlers = dict(importlib.import_module(handler_name).HANDLERS)
    except BaseException as exc:
        answer = _error(exc)
        answer["error"]["internal"] = True
        _send(answer)
        _os_exit(EXIT_BAD_START)
    _send({"ok": True, "result": {"ready": True, "pid": _getpid(), "limits": _limits()}})
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
