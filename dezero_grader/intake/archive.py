"""Extracting a learner's zip archive safely: the one place the grader writes files an archive names.

``safe_extract`` checks every entry before writing a byte: no path that climbs out of the folder,
no absolute path, no link, device, pipe or socket, no password, no name twice, at most
``MAX_FILES`` (10 000) entries and ``MAX_TOTAL_BYTES`` (200 MiB) of data, and no entry over 1 MiB
(nor the archive as a whole) compressed more than ``MAX_RATIO`` (200) times. Data are
stream-copied with a running count, so headers that understate sizes cannot get past the bound,
and the result appears in place only when complete. The same bounds apply to a folder copied by
``dezero_grader.intake.load``. Every refusal is a ``SubmissionError`` a learner can act on.
"""
from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import tempfile
import zipfile
import zlib
from pathlib import Path

from dezero_grader.errors import GraderError, SubmissionError

MAX_TOTAL_BYTES = 200 * 1024 * 1024
MAX_FILES = 10_000
MAX_RATIO = 200
RATIO_MIN_ENTRY_BYTES = 1024 * 1024  # small files of zeros legitimately compress >200x
CHUNK = 1024 * 1024


def safe_extract(zip_path: Path, dest: Path, *, max_total_bytes: int = MAX_TOTAL_BYTES,
                 max_files: int = MAX_FILES, max_ratio: float = MAX_RATIO) -> int:
    """Extract ``zip_path`` into ``dest`` (absent or empty) and return the number of files.

    Every entry is checked before anything is written; data are stream-copied with a running
    byte count, so a header that lies about sizes cannot exceed ``max_total_bytes`` either.
    Extraction happens in a sibling folder renamed into place at the end: on refusal ``dest``
    is left as it was.
    """
    zip_path, dest = Path(zip_path), Path(dest)
    label = zip_path.name
    try:
        archive = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as exc:
        raise SubmissionError("bad-archive", f"{label} is not a readable zip archive ({exc})") from None
    with archive:
        plan = _plan(archive, label, max_total_bytes, max_files, max_ratio)
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            raise GraderError(f"safe_extract needs an absent or empty destination, found {dest}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.partial-", dir=dest.parent))
        try:
            files = _write(archive, plan, staging, label, max_total_bytes)
            if dest.exists():
                dest.rmdir()
            os.rename(staging, dest)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return files


def _plan(archive: zipfile.ZipFile, label: str, max_total: int, max_files: int,
          max_ratio: float) -> list[tuple[zipfile.ZipInfo, str, bool]]:
    infos = archive.infolist()
    if len(infos) > max_files:
        raise SubmissionError("archive-too-large", f"{label} holds {len(infos)} entries; the limit is {max_files}")
    plan, seen, declared, packed = [], {}, 0, 0
    for info in infos:
        raw = info.filename
        rel = _safe_name(raw, label)
        mode = (info.external_attr >> 16) & 0xFFFF
        kind = stat.S_IFMT(mode)
        if kind == stat.S_IFLNK:
            raise SubmissionError("unsafe-archive", f"{label} contains a symbolic link ({raw!r}); "
                                  "zip your files themselves, not links to them")
        if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
            raise SubmissionError("unsafe-archive", f"{label} contains {raw!r}, which is a device, pipe or socket, "
                                  "not a plain file or folder")
        if info.flag_bits & 0x1:
            raise SubmissionError("bad-archive", f"{label} is encrypted ({raw!r} needs a password); "
                                  "zip it again without a password")
        if rel is None:
            continue  # the archive root itself ("./")
        is_dir = raw.endswith(("/", "\\")) or kind == stat.S_IFDIR
        if rel in seen and not (is_dir and seen[rel]):
            raise SubmissionError("bad-archive", f"{label} contains {rel!r} more than once")
        seen[rel] = is_dir
        if not is_dir:
            declared += info.file_size
            packed += info.compress_size
            if declared > max_total:
                raise SubmissionError("archive-too-large", f"{label} expands to more than {max_total // 2**20} MiB; "
                                      "the limit is for code and small data files")
            if info.file_size > RATIO_MIN_ENTRY_BYTES and info.file_size > max_ratio * max(info.compress_size, 1):
                raise SubmissionError("archive-too-large", f"{label}: {rel!r} is compressed "
                                      f"{info.file_size // max(info.compress_size, 1)} times; "
                                      f"the limit is {max_ratio:g} "
                                      "(this looks like a zip bomb)")
        plan.append((info, rel, is_dir))
    if declared > RATIO_MIN_ENTRY_BYTES and declared > max_ratio * max(packed, 1):
        raise SubmissionError("archive-too-large", f"{label} is compressed {declared // max(packed, 1)} times "
                              "as a whole; "
                              f"the limit is {max_ratio:g} (this looks like a zip bomb)")
    return plan


def _safe_name(raw: str, label: str) -> str | None:
    """The entry's normalised relative posix path, or None for the root; refuse escapes."""
    name = raw.replace("\\", "/")
    if "\x00" in name:
        raise SubmissionError("unsafe-archive", f"{label} contains an entry name with a NUL byte ({raw!r})")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise SubmissionError("unsafe-archive", f"{label} contains an absolute path ({raw!r}); "
                              "entries must be relative to the archive")
    parts: list[str] = []
    for part in name.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise SubmissionError("unsafe-archive", f"{label} contains {raw!r}, which climbs out of the folder "
                                      "it is extracted into")
            parts.pop()
            continue
        parts.append(part)
    return "/".join(parts) if parts else None


_NAME_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.ENOTDIR, errno.EISDIR, errno.EEXIST, errno.EINVAL, errno.EILSEQ})


def _write(archive: zipfile.ZipFile, plan, staging: Path, label: str, max_total: int) -> int:
    written, files = 0, 0
    for info, rel, is_dir in plan:
        target = staging / rel
        try:
            if is_dir:
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as src, open(target, "xb") as out:
                while True:
                    chunk = src.read(CHUNK)
                    if not chunk:
                        break
                    written += len(chunk)
                    if written > max_total:
                        raise SubmissionError("archive-too-large", f"{label} expands to more than "
                                              f"{max_total // 2**20} MiB (its headers understate the sizes)")
                    out.write(chunk)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
            raise SubmissionError("bad-archive", f"{label}: {rel!r} cannot be extracted ({exc})") from None
        except OSError as exc:
            if exc.errno not in _NAME_ERRNOS:
                raise
            raise SubmissionError("bad-archive", f"{label}: {rel!r} cannot be written here ({exc.strerror})") from None
        files += 1
    return files
