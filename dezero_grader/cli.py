"""`dezero-grade` (and `python -m dezero_grader`): the command line.

Exit status of `check`: 0 accept, 1 rollback / reject / incomplete / invalid, 2 usage error. Every other
command: 0 on success, 1 when what it checks fails (selftest gaps) or it made nothing (an export
with no row), 2 on a usage error.

A usage error is a message on stderr, never a traceback, and is found before any grading where it
can be: output paths are checked for writability first (the writes themselves stay atomic), a
mistyped `--only` id is named with the ids it is close to, and a mistyped option with the option
it is close to (options are never abbreviated: `_Parser`). This module parses the arguments; what
each command does is in `dezero_grader.commands`.
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import sys

from dezero_grader.catalogue import assignments
from dezero_grader.commands import (USAGE_ERROR, cmd_batch, cmd_check, cmd_export, cmd_faults,
                                    cmd_history, cmd_inject, cmd_list, cmd_merge, cmd_selftest)
from dezero_grader.errors import SubmissionError
from dezero_grader.i18n import LANGUAGES
from dezero_grader.isolation import bwrap
from dezero_grader.present.outpaths import OutputError

def _seed(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError('the seed must be >= 0')
    return value


def _jobs(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError('takes a number of processes, found {!r}'.format(text)) from None
    if value < 1:
        raise argparse.ArgumentTypeError('takes a number of processes, at least 1, found {}'.format(value))
    return value


_STEP = re.compile(r'(?:step)?[ _-]?0*(\d{1,3})', re.I)


def _step(text):
    """A step number: `52`, or as the book's files name it, `step52` (`step05`, `Step 5`)."""
    found = _STEP.fullmatch(text.strip())
    if found is None:
        raise argparse.ArgumentTypeError('takes a step number from 1 to 60 (52, or step52 as the '
                                         'book\'s files name it), found {!r}'.format(text))
    value = int(found.group(1))
    if not 1 <= value <= 60:
        raise argparse.ArgumentTypeError('steps run from 1 to 60, found {}'.format(value))
    return value


