"""The graded files of a step at a commit: the `dezero/` package for steps 23-60; the step file
and the modules of the repository it imports for steps 1-22. That subset is the submission
graded, so its content hash is both the seed and the cache key: a commit whose graded files did
not change is never graded again. `Trees` extracts each commit's files once, for the mapping
(does this commit hold the step's file?) and the grading alike.
"""
from __future__ import annotations

import ast
import os
import re
import shutil
from pathlib import Path

from dezero_grader.errors import SubmissionError
from dezero_grader.intake import load
from dezero_grader.intake.gitrepo import Repo, RepoError

STEP_FILE = re.compile(r'^step0*(\d{1,2})\.py$')


class Trees:
    """The files of commits, each extracted once under `folder` (`Repo.extract`)."""

    def __init__(self, repo: Repo, folder: Path):
        self.repo, self.folder = repo, Path(folder)
        self._trees = {}

    def get(self, sha: str):
        """(the folder holding the commit's files, {path: why its content is not there});
        a RepoError when the repository lacks the commit's files."""
        if sha not in self._trees:
            dest = self.folder / sha
            try:
                self._trees[sha] = (dest, self.repo.extract(sha, dest))
            except RepoError as e:
                self._trees[sha] = e
        found = self._trees[sha]
        if isinstance(found, RepoError):
            raise found
        return found

    def holds(self, sha: str, step: int) -> bool:
        """Whether the commit holds what `step` grades (its dezero/ package, its step file):
        what `load.find_entry` finds there, ambiguity included (grading says which to keep)."""
        try:
            load.find_entry(self.get(sha)[0], step)
        except RepoError:
            return False
        except SubmissionError as e:
            return e.code != 'no-entry'
        except (RecursionError, MemoryError):
            return True    # a step file the parser cannot take counts as code, as load says
        return True


def _module_files(name: str, dirs) -> list:
    """The files of the repository's own module `name` (a .py or a package folder), or []."""
    for d in dirs:
        single = d / (name + '.py')
        if single.is_file() and not single.is_symlink():
            return [single]
        package = d / name
        if package.is_dir() and not package.is_symlink() and (package / '__init__.py').is_file():
            return [Path(p) for _, p in load._walk_files(package)]
    return []


def _imported_names(path: Path) -> set:
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
        return set()   # nesting the parser cannot take: the grading itself reports that file
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split('.')[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split('.')[0])
    return names


def graded_files(root: Path, entry) -> list:
    """The files of `root` a step's grading reads (relative posix paths): the package folder;
    or the step file, the other Python files beside it that are not step files (helpers it may
    import or read), and, transitively, the repository's own modules it imports (found beside it or at
    the top, as the worker's import path has them). Other steps' files are left out: adding
    step10.py does not change what step 9 grades."""
    root = Path(root)
    if entry.kind == 'package':
        return ['{}/{}'.format(entry.path, rel) for rel, _ in load._walk_files(root / entry.path)]
    dirs = [root / entry.sys_path_dir, root]
    beside = [Path(e.path) for e in sorted(os.scandir(dirs[0]), key=lambda e: e.name)
              if e.is_file(follow_symlinks=False) and e.name.endswith('.py')
              and not STEP_FILE.match(e.name)]
    todo, seen = [root / entry.path] + beside, set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        if path.suffix == '.py':
            for name in _imported_names(path):
                todo.extend(_module_files(name, dirs))
    return sorted(p.relative_to(root).as_posix() for p in seen)


def graded_subset(tree: Path, step: int, dest: Path):
    """Copy the graded files of `step` from the extracted commit `tree` into the new folder
    `dest`, keeping their paths: (entry, relative paths). Raises SubmissionError when the tree
    has no entry for the step."""
    entry = load.find_entry(tree, step)
    paths = graded_files(tree, entry)
    for rel in paths:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tree / rel, target)
    dest.mkdir(parents=True, exist_ok=True)
    return entry, paths


def lacking(entry, left_out: dict) -> list:
    """Of the files whose content `Repo.extract` left out ({path: why}), those the step would
    have graded, as (path, why): in the package, or (for a step file) any Python module."""
    if entry.kind == 'package':
        inside = [p for p in left_out if p.startswith(entry.path + '/')]
    else:
        inside = [p for p in left_out if p.endswith('.py')]
    return [(p, left_out[p]) for p in sorted(inside)]
