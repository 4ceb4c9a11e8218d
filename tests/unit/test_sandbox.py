"""The worker sandbox: every way learner code can misbehave comes back as data, nothing outlives it."""

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dezero_grader import wire
from dezero_grader.errors import GraderError, WorkerFailure
from dezero_grader.isolation import bwrap
from dezero_grader.isolation.worker_process import Limits, Worker

HERE = Path(__file__).resolve().parent
FAST = Limits(call_s=10, total_s=60, cpu_s=30, memory_mb=1024, fsize_mb=8, output_kb=64, grace_s=0.2)
# how long a test waits for an event (processes gone, a worker dead) before it calls it a hang:
# never reached on a healthy run, however loaded the machine
HANG_S = 120

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the sandbox is POSIX only")
_MODE = {"sandbox": "auto"}


@pytest.fixture(autouse=True, params=["bubblewrap", "basic"])
def sandbox_mode(request):
    """Every test runs in both sandboxes: bubblewrap, and the basic one it falls back to."""
    if request.param == "bubblewrap" and bwrap.unavailable():
        pytest.skip(bwrap.unavailable())
    _MODE["sandbox"] = request.param
    yield request.param
    _MODE["sandbox"] = "auto"


def alive(pid: int) -> bool:
    """True while ``pid`` is a running (not zombie) process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def host_pid(w: Worker, inner: int) -> int:
    """A pid the worker reported from inside, as this machine numbers it (inside bubblewrap the
    worker has a PID namespace of its own)."""
    if w.sandbox != "bubblewrap":
        return inner
    ns = os.stat(f"/proc/{w.worker_pid}/ns/pid").st_ino
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{name}/ns/pid").st_ino != ns:
                continue
            with open(f"/proc/{name}/status") as f:
                nspid = next(line for line in f if line.startswith("NSpid:"))
        except (OSError, StopIteration):
            continue
        if int(nspid.split()[-1]) == inner:
            return int(name)
    raise AssertionError(f"no process {inner} in the worker's PID namespace")


def wait_for(event, what: str) -> None:
    """Wait until ``event()`` is true; after HANG_S seconds, fail naming ``what`` (only a hang
    gets there: the limit does not measure how fast anything is)."""
    end = time.monotonic() + HANG_S
    while not event():
        assert time.monotonic() < end, f"still not {what} after {HANG_S} s: a hang"
        time.sleep(0.02)


def assert_gone(*pids: int) -> None:
    wait_for(lambda: not any(alive(p) for p in pids), "gone (processes outlived the worker)")


@pytest.fixture
def scratch(tmp_path):
    root = tmp_path / "scratch"
    root.mkdir()
    return root


def worker(scratch, limits=FAST, **kw):
    return Worker(scratch, [HERE], dataclasses.replace(limits, sandbox=_MODE["sandbox"]),
                  handler="sandbox_handler", **kw)


def failure_of(w: Worker, msg: dict, **kw) -> WorkerFailure:
    with pytest.raises(WorkerFailure) as info:
        w.request(msg, **kw)
    return info.value


# -- normal operation -----------------------------------------------------------------------------

def test_ping_echo_and_wire_arrays_round_trip(scratch):
    with worker(scratch) as w:
        pong = w.request({"op": "ping"})["result"]
        assert pong["reply"] == "pong" and host_pid(w, pong["pid"]) == w.worker_pid
        assert w.request({"op": "echo", "value": {"a": [1, "x", None]}})["result"] == {"a": [1, "x", None]}
        got = wire.decode(w.request({"op": "arrays"})["result"])
        np.testing.assert_array_equal(got["a"].data, np.arange(6, dtype=np.float32).reshape(2, 3))
        assert got["a"].device == "cpu" and got["a"].dtype == np.float32
        assert np.isnan(got["nan"]) and got["s"] == 2.5 and isinstance(got["s"], np.float64)
        assert got["flag"] is np.True_ or got["flag"] == np.bool_(True)


def test_environment_is_scrubbed_and_limits_applied(scratch, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "must-not-leak")
    with worker(scratch, env={"EXTRA": "1"}) as w:
        info = w.request({"op": "limits"})["result"]
    env = info["env"]
    assert "SECRET_TOKEN" not in env
    assert env["HOME"] == str(scratch.resolve()) and env["TMPDIR"].startswith(str(scratch.resolve()))
    assert env["PYTHONHASHSEED"] == "0" and env["OPENBLAS_NUM_THREADS"] == "1" and env["MPLBACKEND"] == "Agg"
    assert env["EXTRA"] == "1" and env["LC_ALL"] == "C.UTF-8"
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(HERE)  # learner folders come first
    assert info["cwd"] == str(scratch.resolve())
    assert info["pgid"] == info["sid"]  # own session and process group
    if w.sandbox != "bubblewrap":  # (inside bubblewrap, its init leads them)
        assert info["pgid"] == info["pid"]
    assert info["stdin"] == ""  # /dev/null
    limits = info["limits"]
    assert limits["as"][0] == FAST.memory_mb * 2**20
    assert limits["fsize"][0] == FAST.fsize_mb * 2**20
    assert limits["cpu"] == [FAST.cpu_s, FAST.cpu_s + 1]
    assert limits["core"] == [0, 0]
    assert limits["nproc"][0] != -1  # set (as headroom over what the user runs); root ignores it


def test_numpy_worker_runs_under_the_default_limits(scratch):
    with worker(scratch, Limits(call_s=20)) as w:
        assert w.effective_limits["as"][0] == 4096 * 2**20
        assert w.request({"op": "alloc", "mb": 64})["result"] == 64 * 2**20


# -- exceptions are answers -----------------------------------------------------------------------

def test_exception_is_answered_with_traceback_and_where(scratch):
    with worker(scratch) as w:
        error = w.request({"op": "fail"})["error"]
        assert error["type"] == "ValueError" and error["message"] == "boom from the learner"
        assert error["where"].startswith(str(HERE / "sandbox_handler.py")) and error["where"].endswith("in _inner")
        assert error["traceback"][-1] == error["where"] and len(error["traceback"]) <= 20
        assert not any("dezero_grader/sandboxed/worker.py" in line for line in error["traceback"])
        assert w.request({"op": "ping"})["ok"]  # still serving


def test_sys_exit_is_an_answer_not_a_death(scratch):
    with worker(scratch) as w:
        error = w.request({"op": "sys_exit", "code": 4})["error"]
        assert error["type"] == "SystemExit" and "sys.exit(4)" in error["message"]
        assert w.request({"op": "ping"})["ok"]


def test_deep_recursion_is_a_recursion_error(scratch):
    with worker(scratch) as w:
        assert w.request({"op": "recurse"})["error"]["type"] == "RecursionError"


def test_monkeypatched_json_and_os_do_not_change_the_framing(scratch):
    with worker(scratch) as w:
        assert w.request({"op": "sabotage_json"})["result"] == {"still": "plain"}
        assert w.request({"op": "echo", "value": [1.5, "ü"]})["result"] == [1.5, "ü"]
        assert w.request({"op": "surrogate"})["result"] == "name-\udcff-ü"  # e.g. an odd file name


def test_a_fork_that_returns_into_the_loop_does_not_answer(scratch):
    with worker(scratch) as w:
        answer = w.request({"op": "fork_and_return"})
        assert answer["result"]["forked"] > 0  # the worker's own answer, not the child's
        for value in range(5):
            assert w.request({"op": "echo", "value": value})["result"] == value


def test_unknown_op_and_unencodable_answer_are_grader_errors(scratch):
    with worker(scratch) as w:
        with pytest.raises(GraderError, match="unknown op 'nope'"):
            w.request({"op": "nope"})
        with pytest.raises(GraderError, match="not plain JSON"):
            w.request({"op": "unencodable"})
        with pytest.raises(GraderError, match="string 'op'"):
            w.request({"value": 1})
        assert w.request({"op": "ping"})["ok"]


def test_a_batch_answers_each_request_in_order_and_the_worker_goes_on(scratch):
    with worker(scratch) as w:
        got = w.requests([{"op": "echo", "value": i} for i in range(5)] + [{"op": "fail"}])
        assert got.failure is None and len(got.seconds) == 6
        assert [a["result"] for a in got.answers[:5]] == [0, 1, 2, 3, 4]
        assert got.answers[5]["ok"] is False and got.answers[5]["error"]["type"] == "ValueError"
        assert w.request({"op": "echo", "value": "after"})["result"] == "after"


def test_a_batch_refuses_what_a_request_alone_would_and_answers_the_rest(scratch):
    with worker(scratch) as w:
        got = w.requests([{"op": "echo", "value": 1}, {"op": "nope"}, {"op": "exit"},
                          {"op": "batch", "requests": []}, {"op": "echo", "value": 5}])
        assert got.failure is None and got.answers[0]["result"] == 1 and got.answers[4]["result"] == 5
        refusals = [str(a) for a in got.answers[1:4]]
        # neither the end of the worker nor a batch inside a batch
        assert "unknown op 'nope'" in refusals[0] and "exit" in refusals[1], refusals
        assert "unknown op 'batch'" in refusals[2], refusals
        assert all(isinstance(a, GraderError) for a in got.answers[1:4])
        assert w.request({"op": "ping"})["ok"]


def test_a_worker_that_dies_in_a_batch_fails_where_it_died(scratch):
    with worker(scratch) as w:
        got = w.requests([{"op": "echo", "value": 1}, {"op": "os_exit", "code": 4},
                          {"op": "echo", "value": 3}])
        with pytest.raises(GraderError):
            w.request({"op": "ping"})  # a stopped worker is not reused
    assert [a["result"] for a in got.answers] == [1] and len(got.seconds) == 2
    assert got.failure.reason == "exited" and got.failure.exit_code == 4


def test_a_request_of_a_batch_that_loops_times_out_alone(scratch):
    limits = dataclasses.replace(FAST, call_s=1.0)
    with worker(scratch, limits) as w:
        got = w.requests([{"op": "echo", "value": 1}, {"op": "loop"}])
    assert [a["result"] for a in got.answers] == [1] and got.failure.reason == "timeout"


def test_missing_handler_module_is_a_grader_error(scratch):
    with pytest.raises(GraderError, match="no_such_handler"):
        with Worker(scratch, [HERE], FAST, handler="no_such_handler"):
            pass


# -- files and network ----------------------------------------------------------------------------

def test_writes_and_deletes_outside_the_scratch_folder_are_refused(scratch, tmp_path):
    outside = tmp_path / "outside.txt"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    with worker(scratch) as w:
        error = w.request({"op": "write", "path": str(outside)})["error"]
        assert error["type"] == "PermissionError" and "scratch folder" in error["message"]
        assert w.request({"op": "write", "path": "../outside.txt"})["error"]["type"] == "PermissionError"
        assert w.request({"op": "remove", "path": str(victim)})["error"]["type"] == "PermissionError"
        assert w.request({"op": "write", "path": "inside.txt"})["result"] == "written"
    assert not outside.exists() and victim.read_text() == "keep me"
    assert (scratch / "inside.txt").read_text() == "written by the worker"


def test_network_connections_are_refused(scratch):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with worker(scratch) as w:
            error = w.request({"op": "connect", "port": server.getsockname()[1]})["error"]
    assert error["type"] == "PermissionError" and "network" in error["message"]


# -- limits ---------------------------------------------------------------------------------------

# the time limits that judge the code are CPU time; the wall clock, far longer, only catches code
# that waits. A hang_factor this large keeps the wall clock out of the tests of the CPU limits,
# however loaded the machine that runs them
NO_WALL = 1000


def test_endless_loop_times_out_on_cpu_time_and_names_where(scratch):
    with worker(scratch, dataclasses.replace(FAST, hang_factor=NO_WALL)) as w:
        failure = failure_of(w, {"op": "loop"}, timeout=0.5)
        pid = w.pid
    assert failure.reason == "timeout" and failure.clock == "cpu" and failure.scope == "call"
    assert "0.5 s of CPU time allowed for one request" in failure.message
    assert failure.cpu_s >= 0.5 and not failure.busy
    assert "sandbox_handler.py" in failure.message and "in loop" in failure.message
    assert_gone(pid)


def test_whole_lifetime_limit_is_cpu_time(scratch):
    with worker(scratch, Limits(call_s=10, total_s=1.5, hang_factor=NO_WALL, grace_s=0.1)) as w:
        assert w.request({"op": "sleep", "s": 2})["result"] == "slept"   # waiting costs no CPU
        failure = failure_of(w, {"op": "loop"})
    assert failure.reason == "timeout" and failure.clock == "cpu" and failure.scope == "total"
    assert "1.5 s of CPU time allowed for the whole grading run" in failure.message
    assert failure.cpu_s >= 1.5


def test_code_that_waits_is_stopped_by_the_wall_clock_and_says_so(scratch):
    # a CPU limit of 0.2 s: the wall clock stops a sleeping request at its floor of 5 s
    with worker(scratch) as w:
        failure = failure_of(w, {"op": "sleep", "s": 600}, timeout=0.2)
    assert failure.reason == "timeout" and failure.clock == "wall" and not failure.busy
    assert failure.cpu_s < 0.2
    assert "waited without end" in failure.message and "CPU-time limit is 0.2 s" in failure.message
    assert "in sleep" in failure.message


def _spinners(cpu: int, n: int) -> list:
    """``n`` busy loops on CPU ``cpu`` alone, each in a session of its own: where the kernel
    groups the CPU's share by session (autogroup), the worker, in its own session, would
    otherwise get half the CPU against all of them together, not a share of n + 1."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
             for _ in range(n)]
    for p in procs:
        os.sched_setaffinity(p.pid, {cpu})
    return procs


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or not os.path.exists("/proc/self/schedstat"),
                    reason="needs CPU affinity and the kernel's scheduler statistics")
