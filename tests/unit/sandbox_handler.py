"""A worker handler for the sandbox tests: each op misbehaves the way learner code can.

It runs inside the worker (the tests put this folder on the worker's sys.path); the tests
assert how the trusted side reports each misbehaviour.
"""

import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import time

import numpy as np

from dezero_grader import wire

_KEEP = []  # Popen objects of spawned children, kept so they are not collected

_IGNORE_TERM = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "print('up', flush=True); time.sleep(600)")
_CHILD = f"""
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
g = subprocess.Popen([sys.executable, "-c", {_IGNORE_TERM!r}], start_new_session=True, stdout=subprocess.PIPE)
g.stdout.readline()
print(g.pid, flush=True)
time.sleep(600)
"""


def echo(msg):
    return msg.get("value")


def arrays(msg):
    return wire.encode({"a": np.arange(6, dtype=np.float32).reshape(2, 3), "nan": float("nan"),
                        "s": np.float64(2.5), "flag": np.bool_(True)})


def loop(msg):
    while True:
        pass


def sleep(msg):
    time.sleep(msg["s"])
    return "slept"


def alloc(msg):
    block = bytearray(msg["mb"] * 2**20)
    return len(block)


def flood(msg):
    line = "x" * (1 << 20)
    for _ in range(msg["mb"]):
        print(line)
    print("END-MARKER")
    return msg["mb"]


def spawn(msg):
    child = subprocess.Popen([sys.executable, "-c", _CHILD], stdout=subprocess.PIPE)
    _KEEP.append(child)
    grandchild = int(child.stdout.readline())
    if msg.get("then_exit") is not None:
        with open("pids.json", "w") as f:
            json.dump({"child": child.pid, "grandchild": grandchild}, f)
        os._exit(msg["then_exit"])
    return {"child": child.pid, "grandchild": grandchild}


def daemon(msg):
    """Double fork with setsid, the classic daemon: its parent exits at once."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            os.write(w, f"{os.getpid()}\n".encode())
            time.sleep(600)
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    daemon_pid = int(os.read(r, 64))
    os.close(r)
    return {"daemon": daemon_pid}


def sys_exit(msg):
    sys.exit(msg.get("code", 3))


def os_exit(msg):
    os._exit(msg.get("code", 5))


def _inner():
    raise ValueError("boom from the learner")


def fail(msg):
    _inner()


def recurse(msg):
    def down(n):
        return down(n + 1) + 1
    return down(0)


def segfault(msg):
    ctypes.string_at(0)


def write(msg):
    with open(msg["path"], "w") as f:
        f.write("written by the worker")
    return "written"


def remove(msg):
    os.remove(msg["path"])
    return "removed"


def connect(msg):
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        s.connect(("127.0.0.1", msg["port"]))
    return "connected"


def big_file(msg):
    with open("big.bin", "wb") as f:
        for _ in range(msg["mb"]):
            f.write(b"\0" * 2**20)
    return "written"


def limits(msg):
    names = {"as": resource.RLIMIT_AS, "cpu": resource.RLIMIT_CPU, "fsize": resource.RLIMIT_FSIZE,
             "nproc": resource.RLIMIT_NPROC, "core": resource.RLIMIT_CORE}
    return {"limits": {k: list(resource.getrlimit(v)) for k, v in names.items()},
            "env": dict(os.environ), "cwd": os.getcwd(), "sys_path": sys.path, "pgid": os.getpgid(0),
            "sid": os.getsid(0), "pid": os.getpid(), "stdin": os.read(0, 10).decode()}


def sabotage_json(msg):
    json.dumps = lambda *a, **k: "garbage"
    json.loads = lambda *a, **k: {"ok": True, "result": "forged"}
    json._default_encoder = None
    os.write = lambda fd, data: len(data)
    return {"still": "plain"}


def _answer_fd():
    return sys.modules["__main__"]._ANSWER_FD


def garbage_frame(msg):
    os.write(_answer_fd(), b"\xff\xff\xff\xff")
    time.sleep(5)


def not_json(msg):
    os.write(_answer_fd(), (8).to_bytes(4, "big") + b"not json")
    time.sleep(5)


def close_channel(msg):
    os.close(_answer_fd())
    return "closed"


def unencodable(msg):
    return object()


def fork_and_return(msg):
    """os.fork() without exec: the child returns into the worker's loop, as careless code would."""
    pid = os.fork()
    return {"forked": pid}


def fork_many(msg):
    """Fork ``n`` sleeping children; under RLIMIT_NPROC the fork beyond the limit fails."""
    pids = []
    for _ in range(msg["n"]):
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        pids.append(pid)
    return pids


def surrogate(msg):
    return "name-\udcff-ü"  # what os.listdir gives for a file name that is not UTF-8


HANDLERS = {
    "echo": echo, "arrays": arrays, "loop": loop, "sleep": sleep, "alloc": alloc, "flood": flood,
    "spawn": spawn, "daemon": daemon, "sys_exit": sys_exit, "os_exit": os_exit, "fail": fail,
    "recurse": recurse, "segfault": segfault, "write": write, "remove": remove, "connect": connect,
    "big_file": big_file, "limits": limits, "sabotage_json": sabotage_json,
    "garbage_frame": garbage_frame, "not_json": not_json, "close_channel": close_channel,
    "unencodable": unencodable, "fork_and_return": fork_and_return, "fork_many": fork_many,
    "surrogate": surrogate,
}
