"""The worker: the process that runs learner code, on the far side of the sandbox boundary.

Started by ``dezero_grader.isolation.worker_process.Worker`` as ``__main__`` (a ``-c`` bootstrap runs it with
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

Built-in ops: ``ping`` (answers ``{"reply": "pong", "pid": N}``), ``exit``, and ``batch``
(``{"op": "batch", "requests": [text, ...]}``, each text a request's JSON): one answer frame per
request, in order, each written as soon as it is made, so that several probes cost one request. The first frame the
worker sends, unasked, is ``{"ok": true, "result": {"ready": true, "pid", "limits", "landlock"}}``
(or the error importing the handler). ``os._exit`` in learner code ends the process; the parent
reports it. The learner's import folders (``DEZERO_GRADER_PATH``) come last on ``sys.path`` while
the handler is imported, first afterwards.

Its protections (Landlock, the audit hook, the subreaper) are in ``dezero_grader.sandboxed.guard``.
This module runs as ``__main__``, where learner code can reach it too: the tripwire of
``dezero_grader.sandboxed.probes.handlers`` fingerprints it (its functions, its dispatch table
``_HANDLERS``, its JSON encoder and decoder) like the ``dezero_grader.*`` modules.
"""

# Private references first: learner code imported later may monkeypatch these modules.
import os
import sys

_os_read = os.read
_os_write = os.write
_os_exit = os._exit
_getpid = os.getpid

import faulthandler  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402

from dezero_grader.sandboxed import capture, guard  # noqa: E402  (standard library only)

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
# op -> handler, filled once at start; a module global (not a local of `main`) so that the
# tripwire (`dezero_grader.sandboxed.probes.handlers`) fingerprints it with the rest of this module
_HANDLERS: dict = {}


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
    """An exception of the code as an error answer (``dezero_grader.sandboxed.capture.describe``),
    without this file's dispatch and guard frames."""
    return {"ok": False, "error": capture.describe(exc, top=_CWD, skip=(_THIS_FILE,))}


def _internal(message: str) -> dict:
    return {"ok": False, "error": {"type": "GraderError", "message": message, "traceback": [],
                                   "where": None, "internal": True}}


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


def _batch(payload: bytes) -> list | None:
    """The requests of a ``batch`` frame (``{"op": "batch", "requests": [text, ...]}``, each text
    one request's JSON), as the frames they stand for; None for any other frame. A batch inside a
    batch is an unknown op, answered as such."""
    if not payload.startswith(b'{"op":"batch"'):
        return None
    try:
        parts = _decode_json(payload.decode("utf-8")).get("requests")
    except (UnicodeDecodeError, ValueError, AttributeError):
        return None
    if not isinstance(parts, list):
        return None
    frames = []
    for part in parts:      # a loop, not all(): the builtins are the learner's to patch
        if not isinstance(part, str):
            return None
        frames.append(part.encode("utf-8"))
    return frames


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
    guard.become_subreaper()
    learner_path = [p for p in os.environ.pop(PATH_ENV, "").split(os.pathsep) if p]
    hidden = [p for p in os.environ.pop(HIDDEN_ENV, "").split(os.pathsep) if p]
    roots = [_CWD] + ([os.environ["TMPDIR"]] if os.environ.get("TMPDIR") else [])
    landlock = guard.confine(roots)
    guard.install_audit_hook(roots, hidden)
    # While the handler and what it needs (NumPy, the grader) are imported, the learner's folders
    # come last: a module of theirs can shadow nothing; then they come first, for their imports.
    sys.path.extend(learner_path)
    try:
        _HANDLERS.update(importlib.import_module(handler_name).HANDLERS)
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
        parts = _batch(payload)
        if parts is not None:
            for part in parts:   # one answer frame per request, each sent as soon as it is made
                _send(_handle(_HANDLERS, part) or _internal("a batch cannot hold 'exit'"))
            continue
        answer = _handle(_HANDLERS, payload)
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