def test_a_request_starved_of_cpu_by_a_loaded_machine_is_told_apart_from_a_hang(scratch):
    # the worker shares one CPU with four busy loops: it gets a fifth of it at most, so its 5 s of
    # CPU time cannot fit in the 7.5 s of wall clock -- and it spent the time waiting for the CPU
    cpu = min(os.sched_getaffinity(0))
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})   # the worker inherits it
    spinners = _spinners(cpu, 4)
    try:
        with worker(scratch, dataclasses.replace(FAST, hang_factor=1.5)) as w:
            os.sched_setaffinity(0, mine)
            failure = failure_of(w, {"op": "loop"}, timeout=5)
    finally:
        os.sched_setaffinity(0, mine)
        for p in spinners:
            p.kill()
            p.wait()
    assert failure.reason == "timeout" and failure.clock == "wall", failure.message
    assert failure.busy and failure.cpu_s < 5
    assert "the machine was busy" in failure.message


def test_cpu_limit(scratch):
    with worker(scratch, Limits(call_s=20, cpu_s=1, grace_s=0.1)) as w:
        failure = failure_of(w, {"op": "loop"})
    assert failure.reason == "cpu-time" and failure.signal == signal.SIGXCPU


def test_memory_limit(scratch):
    with worker(scratch, Limits(call_s=10, memory_mb=400)) as w:
        failure = failure_of(w, {"op": "alloc", "mb": 1024})
        pid = w.pid
    assert failure.reason == "memory" and "400 MB" in failure.message
    assert_gone(pid)


