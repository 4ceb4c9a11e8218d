"""The course secret and the seeds it gives: what makes a grading reproducible for the same code
and unknowable before the code is written.

The pipeline (`run`), the trust rules (`trust`, which hide the secret file from the worker)
and the repro lines (`repro_snippets`, `rerun`) all read these; they live here, below all of them, so
that none of those has to import the pipeline.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import os


SECRET_ENV, SECRET_FILE_ENV = 'DEZERO_GRADER_SECRET', 'DEZERO_GRADER_SECRET_FILE'


def course_secret() -> bytes | None:
    """The course's secret, when the instructor set one: $DEZERO_GRADER_SECRET, or the contents of
    the file $DEZERO_GRADER_SECRET_FILE names. Never shown to the learner's code (its worker gets
    a scrubbed environment, and inside bubblewrap no file of the grader's but dezero_grader/)."""
    value = os.environ.get(SECRET_ENV)
    if value:
        return value.encode('utf-8')
    path = os.environ.get(SECRET_FILE_ENV)
    if path:
        try:
            with open(path, 'rb') as f:
                secret = f.read().strip()
        except OSError as e:
            raise SystemExit('dezero-grade: {} names {}, which cannot be read: {}'.format(
                SECRET_FILE_ENV, path, e.strerror or e))
        if not secret:
            raise SystemExit('dezero-grade: the course secret file {} is empty'.format(path))
        return secret
    return None


NO_SECRET = 'none'


@functools.lru_cache(maxsize=8)
def _secret_digest(secret: bytes) -> str:
    # slow and salted: the digest is written to receipts and caches, which may be shared; it
    # must not help anyone guess the secret (from which every seed follows)
    key = hashlib.pbkdf2_hmac('sha256', secret, b'dezero-grader:course-secret-digest', 200_000)
    return 'pbkdf2-sha256:' + key.hex()


def course_secret_digest(secret: bytes | None = None) -> str:
    """What is recorded of the course secret wherever a grading is reused (batch receipts, the
    history's cache key): `NO_SECRET` without one, else a digest that changes with the secret and
    tells nothing of it. A secret set, changed or removed therefore grades everything again,
    with the seeds it gives. `secret` defaults to the course's (`course_secret`)."""
    secret = course_secret() if secret is None else secret
    return NO_SECRET if secret is None else _secret_digest(secret)


def default_seed(content_hash: str, step: int = 0, secret: bytes | None = None) -> int:
    """Derived from the submission's content: reproducible for the same code, unknowable before
    the code is written (so outputs cannot be hard-coded). With a course secret it is keyed by
    the secret, the content and the step (HMAC-SHA256): nobody without the secret can know it in
    advance, so answers recorded offline at a guessed seed cannot be played back."""
    if secret is None:
        return int(hashlib.sha256(('dezero-grader:' + content_hash).encode()).hexdigest()[:8], 16)
    mac = hmac.new(secret, 'dezero-grader:{}:{}'.format(content_hash, step).encode(), 'sha256')
    return int(mac.hexdigest()[:8], 16)


def check_seed(seed: int, check_id: str) -> int:
    return int(hashlib.sha256('{}:{}'.format(seed, check_id).encode()).hexdigest()[:8], 16)
