"""The Gradescope autograder: the folder an instructor uploads, and what runs in it per submission.

`write_folder(dest, step, ...)` writes a folder ready for Gradescope (and a zip of it beside, the
files at the zip's root as Gradescope requires): `setup.sh` (run once when Gradescope builds the
image: installs the dependencies, warms the reference cache), `run_autograder` (run for every
submission), `requirements.txt`, and a copy of the grader itself (`dezero_grader/`, with the
reference, the schemas and the assignments inside, as installed), so nothing is downloaded at
grading time.

`main()` is what `run_autograder` calls: grade the submission folder, then write
`results.json` through the Gradescope exporter. The course's grading policy, when the folder was
written with one, is `policy.json` beside the grader; Gradescope's `submission_metadata.json`
(the submission time, the due date — a learner's own extension first) feeds its late penalty.
A submission uploaded as the files of `dezero/` without the folder (Gradescope's drag and drop)
is recognised by the loader (`dezero_grader.intake.load`). Gradescope's paths are the defaults; the
environment overrides them (`DEZERO_AUTOGRADER_ROOT`, `DEZERO_SUBMISSION_DIR`,
`DEZERO_RESULTS_DIR`, `DEZERO_SOURCE_DIR`, `DEZERO_PYTHON`), which is how it is run locally
against a temporary folder laid out like `/autograder`. A failure of the grader itself still
ends in a valid results.json with a plain message for the learner; the traceback goes to the
autograder's stdout, which Gradescope shows to instructors only.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import sys
import traceback
import zipfile
from pathlib import Path

from dezero_grader.export import gradescope
from dezero_grader.records import schema

DEFAULT_ROOT = '/autograder'
POLICY_FILE = 'policy.json'
REQUIREMENTS = ('numpy>=1.26', 'jsonschema>=4.18', 'matplotlib>=3.5', 'pillow>=9')
GRADER_FAILED = ('The autograder could not grade this submission because of a problem in the '
                 'grader itself, not in your code: this is not a grade, and it will be regraded. '
                 'Your instructor can see the details; please let them know.')

_RUN = r'''#!/usr/bin/env bash
# Gradescope runs this once per submission (copied to /autograder/run_autograder, working
# directory /autograder). It grades the submission for step {step} and writes
# results/results.json. Every path can be overridden from the environment, which is how it runs
# locally against a temporary folder laid out like /autograder:
#   DEZERO_AUTOGRADER_ROOT  the /autograder folder itself
#   DEZERO_SOURCE_DIR       this folder, unzipped (default: $DEZERO_AUTOGRADER_ROOT/source)
#   DEZERO_SUBMISSION_DIR   the learner's files (default: $DEZERO_AUTOGRADER_ROOT/submission)
#   DEZERO_RESULTS_DIR      where results.json goes (default: $DEZERO_AUTOGRADER_ROOT/results)
#   DEZERO_PYTHON           the interpreter (default: python3)
#   DEZERO_METADATA_FILE    Gradescope's submission metadata
#                           (default: $DEZERO_AUTOGRADER_ROOT/submission_metadata.json)
set -u
ROOT="${{DEZERO_AUTOGRADER_ROOT:-{root}}}"
SOURCE="${{DEZERO_SOURCE_DIR:-$ROOT/source}}"
export DEZERO_SUBMISSION_DIR="${{DEZERO_SUBMISSION_DIR:-$ROOT/submission}}"
export DEZERO_RESULTS_DIR="${{DEZERO_RESULTS_DIR:-$ROOT/results}}"
export DEZERO_METADATA_FILE="${{DEZERO_METADATA_FILE:-$ROOT/submission_metadata.json}}"
export DEZERO_GRADER_CACHE="${{DEZERO_GRADER_CACHE:-$SOURCE/.cache}}"
PYTHON="${{DEZERO_PYTHON:-python3}}"
# the course secret keys every seed (written with export --autograder --secret-file)
if [ -f "$SOURCE/course-secret" ]; then export DEZERO_GRADER_SECRET_FILE="$SOURCE/course-secret"; fi
mkdir -p "$DEZERO_RESULTS_DIR"
PYTHONPATH="$SOURCE${{PYTHONPATH:+:$PYTHONPATH}}" "$PYTHON" "$SOURCE/start_grader.py" \
    --step {step} --profile {profile} --era {era} --timeout {timeout} --memory {memory} \
    {visibility}--sandbox {sandbox} --policy "$SOURCE/policy.json"
if [ ! -s "$DEZERO_RESULTS_DIR/results.json" ]; then
    # The grader could not even start: the learner still gets a clean message.
    cat > "$DEZERO_RESULTS_DIR/results.json" <<'JSON'
{failed}
JSON
fi
exit 0
'''

_SETUP = r'''#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image: install the grader's
# dependencies, then grade the reference once so that the reference observations every
# submission is compared with are already cached in the image.
set -eu
SOURCE="${{DEZERO_SOURCE_DIR:-{root}/source}}"
PYTHON="${{DEZERO_PYTHON:-python3}}"
if ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
    apt-get install -y python3-pip
fi
# the code of every student is graded on this image: in bubblewrap, unless the folder was
# written with --sandbox basic
if ! command -v bwrap >/dev/null 2>&1; then
    (apt-get update && apt-get install -y bubblewrap) || echo "setup.sh: could not install bubblewrap"
fi
"$PYTHON" -m pip install --no-cache-dir -r "$SOURCE/requirements.txt" \
    || "$PYTHON" -m pip install --no-cache-dir --break-system-packages -r "$SOURCE/requirements.txt"
DEZERO_GRADER_CACHE="$SOURCE/.cache" PYTHONPATH="$SOURCE" \
    "$PYTHON" -m dezero_grader check "$SOURCE/dezero_grader/reference" --step {step} > /dev/null || true
'''


_START = r'''"""Run the autograder with the grader this folder ships, even where another copy of
dezero-grader is installed (an editable install's import hook would otherwise win)."""
import os
import runpy
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.meta_path[:] = [f for f in sys.meta_path
                    if '__editable__' not in (getattr(f, '__module__', '') or '')]
runpy.run_module('dezero_grader.export.autograder', run_name='__main__', alter_sys=True)
'''


def _ignore(folder, names):
    return [n for n in names if n == '__pycache__' or n.endswith(('.pyc', '.pyo'))]


def _copy_grader(dest: Path) -> None:
    """The package as an installed one is laid out: `dezero_grader/` holding the reference, the
    schemas and the assignments (a source checkout keeps those at the top, mapped in)."""
    import dezero_grader
    from dezero_grader import reference
    package = dest / 'dezero_grader'
    shutil.copytree(Path(dezero_grader.__file__).resolve().parent, package, ignore=_ignore)
    for source, name in ((Path(reference.ROOT), 'reference'), (schema.data_dir('schemas'), 'schemas'),
                         (schema.data_dir('assignments'), 'assignment_files')):
        if not (package / name).is_dir():
            shutil.copytree(source.resolve(), package / name, ignore=_ignore)


def _executable(path: Path, text: str) -> None:
    path.write_text(text, encoding='utf-8')
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def write_folder(dest, step: int, *, profile: str = 'book', era: str = 'book',
                 timeout_s: float = 30.0, memory_mb: int = 4096, visibility: str | None = None,
                 sandbox: str = 'auto', secret_file=None, policy_file=None,
                 make_zip: bool = True) -> Path:
    """Write the autograder folder (and `<dest>.zip`); returns the folder."""
    from dezero_grader.catalogue import assignments
    assignments.load(step)   # an unknown step fails here, not on Gradescope
    if visibility is not None and visibility not in gradescope.VISIBILITIES:
        raise ValueError('visibility must be one of {}'.format(gradescope.VISIBILITIES))
    from dezero_grader.scoring import policy
    course = policy.load(policy_file) if policy_file is not None else None   # checked here
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError('{} exists and is not empty; name a new folder'.format(dest))
    dest.mkdir(parents=True, exist_ok=True)
    _copy_grader(dest)
    (dest / 'requirements.txt').write_text('\n'.join(REQUIREMENTS) + '\n', encoding='utf-8')
    if era not in ('book', 'current'):
        raise ValueError('era must be book or current')
    if sandbox not in ('auto', 'bubblewrap', 'basic'):
        raise ValueError('sandbox must be auto, bubblewrap or basic')
    values = dict(step=step, profile=profile, era=era, timeout=timeout_s, memory=memory_mb,
                  visibility='--visibility {} '.format(visibility) if visibility else '',
                  sandbox=sandbox, root=DEFAULT_ROOT,
                  failed=json.dumps(gradescope.grading_failed(GRADER_FAILED, 'not-started')))
    if course is not None:
        schema.write_json(dest / POLICY_FILE, course.document, policy.SCHEMA)
    if secret_file is not None:
        secret = Path(secret_file).read_bytes().strip()
        if not secret:
            raise ValueError('the course secret file {} is empty'.format(secret_file))
        (dest / 'course-secret').write_bytes(secret)
        (dest / 'course-secret').chmod(0o600)
    (dest / 'start_grader.py').write_text(_START, encoding='utf-8')
    _executable(dest / 'run_autograder', _RUN.format(**values))
    _executable(dest / 'setup.sh', _SETUP.format(**values))
    if make_zip:
        _zip(dest, dest.parent / (dest.name + '.zip'))
    return dest


def _zip(folder: Path, target: Path) -> None:
    tmp = target.with_name('.' + target.name + '.tmp')
    with zipfile.ZipFile(tmp, 'w', zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob('*')):
            if path.is_file():
                info = zipfile.ZipInfo.from_file(path, path.relative_to(folder).as_posix())
                with open(path, 'rb') as f:
                    archive.writestr(info, f.read(), zipfile.ZIP_DEFLATED)
    os.replace(tmp, target)


# -- inside Gradescope ----------------------------------------------------------------------------

def _submission(folder: Path) -> Path:
    """What to grade: the folder, or the one zip it holds when the learner uploaded a zip."""
    entries = [e for e in folder.iterdir() if not e.name.startswith('.')] if folder.is_dir() else []
    if len(entries) == 1 and entries[0].is_file() and entries[0].suffix.lower() == '.zip':
        return entries[0]
    return folder


def _metadata(path: Path) -> dict | None:
    """Gradescope's submission_metadata.json, or None where there is none (a local run)."""
    try:
        with open(path, encoding='utf-8') as f:
            doc = json.load(f)
    except FileNotFoundError:
        return None
    return doc if isinstance(doc, dict) else None


def _fallback(results_path: Path, error: BaseException) -> None:
    schema.write_json(results_path, gradescope.grading_failed(GRADER_FAILED, type(error).__name__),
                      gradescope.SCHEMA)


def main(argv=None) -> int:
    env = os.environ
    root = Path(env.get('DEZERO_AUTOGRADER_ROOT', DEFAULT_ROOT))
    p = argparse.ArgumentParser(prog='python -m dezero_grader.export.autograder',
                                description='Grade one Gradescope submission into results.json.')
    p.add_argument('--step', type=int, required=True)
    p.add_argument('--profile', choices=('book', 'extension'), default='book')
    p.add_argument('--era', choices=('book', 'current'), default='book')
    p.add_argument('--timeout', type=float, default=30.0)
    p.add_argument('--memory', type=int, default=4096)
    p.add_argument('--visibility', choices=gradescope.VISIBILITIES, default=None)
    p.add_argument('--policy', help='the course policy file (absent: the default policy)')
    p.add_argument('--metadata', default=env.get('DEZERO_METADATA_FILE',
                                                 str(root / 'submission_metadata.json')))
    p.add_argument('--sandbox', choices=('auto', 'bubblewrap', 'basic'), default='auto')
    p.add_argument('--submission', default=env.get('DEZERO_SUBMISSION_DIR', str(root / 'submission')))
    p.add_argument('--results', default=env.get('DEZERO_RESULTS_DIR', str(root / 'results')))
    args = p.parse_args(argv)
    results_path = Path(args.results) / 'results.json'
    try:
        import dataclasses
        from dezero_grader import batch
        from dezero_grader.grading import run
        from dezero_grader.present import terminal
        from dezero_grader.scoring import policy
        course = policy.load(args.policy if args.policy and Path(args.policy).is_file() else None)
        options = batch.BatchOptions.from_cli(args.step, profile=args.profile, era=args.era,
                                              timeout_s=args.timeout, memory_mb=args.memory,
                                              sandbox=args.sandbox, policy=course)
        timing = policy.timing(course, metadata=_metadata(Path(args.metadata)))
        doc = run.grade(_submission(Path(args.submission)), args.step,
                        dataclasses.replace(options.run_options(), timing=timing))
        gradescope.write(results_path, doc, visibility=args.visibility, output_format='md')
        sys.stdout.write(terminal.render(doc))
    except BaseException as exc:   # the learner must get a results.json whatever happened
        traceback.print_exc(file=sys.stdout)
        _fallback(results_path, exc)
        if isinstance(exc, KeyboardInterrupt):
            raise
    return 0


if __name__ == '__main__':
    sys.exit(main())