def test_file_size_limit(scratch):
    with worker(scratch, Limits(call_s=10, fsize_mb=1)) as w:
        failure = failure_of(w, {"op": "big_file", "mb": 3})
    assert failure.reason == "output-limit" and "1 MB" in failure.message
    assert (scratch / "big.bin").stat().st_size <= 2**20


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="the kernel does not enforce RLIMIT_NPROC for root")
def test_process_limit_stops_a_fork_storm(scratch):
    with worker(scratch, Limits(call_s=10, nproc=8, grace_s=0.1)) as w:
        error = w.request({"op": "fork_many", "n": 64})["error"]
    assert error["type"] == "BlockingIOError"


def test_flood_of_output_is_drained_and_only_the_tail_kept(scratch):
    with worker(scratch) as w:
        assert w.request({"op": "flood", "mb": 50})["result"] == 50
    # read once the worker is closed: the answer can overtake the last of the output still in the
    # pipe, and only closing waits for the output's end
    tail = w.output_tail
    assert w.output_bytes > 50 * 2**20
    assert len(tail.encode()) <= FAST.output_kb * 1024
    assert tail.endswith("END-MARKER\n")


# -- deaths ---------------------------------------------------------------------------------------

def test_os_exit_is_reported_as_exited_with_the_code(scratch):
    with worker(scratch) as w:
        failure = failure_of(w, {"op": "os_exit", "code": 5})
        with pytest.raises(GraderError):
            w.request({"op": "ping"})  # a stopped worker is not reused
    assert failure.reason == "exited" and failure.exit_code == 5 and "os._exit" in failure.message