class _Parser(argparse.ArgumentParser):
    """No abbreviated options: `--verbos` is a typo, not `--verbose`. An abbreviation that works
    today silently changes meaning (or breaks a script) when an option sharing its prefix is
    added, and every option a learner types often has a short form of its own (`-v`, `-j`).
    A typo is answered with the option it is close to (`unknown_options`)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault('allow_abbrev', False)
        super().__init__(*args, **kwargs)


def version() -> str:
    """The installed grader's version (the package metadata; the source tree's pyproject when
    run from a checkout that was never installed)."""
    from importlib import metadata
    try:
        return metadata.version('dezero-grader')
    except metadata.PackageNotFoundError:
        return 'unknown (not installed)'
def _policy_argument(c, when='default: the default policy'):
    c.add_argument('--policy', metavar='FILE',
                   help='the course\'s grading policy (JSON, schemas/policy.schema.json): how a '
                        'rollback is scored, the late penalty, which checks learners see; ' + when)


def build_parser():
    p = _Parser(
        prog='dezero-grade',
        description='The acceptance gate for a DeZero rebuilt step by step: gradient checks, '
                    'device / mode / state / serialization invariants and fault detection.')
    p.add_argument('--version', action='version', version='dezero-grade ' + version())
    sub = p.add_subparsers(dest='command', metavar='COMMAND', parser_class=_Parser)
    p.commands = sub.choices   # command name -> its parser, for unknown_options

    c = sub.add_parser('list', help='steps, titles and what each checks')
    c.add_argument('--checks', action='store_true', help='also list the registered checks')

    c = sub.add_parser('check', help='grade one submission for one step')
    c.add_argument('submission', help='a folder (or .zip) with your dezero/ package or stepNN.py')
    c.add_argument('--step', type=_step, required=True)
    c.add_argument('--json', metavar='OUT', help='write the scorecard there')
    c.add_argument('--device', choices=('auto', 'sim', 'cuda', 'cpu'), default='auto',
                   help='auto: a real GPU when CuPy finds one, else the simulated device')
    c.add_argument('--seed', type=_seed, help='reproduce a run (default: from your code\'s hash)')
    c.add_argument('--profile', choices=('book', 'extension'), default='book',
                   help='which checks decide the verdict: book (default) or also the extension tier')
    c.add_argument('--era', choices=('book', 'current'), default='book',
                   help='the environment your code must run in. book (default): the book\'s 2020 NumPy and '
                        'CuPy -- removed APIs it used (np.int, cupy.scatter_add, numpy.lib.* imports) '
                        'still work and are listed as compatibility findings; current: today\'s '
                        'NumPy 2 and CuPy 14, where the same uses fail')
    c.add_argument('--graph-dir', metavar='DIR', help='write graph snapshots (DOT) there')
    c.add_argument('--html', metavar='OUT', help='write the report as one self-contained HTML '
                   'file there (the graph of a failing gradient check drawn)')
    c.add_argument('--repro-dir', metavar='DIR', help='write one repro_<check>.py per failing check '
                   'there: python DIR/repro_<check>.py runs it again against your code')
    c.add_argument('--only', action='append', default=[], metavar='CHECK',
                   help='run only this check id (repeatable)')
    c.add_argument('--verbose', '-v', action='store_true', help='also list passing checks')
    c.add_argument('--lang', choices=LANGUAGES, default=None,
                   help='the language of the report: en, ja (日本語), zh (简体中文), ko (한국어); '
                        'default: the policy\'s language, else your locale\'s (LANGUAGE, LC_ALL, '
                        'LC_MESSAGES, LANG), else en. The scorecard\'s text stays English')
    _policy_argument(c)
    c.add_argument('--submitted-at', metavar='TIME',
                   help='when the submission was handed in (2026-05-02T10:00:00+09:00), for the '
                        'policy\'s late penalty')
    c.add_argument('--no-cache', action='store_true', help='recompute the reference observations')
    c.add_argument('--timeout', type=float, metavar='S',
                   help='CPU-time limit for one test of your code, in seconds (default 30; the whole '
                        'submission gets ten times as much, at least 300 s; the wall clock, ten '
                        'times as long, only stops code that waits)')
    c.add_argument('--memory', type=int, metavar='MB',
                   help='memory limit of the process running your code, in MB (default 4096)')
    c.add_argument('--sandbox', choices=bwrap.MODES, default=None,
                   help='what confines your code: auto (bubblewrap where it runs, else the basic '
                        'sandbox), bubblewrap (refuse to grade without it), basic (default: '
                        '$DEZERO_GRADER_SANDBOX, else auto)')

    c = sub.add_parser('faults', help='the fault catalogue of a step')
    c.add_argument('--step', type=_step, required=True)

    c = sub.add_parser('inject', help='write a single-fault variant of a submission')
    c.add_argument('submission')
    c.add_argument('--step', type=_step, required=True)
    c.add_argument('--fault', required=True)
    c.add_argument('--out', required=True, help='a new folder for the variant')
    c.add_argument('--as-patch', action='store_true',
                   help='add the fault as a module run when the package is imported (as selftest '
                        'does) instead of writing it into your function, where the book\'s code is')

    c = sub.add_parser('selftest', help='reference accepted, every fault caught')
    c.add_argument('--step', type=_step, action='append',
                   help='step to test (repeatable; default: every step with an assignment)')
    c.add_argument('--seed', type=_seed, default=2026)
    c.add_argument('--write-fingerprints', action='store_true',
                   help='store the fingerprints measured (what each fault makes fail) for the '
                        'diagnosis, instead of checking the stored ones against them')
    c.add_argument('--jobs', '-j', type=_jobs, metavar='J',
                   help='fault variants graded at once (default: the number of CPUs)')

    c = sub.add_parser('batch', help='grade a folder of submissions (resumable, shardable)')
    c.add_argument('submissions', metavar='SUBMISSIONS_DIR',
                   help='one sub-folder or .zip per learner; its name is the submission id')
    c.add_argument('--step', type=_step, required=True)
    c.add_argument('--out', required=True, metavar='DIR',
                   help='scorecards/, receipts/ and summary.json go there; run again to resume')
    c.add_argument('--jobs', '-j', type=_jobs, metavar='J',
                   help='submissions graded at once (default: the number of CPUs)')
    c.add_argument('--timeout', type=float, metavar='S',
                   help='CPU-time limit for one test of a submission, in seconds (default 30)')
    c.add_argument('--memory', type=int, metavar='MB',
                   help='memory limit of the process running a submission, in MB (default 4096)')
    c.add_argument('--shard', metavar='I/N', help='grade only shard I of N (1-based), for CI matrices')
    c.add_argument('--roster', metavar='CSV', help='who handed in which submission (for exports); '
                   'a submitted_at column gives the hand-in times for the late penalty')
    c.add_argument('--times', metavar='FILE',
                   help='when each submission was handed in, for the policy\'s late penalty: a CSV '
                        '(submission, submitted_at[, due]), Gradescope\'s submission_metadata.yml '
                        'or grades export, or Canvas\'s submissions as JSON')
    c.add_argument('--force', action='store_true', help='grade everything again, even what is done')
    _policy_argument(c)
    c.add_argument('--device', choices=('auto', 'sim', 'cuda', 'cpu'), default='auto')
    c.add_argument('--seed', type=_seed, help='one seed for every submission (default: each '
                   'submission\'s own, from its code\'s hash)')
    c.add_argument('--profile', choices=('book', 'extension'), default='book')
    c.add_argument('--sandbox', choices=bwrap.MODES, default=None,
                   help='a batch grades many learners\' code on one machine, so it needs bubblewrap '
                        '(auto and bubblewrap refuse to start without it); basic opts out (default: '
                        '$DEZERO_GRADER_SANDBOX, else auto)')
    c.add_argument('--era', choices=('book', 'current'), default='book',
                   help='see check --era')
    c.add_argument('--lang', choices=LANGUAGES, default=None,
                   help='the language the scorecards\' reports are written in (recorded in each, '
                        'for the exports): en, ja, zh, ko; default: the policy\'s language, else en')

    c = sub.add_parser('history', help='grade a git history step by step: the commit that broke '
                       'an earlier step, named')
    c.add_argument('repo', metavar='REPO', help='a git repository (a local clone, or its URL); with '
                   '--classroom, a folder of them (one per student)')
    c.add_argument('--out', default='dezero-history', metavar='DIR',
                   help='history.json, history.html, scorecards/ and the cache go there; run again '
                        'to resume (default: dezero-history)')
    c.add_argument('--map', metavar='FILE', help='step -> commit, one "23 a1b2c3d" per line (or JSON); '
                   'default: .dezero-steps or dezero-steps.json in the repository, if any')
    c.add_argument('--steps', metavar='LIST', help='only these steps, e.g. 23-30,40')
    c.add_argument('--rev', metavar='REV', help='read the history of this branch or commit '
                   '(default: HEAD)')
    c.add_argument('--jobs', '-j', type=_jobs, metavar='J', help='gradings at once (default: CPUs)')
    c.add_argument('--cache', metavar='DIR', help='the content cache (default: OUT/cache); share '
                   'it between runs and repositories')
    c.add_argument('--json', metavar='OUT', help='also write the history document there')
    c.add_argument('--html', metavar='OUT', help='also write the HTML timeline there')
    c.add_argument('--diff', action='store_true', help='print the diff of each first bad commit')
    c.add_argument('--dry-run', action='store_true', help='show which commit is which step, and '
                   'how that was found; grade nothing')
    c.add_argument('--classroom', action='store_true',
                   help='REPO is a folder of repositories (a GitHub Classroom download): grade '
                        'each, and write per-step batch folders for summaries and exports')
    c.add_argument('--force', action='store_true', help='grade again what the cache holds')
    c.add_argument('--deep', action='store_true', help='also grade every earlier step\'s passed '
                   'checks at the newest step\'s commit (beyond the regression steps each '
                   'assignment names) and name the commit that broke any that fails there')
    c.add_argument('--device', choices=('auto', 'sim', 'cuda', 'cpu'), default='auto')
    c.add_argument('--seed', type=_seed, help='one seed for every commit (default: from each '
                   'commit\'s graded files)')
    c.add_argument('--profile', choices=('book', 'extension'), default='book')
    c.add_argument('--era', choices=('book', 'current'), default='book', help='see check --era')
    c.add_argument('--timeout', type=float, metavar='S', help='see check --timeout')
    c.add_argument('--memory', type=int, metavar='MB', help='see check --memory')
    c.add_argument('--sandbox', choices=bwrap.MODES, default=None,
                   help='as for check; --classroom, like batch, needs bubblewrap unless basic')

    c = sub.add_parser('merge', help='merge batch shards into one summary')
    c.add_argument('folders', nargs='+', metavar='DIR', help='--out folders of batch shards')
    c.add_argument('--out', default='merged', metavar='DIR',
                   help='where the merged scorecards and summary go (default: merged)')

    c = sub.add_parser('export', help='export grades to Gradescope, Canvas, LTI or JUnit, or write '
                       'an HTML class page')
    c.add_argument('source', nargs='?', metavar='DIR',
                   help='a batch --out folder, or one scorecard file (check --json)')
    c.add_argument('--format', required=True,
                   choices=('gradescope', 'canvas', 'lti', 'junit', 'html'))
    c.add_argument('--out', metavar='PATH', help='file (or folder, for gradescope from a batch) to '
                   'write; default: DIR/exports/...')
    c.add_argument('--roster', metavar='CSV', help='roster to use instead of the batch\'s')
    c.add_argument('--assignment-name', metavar='NAME',
                   help='canvas: the assignment column (default: DeZero step N: title)')
    c.add_argument('--assignment-id', metavar='ID',
                   help='canvas: the Canvas assignment id; without it the import creates a new '
                        'assignment')
    c.add_argument('--visibility', default=None,
                   choices=('visible', 'hidden', 'after_due_date', 'after_published'),
                   help='gradescope: when learners see the results (default: the policy\'s '
                        'visibility.results, else visible)')
    c.add_argument('--autograder', action='store_true',
                   help='gradescope: write the autograder folder (setup.sh, run_autograder) for '
                        '--step to --out, and a zip of it, instead of exporting grades')
    c.add_argument('--step', type=_step, help='with --autograder: the step it grades')
    c.add_argument('--timeout', type=float, metavar='S', help='with --autograder: see batch')
    c.add_argument('--memory', type=int, metavar='MB', help='with --autograder: see batch')
    c.add_argument('--profile', choices=('book', 'extension'), default='book',
                   help='with --autograder: scoring profile')
    c.add_argument('--sandbox', choices=bwrap.MODES, default='auto',
                   help='with --autograder: auto and bubblewrap require bubblewrap on Gradescope '
                        '(setup.sh installs it); basic opts out')
    _policy_argument(c, 'with --autograder: copied into the folder, and every submission '
                        'is scored by it')
    c.add_argument('--secret-file', metavar='FILE',
                   help='with --autograder: the course secret that keys every seed (a file of '
                        'random text; keep it out of what students see)')
    c.add_argument('--era', choices=('book', 'current'), default='book',
                   help='with --autograder: the environment the code must run in (see check --era)')
    return p


def unknown_options(parser, command, extras) -> str:
    """What to say of arguments `command` does not take: the first one, with the option it is
    close to (argparse of Python < 3.14 names no alternative, and prints the top-level usage)."""
    sub = parser.commands.get(command, parser)
    name = '{} {}'.format(parser.prog, command) if command else parser.prog
    first = extras[0]
    if not first.startswith('-'):
        return '{}: unexpected argument {!r}; `{} --help` says what it takes'.format(
            name, first, name)
    known = [o for a in sub._actions for o in a.option_strings if o.startswith('--')]
    close = difflib.get_close_matches(first.split('=', 1)[0], known, n=1, cutoff=0.6)
    return '{}: no option {}{}; `{} --help` lists them'.format(
        name, first.split('=', 1)[0], ' (did you mean {}?)'.format(close[0]) if close
        else '', name)


def _surviving_streams() -> None:
    """stdout and stderr write what their encoding cannot (a lone surrogate of a learner's
    message or file name) as an escape, as every file of the grader does (`schema.ERRORS`)."""
    from dezero_grader.records.schema import ERRORS
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors=ERRORS)
        except (AttributeError, ValueError, OSError):
            pass   # not a text stream of ours (a test's capture): left as it is


def main(argv=None):
    _surviving_streams()
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        print(unknown_options(parser, args.command, extras), file=sys.stderr)
        return USAGE_ERROR
    if args.command is None:
        parser.print_help()
        return USAGE_ERROR
    try:
        return COMMANDS[args.command](args)
    except BrokenPipeError:
        # the reader went away (`dezero-grade list | head`): stop quietly, as other tools do;
        # point stdout at nothing so the interpreter's final flush does not complain again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OutputError as e:
        print('dezero-grade: {}'.format(e), file=sys.stderr)
        return USAGE_ERROR
    except SubmissionError as e:
        print('dezero-grade: {}'.format(e.message), file=sys.stderr)
        return USAGE_ERROR
    except assignments.AssignmentError as e:
        print('dezero-grade: {}'.format(e), file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print('dezero-grade: interrupted', file=sys.stderr)
        return 130


COMMANDS = {'list': cmd_list, 'check': cmd_check, 'faults': cmd_faults, 'inject': cmd_inject,
            'selftest': cmd_selftest, 'batch': cmd_batch, 'merge': cmd_merge,
            'export': cmd_export, 'history': cmd_history}



if __name__ == '__main__':
    sys.exit(main())
