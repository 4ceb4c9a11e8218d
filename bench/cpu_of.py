"""The CPU time a command and every process it starts use, workers included.

    python bench/cpu_of.py [--repeat 3] -- dezero-grade check reference --step 50

`time` misses most of a grading: a worker runs inside bubblewrap's own process namespace and
is killed, not waited for, so its CPU time reaches no parent that `time` asks. This process
makes itself a child subreaper (Linux), so every orphan of the command becomes its child; it
reaps them all and reports the CPU time of the command and of everything it started (user +
system), with the wall time beside it. CPU time, not wall time, is what to compare on a busy
machine.
"""
import argparse
import ctypes
import os
import resource
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def cpu_of(command) -> tuple:
    """(CPU seconds of `command` and all its descendants, wall seconds, exit status); run from a
    fresh process (`main`): the children's CPU time of this process accumulates."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc.wait()
    while True:   # the orphans it left: reaped here, so their CPU time counts
        try:
            os.wait()
        except ChildProcessError:
            break
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, time.monotonic() - t0, proc.returncode


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('command', nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ['--'] else args.command
    if not command:
        parser.error('give the command to measure after --')
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit('cannot become a child subreaper here (Linux only): {}'.format(
            os.strerror(ctypes.get_errno())))
    for _ in range(args.repeat):
        cpu, wall, code = cpu_of(command)
        print('cpu {:.2f} s  wall {:.2f} s  exit {}'.format(cpu, wall, code), flush=True)


if __name__ == '__main__':
    main()