def test_segfault_is_a_crash_with_the_signal_and_trace(scratch):
    with worker(scratch) as w:
        failure = failure_of(w, {"op": "segfault"})
    assert failure.reason == "crashed" and failure.signal == signal.SIGSEGV and "SIGSEGV" in failure.message
    assert "Segmentation fault" in failure.output_tail


@pytest.mark.parametrize("op", ["garbage_frame", "not_json", "close_channel"])
def test_broken_protocol(scratch, op):
    with worker(scratch) as w:
        failure = failure_of(w, {"op": op})
        pid = w.pid
    assert failure.reason == "protocol"
    assert_gone(pid)


# -- nothing outlives the worker ------------------------------------------------------------------

def test_close_kills_children_that_ignore_sigterm_and_setsid_grandchildren(scratch):
    with worker(scratch) as w:
        pids = {k: host_pid(w, v) for k, v in w.request({"op": "spawn"})["result"].items()}
        worker_pid = w.worker_pid
        assert alive(pids["child"]) and alive(pids["grandchild"])
    assert_gone(worker_pid, w.pid, pids["child"], pids["grandchild"])


def test_daemonised_grandchild_stays_findable_and_dies(scratch):
    with worker(scratch) as w:
        daemon = host_pid(w, w.request({"op": "daemon"})["result"]["daemon"])
        if os.path.exists("/proc"):
            with open(f"/proc/{daemon}/stat") as f:
                assert int(f.read().rsplit(")", 1)[1].split()[1]) == w.worker_pid  # its subreaper
        failure = failure_of(w, {"op": "os_exit", "code": 0})
    assert failure.reason == "exited" and failure.exit_code == 0
    assert_gone(daemon)


