"""Grade a corpus of DeZero repositories that other people wrote, and list every failing check
for review. A tool for calibrating the grader on code it has never seen (not a CI test: the
repositories come from the network, and reviewing a verdict takes a person).

    python bench/corpus.py prepare REPOS_DIR SUBS_DIR     # one submission per repository
    python bench/corpus.py grade SUBS_DIR OUT --steps 52-60 [--jobs 2] [grader options]
    python bench/corpus.py report OUT [--markdown review.md]

`prepare` takes a folder of repositories (work trees, or bare git directories whose HEAD is
read) and makes, for each `dezero/` package found in them, a submission folder holding that
package, and for each folder of step files (`stepNN.py`) one holding those files. `grade` runs
`dezero-grade batch` once per step (resumable: a rerun grades only what changed). `report`
prints verdicts per step, the failing checks by id, and writes a review sheet: every failing
check of every submission with its message, to be marked true (the code really breaks the
book's contract) or false (a grader bug) by a person who reads the code.
"""
from __future__ import annotations

import argparse
import collections
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FAILING = ('failed', 'error', 'timeout')
SKIP_PARTS = {'.git', '__pycache__', 'node_modules', '.ipynb_checkpoints'}


def _steps(text: str) -> list:
    out = []
    for part in text.split(','):
        lo, _, hi = part.partition('-')
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def _safe_name(path: Path) -> str:
    return '__'.join(path.parts).replace('+', '_').replace(' ', '_') or 'root'


def _git_dir(repo: Path) -> Path | None:
    for candidate in (repo, repo / 'repo', repo / '.git', repo / 'repo' / '.git'):
        if (candidate / 'HEAD').is_file() and (candidate / 'objects').is_dir():
            return candidate
    return None


def _work_tree(repo: Path, into: Path) -> Path:
    """A repository's files: its work tree, or, for a bare git folder, its HEAD's Python files
    extracted (files missing from the object store are skipped)."""
    git_dir = _git_dir(repo)
    if git_dir is None or any(p.suffix == '.py' for p in repo.rglob('*.py')):
        return repo
    dest = into / repo.name
    listing = subprocess.run(['git', '--git-dir', str(git_dir), 'ls-tree', '-r', '-z', 'HEAD'],
                             capture_output=True, check=True).stdout.split(b'\0')
    for row in filter(None, listing):
        meta, _, name = row.partition(b'\t')
        _, kind, obj = meta.split()
        if kind != b'blob' or not name.endswith(b'.py'):
            continue
        blob = subprocess.run(['git', '--git-dir', str(git_dir), 'cat-file', 'blob', obj],
                              capture_output=True)
        if blob.returncode == 0:
            target = dest / name.decode('utf-8', 'replace')
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob.stdout)
    return dest


def prepare(repos: Path, subs: Path) -> None:
    subs.mkdir(parents=True, exist_ok=True)
    made = 0
    with tempfile.TemporaryDirectory() as tmp:
        for repo in sorted(p for p in repos.iterdir() if p.is_dir()):
            tree = _work_tree(repo, Path(tmp))
            for init in sorted(tree.rglob('dezero/__init__.py')):
                if SKIP_PARTS & set(init.parts):
                    continue
                holder = init.parent.parent
                name = _safe_name(Path(repo.name) / holder.relative_to(tree))
                dest = subs / 'pkg' / name
                shutil.rmtree(dest, ignore_errors=True)
                shutil.copytree(init.parent, dest / 'dezero',
                                ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
                made += 1
            step_dirs = sorted({p.parent for p in tree.rglob('step[0-9]*.py')
                                if not SKIP_PARTS & set(p.parts)})
            for folder in step_dirs:
                name = _safe_name(Path(repo.name) / folder.relative_to(tree))
                dest = subs / 'steps' / name
                shutil.rmtree(dest, ignore_errors=True)
                shutil.copytree(folder, dest, ignore=shutil.ignore_patterns(
                    '__pycache__', '*.pyc', '*.png', '*.npz', '*.pkl', '*.gz', 'dezero'))
                made += 1
    print('{} submissions under {} (pkg/: packages, steps/: step-file folders)'.format(made, subs))


def grade(subs: Path, out: Path, steps, jobs: int, extra) -> None:
    for step in steps:
        cmd = [sys.executable, '-m', 'dezero_grader', 'batch', str(subs), '--step', str(step),
               '--out', str(out / 'step{:02d}'.format(step)), '--jobs', str(jobs)] + list(extra)
        print('$', ' '.join(cmd), flush=True)
        subprocess.run(cmd)


def _cards(out: Path):
    """(step, submission, scorecard) of every batch folder under `out` (named by its step)."""
    for step_dir in sorted(p for p in out.iterdir() if (p / 'scorecards').is_dir()):
        digits = ''.join(ch for ch in step_dir.name if ch.isdigit())
        for card in sorted((step_dir / 'scorecards').glob('*.json')):
            with open(card, encoding='utf-8') as f:
                yield int(digits), card.stem, json.load(f)


def report(out: Path, markdown: Path | None) -> None:
    verdicts = collections.defaultdict(collections.Counter)
    by_check = collections.Counter()
    invalid = collections.Counter()
    sheet = []
    for step, sub, doc in _cards(out):
        verdicts[step][doc['verdict']] += 1
        if doc['verdict'] == 'invalid':
            invalid[doc['invalid']['code']] += 1
            sheet.append((step, sub, '(invalid)', doc['invalid']['message'].splitlines()[0][:300]))
        for c in doc['checks']:
            if c['status'] in FAILING:
                by_check[c['id']] += 1
                sheet.append((step, sub, c['id'], c['message'][:300]))
    names = ('accept', 'rollback', 'reject', 'incomplete', 'invalid')
    print('step  ' + '  '.join('{:>10}'.format(n) for n in names))
    for step in sorted(verdicts):
        print('{:>4}  '.format(step) + '  '.join('{:>10}'.format(verdicts[step][n]) for n in names))
    total = sum(sum(v.values()) for v in verdicts.values())
    print('{} gradings; invalid by code: {}'.format(total, dict(invalid)))
    print('failing checks, most frequent first:')
    for check, n in by_check.most_common(40):
        print('  {:5d}  {}'.format(n, check))
    if markdown:
        lines = ['| step | submission | check | message | true/false, why |', '|---|---|---|---|---|']
        for step, sub, check, message in sheet:
            lines.append('| {} | {} | {} | {} | |'.format(step, sub, check,
                                                          message.replace('|', '\\|')))
        markdown.write_text('\n'.join(lines) + '\n', encoding='utf-8')
        print('review sheet: {} ({} rows)'.format(markdown, len(sheet)))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    sub = p.add_subparsers(dest='cmd', required=True)
    a = sub.add_parser('prepare')
    a.add_argument('repos', type=Path)
    a.add_argument('subs', type=Path)
    g = sub.add_parser('grade')
    g.add_argument('subs', type=Path)
    g.add_argument('out', type=Path)
    g.add_argument('--steps', default='52-60')
    g.add_argument('--jobs', type=int, default=2)
    r = sub.add_parser('report')
    r.add_argument('out', type=Path)
    r.add_argument('--markdown', type=Path)
    args, extra = p.parse_known_args(argv)
    if args.cmd == 'prepare':
        prepare(args.repos, args.subs)
    elif args.cmd == 'grade':
        grade(args.subs, args.out, _steps(args.steps), args.jobs, extra)
    else:
        report(args.out, args.markdown)
    return 0


if __name__ == '__main__':
    sys.exit(main())
