"""Loading submissions: entry points, content identity, safe zip extraction, scratch copies."""

import os
import stat
import sys
import zipfile
from pathlib import Path

import pytest

from dezero_grader.errors import GraderError, SubmissionError
from dezero_grader.intake.archive import safe_extract
from dezero_grader.intake.load import Entry, content_hash, find_entry, prepare


def make(root: Path, files: dict) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def make_zip(path: Path, entries: list) -> Path:
    """``entries``: (name, bytes) pairs."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            zf.writestr(name, data)
    return path


def refused(code: str, fn, *args, **kw) -> SubmissionError:
    with pytest.raises(SubmissionError) as info:
        fn(*args, **kw)
    assert info.value.code == code, info.value.message
    return info.value


PACKAGE = {"dezero/__init__.py": "from dezero.core import Variable\n", "dezero/core.py": "class Variable: pass\n"}


# -- find_entry -----------------------------------------------------------------------------------

def test_package_at_the_root(tmp_path):
    make(tmp_path, PACKAGE)
    assert find_entry(tmp_path, 23) == Entry("package", "dezero", "dezero", ".")


def test_package_inside_one_wrapper_folder(tmp_path):
    make(tmp_path, {f"alice/{k}": v for k, v in PACKAGE.items()} | {"notes/readme.txt": "", "__MACOSX/x": ""})
    assert find_entry(tmp_path, 60) == Entry("package", "dezero", "alice/dezero", "alice")


def test_root_package_wins_over_a_wrapped_one(tmp_path):
    make(tmp_path, PACKAGE | {f"old/{k}": v for k, v in PACKAGE.items()})
    assert find_entry(tmp_path, 30).path == "dezero"


def test_two_wrapped_packages_are_ambiguous(tmp_path):
    make(tmp_path, {f"{who}/{k}": v for who in ("a", "b") for k, v in PACKAGE.items()})
    error = refused("ambiguous-entry", find_entry, tmp_path, 23)
    assert "a/" in error.message and "b/" in error.message


def test_missing_package_names_what_was_expected_and_found(tmp_path):
    make(tmp_path, {"dezero/core.py": "", "step22.py": "", "README.md": ""})
    error = refused("no-entry", find_entry, tmp_path, 23)
    assert "dezero/" in error.message and "__init__.py" in error.message
    assert "has no __init__.py" in error.message
    assert "README.md, dezero/, step22.py" in error.message


@pytest.mark.parametrize("rel, entry", [
    ("step09.py", Entry("single-file", "step09", "step09.py", ".")),
    ("step9.py", Entry("single-file", "step9", "step9.py", ".")),
    ("steps/step09.py", Entry("single-file", "step09", "steps/step09.py", "steps")),
    ("bob/steps/step09.py", Entry("single-file", "step09", "bob/steps/step09.py", "bob/steps")),
    ("bob/step09.py", Entry("single-file", "step09", "bob/step09.py", "bob")),
])
def test_single_file_steps(tmp_path, rel, entry):
    make(tmp_path, {rel: "x = 1\n", "helpers.py": ""})
    assert find_entry(tmp_path, 9) == entry


def test_two_digit_single_file_step(tmp_path):
    make(tmp_path, {"step1.py": "", "step12.py": ""})
    assert find_entry(tmp_path, 12).module == "step12"


def test_both_spellings_of_a_step_are_ambiguous(tmp_path):
    make(tmp_path, {"step09.py": "", "steps/step09.py": ""})
    refused("ambiguous-entry", find_entry, tmp_path, 9)


def test_missing_step_file_lists_the_near_misses(tmp_path):
    make(tmp_path, {"steps/step08.py": "", "steps/step10.py": "", "Step 9 final.py": ""})
    error = refused("no-entry", find_entry, tmp_path, 9)
    assert "step09.py or step9.py" in error.message
    assert "steps/step08.py, steps/step10.py" in error.message


def test_listing_in_messages_is_bounded(tmp_path):
    make(tmp_path, {f"f{i:02d}.txt": "" for i in range(30)})
    error = refused("no-entry", find_entry, tmp_path, 3)
    assert "f00.txt" in error.message and "and 22 more" in error.message and "f29.txt" not in error.message


def test_empty_folder(tmp_path):
    assert "an empty folder" in refused("no-entry", find_entry, tmp_path, 40).message


@pytest.mark.parametrize("step", [0, 61, "9", True])
def test_impossible_step_is_our_bug(tmp_path, step):
    with pytest.raises(GraderError):
        find_entry(tmp_path, step)


# -- content_hash ---------------------------------------------------------------------------------

# sha256 over, in path order: 8-byte length + path, then for a file 8-byte size + bytes (a folder's
# path ends in / and is all there is of it). Pinned: a change of format would make old
# scorecards' identities unmatchable.
PINNED_HASH = "sha256:7c30f2024a41a711675b35e4da9fd93ce553c235a432e01405170cc3a8aab319"


def test_content_hash_is_pinned_and_ignores_caches_and_metadata(tmp_path):
    a = make(tmp_path / "a", {"dezero/__init__.py": "x = 1\n", "steps/step23.py": "import dezero\n"})
    assert content_hash(a) == PINNED_HASH
    b = make(tmp_path / "b", {"steps/step23.py": "import dezero\n", "dezero/__init__.py": "x = 1\n",
                              "dezero/__pycache__/core.cpython-311.pyc": "junk", "other.pyc": "junk",
                              ".git/HEAD": "ref", ".DS_Store": "junk", "venv/pyvenv.cfg": "home = x",
                              "venv/lib/site.py": "junk"})
    os.chmod(b / "steps/step23.py", 0o755)
    assert content_hash(b) == PINNED_HASH


def test_content_hash_sees_every_change(tmp_path):
    root = make(tmp_path, {"a.py": "1", "b/c.py": "2"})
    before = content_hash(root)
    (root / "b/c.py").write_text("3")
    changed = content_hash(root)
    (root / "b/c.py").rename(root / "b/d.py")
    renamed = content_hash(root)
    (root / "e.py").write_text("")
    added = content_hash(root)
    (root / "empty").mkdir()
    folder = content_hash(root)
    assert len({before, changed, renamed, added, folder}) == 5


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_content_hash_does_not_follow_links(tmp_path):
    root = make(tmp_path / "root", {"a.py": "1"})
    before = content_hash(root)
    make(tmp_path / "elsewhere", {"secret.txt": "s"})
    os.symlink(tmp_path / "elsewhere", root / "link")
    os.symlink(tmp_path / "elsewhere/secret.txt", root / "file_link")
    assert content_hash(root) == before


# -- safe_extract ---------------------------------------------------------------------------------

def test_extracts_a_plain_zip(tmp_path):
    archive = make_zip(tmp_path / "s.zip", [("alice/", b""), ("alice/dezero/__init__.py", b"x = 1\n"),
                                            ("alice/./dezero/../dezero/core.py", b"y = 2\n")])
    dest = tmp_path / "out"
    assert safe_extract(archive, dest) == 2
    assert (dest / "alice/dezero/__init__.py").read_text() == "x = 1\n"
    assert (dest / "alice/dezero/core.py").read_text() == "y = 2\n"


def assert_nothing_extracted(tmp_path, dest):
    assert not dest.exists() or not any(dest.iterdir())
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]


@pytest.mark.parametrize("name", ["../evil.py", "a/../../evil.py", "/etc/evil.py", "C:/evil.py", "c:evil.py",
                                  "..\\evil.py", "a\\..\\..\\evil.py"])
def test_refuses_entries_that_escape(tmp_path, name):
    archive = make_zip(tmp_path / "s.zip", [("ok.py", b"fine"), (name, b"evil")])
    dest = tmp_path / "out"
    refused("unsafe-archive", safe_extract, archive, dest)
    assert_nothing_extracted(tmp_path, dest)
    assert not (tmp_path / "evil.py").exists()


@pytest.mark.parametrize("kind", [stat.S_IFLNK, stat.S_IFCHR, stat.S_IFBLK, stat.S_IFIFO])
def test_refuses_links_and_device_files(tmp_path, kind):
    info = zipfile.ZipInfo("dezero/core.py")
    info.external_attr = (kind | 0o777) << 16
    with zipfile.ZipFile(tmp_path / "s.zip", "w") as zf:
        zf.writestr("dezero/__init__.py", b"")
        zf.writestr(info, b"/etc/passwd")
    dest = tmp_path / "out"
    refused("unsafe-archive", safe_extract, tmp_path / "s.zip", dest)
    assert_nothing_extracted(tmp_path, dest)


def test_refuses_too_many_entries(tmp_path):
    archive = make_zip(tmp_path / "s.zip", [(f"f{i}.py", b"") for i in range(11)])
    assert "11 entries" in refused("archive-too-large", safe_extract, archive, tmp_path / "out", max_files=10).message


def test_refuses_declared_sizes_over_the_bound(tmp_path):
    archive = make_zip(tmp_path / "s.zip", [("a.bin", os.urandom(600)), ("b.bin", os.urandom(600))])
    refused("archive-too-large", safe_extract, archive, tmp_path / "out", max_total_bytes=1000)
    assert_nothing_extracted(tmp_path, tmp_path / "out")


def test_refuses_a_zip_bomb_by_its_ratio(tmp_path):
    archive = make_zip(tmp_path / "s.zip", [("zeros.bin", b"\0" * (4 * 2**20))])
    error = refused("archive-too-large", safe_extract, archive, tmp_path / "out")
    assert "zip bomb" in error.message


def test_small_highly_compressible_files_are_fine(tmp_path):
    archive = make_zip(tmp_path / "s.zip", [("weights.npy", b"\0" * 100_000), ("a.py", b"x = 1\n")])
    assert safe_extract(archive, tmp_path / "out") == 2


def _patch_central(path: Path, offset: int, value: bytes) -> None:
    data = bytearray(path.read_bytes())
    at = data.index(b"PK\x01\x02")
    data[at + offset:at + offset + len(value)] = value
    path.write_bytes(bytes(data))


def test_a_header_that_understates_the_size_is_refused(tmp_path):
    archive = make_zip(tmp_path / "s.zip", [("a.py", b"x" * 5000)])
    _patch_central(archive, 24, (10).to_bytes(4, "little"))  # uncompressed size
    refused("bad-archive", safe_extract, archive, tmp_path / "out")
    assert_nothing_extracted(tmp_path, tmp_path / "out")


def test_encrypted_entries_are_refused(tmp_path):
    archive = make_zip(tmp_path / "s.zip", [("a.py", b"x")])
    _patch_central(archive, 8, b"\x01")  # general purpose flag: encrypted
    assert "password" in refused("bad-archive", safe_extract, archive, tmp_path / "out").message


def test_duplicate_names_are_refused(tmp_path):
    with pytest.warns(UserWarning):
        archive = make_zip(tmp_path / "s.zip", [("a.py", b"1"), ("a.py", b"2")])
    refused("bad-archive", safe_extract, archive, tmp_path / "out")


def test_a_file_that_is_not_a_zip(tmp_path):
    (tmp_path / "s.zip").write_bytes(b"this is not a zip archive at all")
    refused("bad-archive", safe_extract, tmp_path / "s.zip", tmp_path / "out")


def test_destination_must_be_absent_or_empty(tmp_path):
    archive = make_zip(tmp_path / "s.zip", [("a.py", b"1")])
    make(tmp_path / "out", {"existing.txt": ""})
    with pytest.raises(GraderError):
        safe_extract(archive, tmp_path / "out")
    (tmp_path / "empty").mkdir()
    assert safe_extract(archive, tmp_path / "empty") == 1


# -- prepare --------------------------------------------------------------------------------------

def test_prepare_copies_a_folder_into_a_fresh_scratch_folder(tmp_path):
    source = make(tmp_path / "alice", PACKAGE | {"data/x.txt": "d", "dezero/__pycache__/c.pyc": "junk"})
    scratch = tmp_path / "scratch"
    first = prepare(source, 23, scratch)
    second = prepare(source, 23, scratch)
    assert first.root != second.root and first.root.parent == scratch == second.root.parent
    assert first.id == "alice" and first.source == source and first.files == 3
    assert first.entry == Entry("package", "dezero", "dezero", ".")
    assert first.content_hash == content_hash(source) == second.content_hash
    assert not (first.root / "dezero/__pycache__").exists()
    (first.root / "dezero/core.py").write_text("changed by the learner's code")
    assert (source / "dezero/core.py").read_text() == PACKAGE["dezero/core.py"]


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_prepare_skips_links_and_names_them(tmp_path):
    outside = make(tmp_path / "outside", {"secret.txt": "s", "dezero/__init__.py": ""})
    source = make(tmp_path / "bob", {"step09.py": ""})
    os.symlink(outside / "secret.txt", source / "secret.txt")
    os.symlink(outside, source / "everything")
    sub = prepare(source, 9, tmp_path / "scratch")
    assert set(sub.skipped) == {"secret.txt", "everything"}
    assert sorted(p.name for p in sub.root.iterdir()) == ["step09.py"]


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_a_linked_package_is_explained(tmp_path):
    outside = make(tmp_path / "outside", PACKAGE)
    source = tmp_path / "carol"
    source.mkdir()
    os.symlink(outside / "dezero", source / "dezero")
    error = refused("no-entry", prepare, source, 23, tmp_path / "scratch")
    assert "symbolic links" in error.message and "dezero" in error.message
    assert list((tmp_path / "scratch").iterdir()) == []


def test_prepare_extracts_a_zip(tmp_path):
    archive = make_zip(tmp_path / "dave-step23.zip", [(f"dave/{k}", v.encode()) for k, v in PACKAGE.items()])
    sub = prepare(archive, 23, tmp_path / "scratch")
    assert sub.id == "dave-step23" and sub.files == 2
    assert sub.entry == Entry("package", "dezero", "dave/dezero", "dave")
    assert (sub.root / "dave/dezero/core.py").read_text() == PACKAGE["dezero/core.py"]


def test_prepare_leaves_nothing_behind_on_refusal(tmp_path):
    source = make(tmp_path / "erin", {"readme.txt": "no code"})
    refused("no-entry", prepare, source, 5, tmp_path / "scratch")
    archive = make_zip(tmp_path / "bad.zip", [("../x.py", b"")])
    refused("unsafe-archive", prepare, archive, 5, tmp_path / "scratch")
    assert list((tmp_path / "scratch").iterdir()) == []


def test_prepare_bounds_folder_copies(tmp_path):
    source = make(tmp_path / "frank", {f"data/{i}.txt": "x" * 100 for i in range(5)} | {"step01.py": ""})
    error = refused("archive-too-large", prepare, source, 1, tmp_path / "scratch", max_files=3)
    assert "data" in error.message  # names where the bulk is
    refused("archive-too-large", prepare, source, 1, tmp_path / "scratch", max_total_bytes=250)
    assert list((tmp_path / "scratch").iterdir()) == []


def test_prepare_missing_and_unsupported_sources(tmp_path):
    assert str(tmp_path / "nope") in refused("not-found", prepare, tmp_path / "nope", 1, tmp_path / "s").message
    (tmp_path / "step01.py").write_text("")
    error = refused("not-a-submission", prepare, tmp_path / "step01.py", 1, tmp_path / "s")
    assert "folder or a .zip" in error.message and "step01.py" in error.message
    (tmp_path / "broken.zip").write_bytes(b"PK\x03\x04 truncated")
    refused("bad-archive", prepare, tmp_path / "broken.zip", 1, tmp_path / "s")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_prepare_refuses_a_fifo_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    refused("not-a-submission", prepare, tmp_path / "pipe", 1, tmp_path / "s")


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root reads everything")
def test_unreadable_file_in_a_submission(tmp_path):
    source = make(tmp_path / "gina", {"step01.py": "", "secret.py": ""})
    os.chmod(source / "secret.py", 0)
    refused("unreadable", prepare, source, 1, tmp_path / "s")


def test_the_same_code_zipped_with_its_top_folder_has_the_folders_hash(tmp_path):
    # a zip of `alice/` holds `alice/dezero/...`: its name, and the zipping, must not change the
    # content hash, which the seed is derived from (issue 23)
    folder = tmp_path / "alice"
    (folder / "dezero").mkdir(parents=True)
    (folder / "dezero" / "__init__.py").write_text("x = 1\n")
    (folder / "dezero" / "core.py").write_text("y = 2\n")
    wrapped = make_zip(tmp_path / "w.zip", [("mywork/", b""), ("mywork/dezero/__init__.py", b"x = 1\n"),
                                            ("mywork/dezero/core.py", b"y = 2\n")])
    flat = make_zip(tmp_path / "f.zip", [("dezero/__init__.py", b"x = 1\n"), ("dezero/core.py", b"y = 2\n")])
    hashes = {prepare(p, 52, tmp_path / ("s" + str(i))).content_hash
              for i, p in enumerate((folder, wrapped, flat))}
    assert len(hashes) == 1
    # beside another top-level entry the wrapper is part of what was handed in
    other = make_zip(tmp_path / "o.zip", [("mywork/dezero/__init__.py", b"x = 1\n"),
                                          ("mywork/dezero/core.py", b"y = 2\n"), ("notes.txt", b"hi")])
    assert prepare(other, 52, tmp_path / "o").content_hash not in hashes


def test_a_wrapped_step_file_has_the_hash_of_the_folder_it_was_in(tmp_path):
    folder = tmp_path / "bob"
    (folder / "steps").mkdir(parents=True)
    (folder / "steps" / "step09.py").write_text("z = 3\n")
    wrapped = make_zip(tmp_path / "b.zip", [("bob/steps/step09.py", b"z = 3\n")])
    assert prepare(folder, 9, tmp_path / "a").content_hash == prepare(wrapped, 9, tmp_path / "b").content_hash