def test_children_die_with_a_worker_that_exits_abruptly(scratch):
    with worker(scratch) as w:
        namespace = os.stat(f"/proc/{w.worker_pid}/ns/pid").st_ino
        failure = failure_of(w, {"op": "spawn", "then_exit": 7})
    assert failure.reason == "exited" and failure.exit_code == 7
    pids = json.loads((scratch / "pids.json").read_text())
    if w.sandbox == "bubblewrap":
        # the children were numbered inside the worker's PID namespace: none may be left in it
        wait_for(lambda: not _in_pid_namespace(namespace),
                 "gone (processes outlived the worker in its PID namespace)")
    else:
        assert_gone(pids["child"], pids["grandchild"])


def _in_pid_namespace(ino: int) -> list:
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{name}/ns/pid").st_ino == ino and alive(int(name)):
                found.append(int(name))
        except OSError:
            pass
    return found


def test_children_die_when_a_request_times_out(scratch):
    with worker(scratch) as w:
        pids = {k: host_pid(w, v) for k, v in w.request({"op": "spawn"})["result"].items()}
        failure_of(w, {"op": "loop"}, timeout=0.3)
    assert_gone(pids["child"], pids["grandchild"])


def _namespace_identity(path: str):
    st = os.stat(path)
    return st.st_dev, st.st_ino


def test_a_workers_namespace_stays_its_own_until_its_last_sweep(scratch, tmp_path):
    # The sweep finds a worker's processes by the identity of its namespace. The kernel gives a
    # freed namespace's number to the next namespace made, so a sweep that matched on the number
    # of a namespace already gone would kill a newer worker (the reference's, started beside it):
    # the worker keeps its namespace alive with an open file until its sweep is over.
    w = worker(scratch)
    w.start()
    if w.tree.namespace is None:
        w.close()
        pytest.skip("this machine gives workers no namespace of their own")
    kind, ident = w.tree.namespace
    fd = w.tree.namespace_fd
    assert _namespace_identity(f"/proc/self/fd/{fd}") == ident
    os.kill(w.pid, signal.SIGKILL)          # the worker's tree is gone ...
    wait_for(lambda: not alive(w.pid), "dead (the worker, killed)")
    assert _namespace_identity(f"/proc/self/fd/{fd}") == ident   # ... its namespace is not
    other_root = tmp_path / "other"
    other_root.mkdir()
    other = worker(other_root)
    other.start()
    try:
        assert other.tree.namespace is not None and other.tree.namespace[1] != ident
        w.close()
        assert w.tree.namespace_fd is None
        with pytest.raises(OSError):
            os.fstat(fd)
        assert other.request({"op": "echo", "value": 1})["ok"]   # the sweep left it alone
    finally:
        other.close()


def test_a_grader_killed_by_a_signal_takes_its_worker_with_it(tmp_path, sandbox_mode):
    # a grader process (here: a child python) starts a worker that loops, then dies by SIGKILL
    script = tmp_path / "grader_proc.py"
    script.write_text(
        "import sys, time, dataclasses\n"
        f"sys.path[:0] = [{str(HERE.parent.parent)!r}, {str(HERE)!r}]\n"
        "from dezero_grader.isolation.worker_process import Worker, Limits\n"
        "from pathlib import Path\n"
        f"w = Worker(Path({str(tmp_path)!r}), [Path({str(HERE)!r})], "
        f"Limits(call_s=60, total_s=120, sandbox={sandbox_mode!r}), handler='sandbox_handler')\n"
        "w.start()\n"
        "print(w.worker_pid, flush=True)\n"
        "w.request({'op': 'loop'})\n")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    worker_pid = int(proc.stdout.readline())
    assert alive(worker_pid)
    proc.kill()
    proc.wait()
    assert_gone(worker_pid)
