"""Schemas as package data, validation, and atomic JSON writes — the JSON edge of the grader.

Every JSON document the product writes goes through `write_json`, which validates it against
its schema first and then replaces the target atomically (temporary file in the same folder,
fsync, rename): a reader never sees half a file, and a crash leaves the old file or none.
"""
from __future__ import annotations

import functools
import json
import os
import tempfile
from pathlib import Path

import jsonschema

from dezero_grader.errors import GraderError


def data_dir(name: str) -> Path:
    """The folder of a data package (`schemas`, `assignments`): installed inside `dezero_grader`, or at
    the top of a source checkout."""
    package = {'schemas': 'dezero_grader.schemas', 'assignments': 'dezero_grader.assignment_files'}[name]
    try:
        from importlib import resources
        path = Path(str(resources.files(package)))
        if path.is_dir():
            return path
    except (ModuleNotFoundError, TypeError):
        pass
    path = Path(__file__).resolve().parents[2] / name
    if path.is_dir():
        return path
    raise GraderError('data folder {!r} not found: reinstall dezero-grader'.format(name))


@functools.lru_cache(maxsize=None)
def validator(name: str):
    with open(data_dir('schemas') / (name + '.schema.json'), encoding='utf-8') as f:
        schema = json.load(f)
    cls = jsonschema.Draft202012Validator
    # every schema is held against the metaschema by tests/unit/test_schemas.py, once, not here:
    # that costs a quarter of a second of every grading
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def errors(name: str, document) -> list[str]:
    """Every schema violation, as 'at <path>: <message>' lines (empty when valid)."""
    out = []
    for e in sorted(validator(name).iter_errors(document), key=lambda e: list(e.path)):
        where = '/'.join(str(p) for p in e.path) or '(top)'
        out.append('at {}: {}'.format(where, e.message))
    return out


def validate(name: str, document) -> None:
    """Raise GraderError when a document we built does not follow its schema (our bug)."""
    problems = errors(name, document)
    if problems:
        raise GraderError('a {} document failed its schema: {}'.format(name, '; '.join(problems[:5])))


class DocumentError(ValueError):
    """A document given to the grader (a scorecard, summary, policy) cannot be read as one."""


def read_document(path, name: str) -> dict:
    """A JSON document of the grader's (or an instructor's) file, validated against the schema
    `name`; DocumentError says what is wrong with it."""
    path = Path(path)
    try:
        with open(path, encoding='utf-8-sig') as f:   # a BOM, as some editors save
            document = json.load(f)
    except FileNotFoundError:
        raise DocumentError('{} does not exist'.format(path)) from None
    except (OSError, ValueError, RecursionError) as exc:
        raise DocumentError('{} cannot be read as JSON: {}'.format(path, exc)) from None
    problems = errors(name, document)
    if problems:
        raise DocumentError('{} is not a valid {} document: {}'.format(
            path, name, '; '.join(problems[:3])))
    return document


def dumps(document) -> str:
    return json.dumps(document, indent=2, sort_keys=False, ensure_ascii=False, allow_nan=False) + '\n'


# How every text file of the grader is encoded: UTF-8, and a character UTF-8 cannot hold (a lone
# surrogate, from a learner's exception message or a file name that is not UTF-8) written as its
# escape `\udc80`. In a JSON string that escape is JSON's own, so the document reads back as it
# was; in HTML, CSV, XML or DOT it is shown as text. Nothing is dropped, no writer fails.
ENCODING, ERRORS = 'utf-8', 'backslashreplace'


def write_text_atomic(path, text: str) -> None:
    """Write `text` to `path` atomically (temporary file, fsync, rename), encoded as every text
    of the grader is (`ENCODING`, `ERRORS`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix='.' + path.name + '.', suffix='.tmp', dir=path.parent)
    try:
        os.chmod(tmp, 0o644)   # mkstemp makes it private; results are meant to be shared
        with os.fdopen(fd, 'w', encoding=ENCODING, errors=ERRORS) as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path, document, schema: str) -> None:
    """Validate `document` against `schema`, then write it atomically."""
    validate(schema, document)
    write_text_atomic(path, dumps(document))
