"""A fault written into the learner's own source: the function a patch replaces, found in the
submission's files and replaced there by the patch's version of it.

Where it sits: beside `dezero_grader.catalogue.faults.inject`, which by default (and for `selftest`) adds the
patch as a module run at import; `dezero-grade inject` writes the fault where the book's code
is instead, so that a learner practising diagnosis finds it in the function the report names.
Nothing here runs the submission: the files are read as text and their syntax trees searched.

A patch can be written into the source when it replaces a name with a function of its own and
keeps nothing of the original: its body is imports, assignments of names to parts of the package
(`F = dz.functions`), one function, and the assignments of that function to the names it
replaces (`dz.Variable.backward = backward`, `dz.Variable.__add__ = dz.Variable.__radd__ =
add`), each of which must lead to one definition in the submission:

* `dz.Class.method`: the method in the class (the class found where the package's `__init__.py`
  imports it from, or the one module that defines it), or, where the class has none, the
  function the package assigns to it (the book's `Variable.__add__ = add` in `setup_variable`);
* `dz.module.function`, `dz.function`: the module's function (a name the package exports: where
  `__init__.py` imports it from).

The definition's lines are replaced by the patch's function under the learner's name, indented
as theirs, the patch's imports and assignments moved into its body, and `dz` bound there to the
package (or, for a step file, to the step module's names). A patch that wraps the original
(`original = dz.Layer.save_weights`), defines helpers beside its function, or edits several
places has no such form: `plan` says why, and `inject` adds it as a module instead.
"""
from __future__ import annotations

import ast
import builtins
import textwrap
from dataclasses import dataclass
from pathlib import Path

_BUILTINS = frozenset(dir(builtins)) | {'__class__'}


@dataclass(frozen=True)
class Edit:
    """One definition of the submission replaced: the file (relative to the variant's root), its
    lines `first`..`last` (1-based, inclusive), their new text, and what was edited, in words."""
    path: str
    first: int
    last: int
    text: str
    where: str


class NotInSource(Exception):
    """Why a patch cannot be written into this submission's source (it is added as a module)."""


def plan(patch_source: str, root: Path, entry) -> tuple:
    """The edits (one file's, bottom first) that write the patch (its source, `def name(dz):
    ...`) into the submission at `root` (entry: `load.Entry`); raises NotInSource with the reason
    when there are none."""
    fn = _patch_function(patch_source)
    moved, replacement, classes, targets = _parts(fn, patch_source)
    _check_closed([replacement] + classes, moved, {c.name for c in classes})
    files = _Files(Path(root), entry)
    found = {files.definition(chain) for chain in targets}
    if len(found) != 1:
        raise NotInSource('it replaces {} definitions of your code at once'.format(len(found)))
    path, node = found.pop()
    if node.decorator_list:
        raise NotInSource('your {} is decorated'.format(node.name))
    lines = files.lines(path)
    indent = lines[node.lineno - 1][:node.col_offset]
    module_names = files.module_names(path)
    bind = ('import {} as dz'.format(entry.module) if entry.kind == 'package'
            else 'dz = __import__(\'types\').SimpleNamespace(**globals())')
    prelude = [bind] + [_localised_text(textwrap.dedent(stmt), module_names) for stmt in moved]
    inserted, edits = [], []
    for cls in classes:
        text = textwrap.indent(_class_text(cls, patch_source, prelude, module_names), indent)
        theirs = files.top_level(path, cls.name)
        if isinstance(theirs, ast.ClassDef) and not theirs.decorator_list:
            edits.append(Edit(path, theirs.lineno, theirs.end_lineno, text, cls.name))
        elif theirs is None and not indent:
            inserted.append(text)
        else:
            raise NotInSource('your code has a {} the patch\'s class cannot replace'.format(
                cls.name))
    text = textwrap.indent(_function_text(replacement, patch_source, prelude, node.name,
                                          module_names), indent)
    owner = files.owner(path, node)
    edits.append(Edit(path, node.lineno, node.end_lineno, '\n\n'.join(inserted + [text]),
                      (owner + '.' if owner else '') + node.name))
    spans = sorted((e.first, e.last) for e in edits)
    if any(a[1] >= b[0] for a, b in zip(spans, spans[1:])):
        raise NotInSource('its parts overlap in your code')
    return tuple(sorted(edits, key=lambda e: -e.first))


def where(edits) -> str:
    """What the edits replaced, in words: `dezero/core.py: Add, add`."""
    return '{}: {}'.format(edits[0].path, ', '.join(e.where for e in sorted(edits,
                                                                            key=lambda e: e.first)))


def apply(root: Path, edits) -> None:
    """Write the edits of one file, bottom first (so the lines above keep their numbers)."""
    path = Path(root) / edits[0].path
    lines = path.read_text(encoding='utf-8').splitlines(keepends=True)
    for edit in edits:
        lines[edit.first - 1:edit.last] = [edit.text if edit.text.endswith('\n')
                                           else edit.text + '\n']
    path.write_text(''.join(lines), encoding='utf-8')


# -- the patch ------------------------------------------------------------------------------------

def _patch_function(source: str) -> ast.FunctionDef:
    tree = ast.parse(source)
    fn = tree.body[0]
    if not isinstance(fn, ast.FunctionDef) or len(fn.args.args) != 1:
        raise NotInSource('the patch is not a function of the package')
    return fn


def _chain(node, aliases) -> list | None:
    """`dz.Variable.backward` as ['Variable', 'backward'] (aliases followed), None when the
    expression is not a name of the package."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    if node.id == 'dz':
        return parts[::-1]
    if node.id in aliases and aliases[node.id] is not None:
        return aliases[node.id] + parts[::-1]
    return None


def _parts(fn: ast.FunctionDef, source: str):
    """(statements moved into the functions, as text; the replacement function; the patch's
    classes; the chains of the names it replaces)."""
    moved, aliases, functions, classes, targets, names = [], {}, {}, [], [], []
    for stmt in fn.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            moved.append(ast.get_source_segment(source, stmt))
        elif isinstance(stmt, ast.FunctionDef):
            functions[stmt.name] = stmt
        elif isinstance(stmt, ast.ClassDef):
            classes.append(stmt)
        elif isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            for t in stmt.targets:
                aliases[t.id] = _chain(stmt.value, aliases)
            moved.append(ast.get_source_segment(source, stmt))
        elif isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) and all(
                isinstance(t, ast.Attribute) for t in stmt.targets):
            for t in stmt.targets:
                chain = _chain(t, aliases)
                if not chain:
                    raise NotInSource('it replaces something that is not a name of the package')
                targets.append(tuple(chain))
            names.append(stmt.value.id)
        else:
            raise NotInSource('it does more than replace a name ({})'.format(
                type(stmt).__name__))
    if not targets or len(set(names)) != 1 or names[0] not in functions or len(functions) != 1:
        raise NotInSource('it is not one function put in place of a name')
    for name, chain in aliases.items():
        if chain is not None and any(tuple(chain) == t for t in targets):
            raise NotInSource('it wraps the original {} rather than replacing it'.format(
                '.'.join(chain)))
    return moved, functions[names[0]], classes, sorted(set(targets))


def _bound(node) -> set:
    """Every name a definition binds anywhere inside it (arguments, assignments, nested
    definitions, imports, loop and comprehension variables, handlers)."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.alias):
            out.add((n.asname or n.name).split('.')[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
    return out


def _check_closed(definitions, moved, classes) -> None:
    """The definitions may use only their own names, builtins, `dz`, the patch's classes and
    what moves into them."""
    given = _BUILTINS | {'dz'} | classes
    for text in moved:
        given |= _bound(ast.parse(text))
    for node in definitions:
        free = sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                       and isinstance(n.ctx, ast.Load)} - given - _bound(node))
        if free:
            raise NotInSource('its {} uses {} of the patch'.format(node.name, ', '.join(free)))


def _with_prelude(lines, node, prelude):
    """`lines` (a definition's text, parsed as `node`'s module) with what the function `node`
    needs of `prelude` put at the top of its body (after its docstring)."""
    prelude = _needed(node, prelude)
    body = node.body[0]
    at = body.lineno - 1
    if isinstance(body, ast.Expr) and isinstance(body.value, ast.Constant) and len(node.body) > 1:
        at = node.body[1].lineno - 1
    line = lines[at]
    indent = line[:len(line) - len(line.lstrip())]
    return lines[:at] + [indent + p for p in prelude] + lines[at:]


def _loads(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _needed(node, prelude) -> list:
    """The prelude's statements a function needs (those binding a name it reads, and what they
    read in turn), in order; `dz`'s binding only where one of them, or the function, reads it."""
    bind, statements = prelude[0], prelude[1:]
    wanted, chosen = _loads(node), []
    for text in reversed(statements):
        tree = ast.parse(text)
        if _bound(tree) & wanted:
            chosen.insert(0, text)
            wanted |= _loads(tree)
    return ([bind] if 'dz' in wanted else []) + [line for text in chosen
                                                 for line in text.splitlines()]


def _uses(node, prelude) -> bool:
    """Whether a definition reads `dz` or a name the prelude binds."""
    return bool(_needed(node, prelude))


def _localised_text(text, module_names) -> str:
    """`text` (unindented code) with `dz.Name` written `Name` where the module names it."""
    lines = text.splitlines()
    tree = ast.parse(text)
    spots = sorted(((n.lineno, n.col_offset, n.end_col_offset, n.attr) for n in ast.walk(tree)
                    if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                    and n.value.id == 'dz' and n.attr in module_names
                    and n.lineno == n.end_lineno), reverse=True)
    for line, start, stop, attr in spots:
        row = lines[line - 1].encode('utf-8')   # the offsets count UTF-8 bytes
        lines[line - 1] = (row[:start] + attr.encode('utf-8') + row[stop:]).decode('utf-8')
    return '\n'.join(lines)


def _localised(node, source, module_names):
    """A definition's text, unindented, as the learner's module writes it: `dz.Function` is
    `Function` where the module names it (as the book's code does): (its lines, its syntax
    tree)."""
    text = _localised_text(textwrap.dedent(ast.get_source_segment(source, node, padded=True)),
                           module_names)
    return text.splitlines(), ast.parse(text).body[0]


def _function_text(fn, source, prelude, name, module_names) -> str:
    """The replacement function under the learner's `name`, `dz` and the moved statements bound
    at the top of its body where it still uses them, unindented."""
    lines, node = _localised(fn, source, module_names)
    if _uses(node, prelude):
        lines = _with_prelude(lines, node, prelude)
    head, _, rest = lines[0].partition('(')
    lines[0] = 'def {}({}'.format(name, rest)
    return '\n'.join(lines) + '\n'


def _class_text(cls, source, prelude, module_names) -> str:
    """The patch's class, unindented, named as the learner's module names things, and `dz` and
    the moved statements bound at the top of each method that still uses them. Its bases must
    be names of that module: `dz` is not whole while the module is imported."""
    lines, node = _localised(cls, source, module_names)
    if not lines[0].rstrip().endswith(':') or node.body[0].lineno == node.lineno:
        raise NotInSource('its class {} is not written as the book writes one'.format(cls.name))
    if node.keywords or node.decorator_list or any(
            _uses(b, ['pass']) for b in node.bases + [b for b in node.body
                                                    if not isinstance(b, ast.FunctionDef)]):
        raise NotInSource('its class {} needs names your module does not have'.format(cls.name))
    for method in sorted((m for m in node.body if isinstance(m, ast.FunctionDef)),
                         key=lambda m: -m.lineno):
        if _uses(method, prelude):
            lines = _with_prelude(lines, method, prelude)
    return '\n'.join(lines) + '\n'


# -- the submission -------------------------------------------------------------------------------

class _Files:
    """The submission's Python files, parsed on demand (never run)."""

    def __init__(self, root: Path, entry):
        self.root, self.entry = root, entry
        self._trees, self._lines = {}, {}
        if entry.kind == 'package':
            self.base = Path(entry.path)
        else:
            self.base = Path(entry.path).parent

    def tree(self, rel: str):
        if rel not in self._trees:
            path = self.root / rel
            try:
                text = path.read_text(encoding='utf-8')
                self._trees[rel] = ast.parse(text)
                self._lines[rel] = text.splitlines()
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                self._trees[rel] = None
        return self._trees[rel]

    def lines(self, rel):
        self.tree(rel)
        return self._lines[rel]

    def module_file(self, module: str) -> str | None:
        """The file of a module of the package (or a module beside a step file)."""
        for candidate in (self.base / (module + '.py'), self.base / module / '__init__.py'):
            if (self.root / candidate).is_file():
                return candidate.as_posix()
        return None

    def all_files(self) -> list:
        folder = self.root / self.base
        return sorted(p.relative_to(self.root).as_posix() for p in folder.rglob('*.py')
                      if '__pycache__' not in p.parts)

    def exporter(self) -> str:
        """The file whose names `dz` holds: the package's __init__.py, or the step file."""
        if self.entry.kind == 'package':
            return (self.base / '__init__.py').as_posix()
        return self.entry.path

    def where_defined(self, name: str) -> str | None:
        """The module file a top-level name of `dz` comes from: the file that exports it when it
        defines it, else the module it imports it from (branches of an `if` on a constant
        followed as they run)."""
        rel = self.exporter()
        tree = self.tree(rel)
        if tree is None:
            return None
        for stmt in _live(tree.body, _constants(tree)):
            if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) and stmt.name == name:
                return rel
            if isinstance(stmt, ast.ImportFrom) and stmt.module and any(
                    (a.asname or a.name) == name for a in stmt.names):
                return self.module_file(stmt.module.split('.')[-1])
        return None

    def definition(self, chain):
        """(file, FunctionDef) of the definition the name `chain` leads to."""
        chain = list(chain)
        *owners, attr = chain
        if owners and owners[0] in self._module_names():
            module_file, owners = self.module_file(owners[0]), owners[1:]
        else:
            module_file = None
        if len(owners) > 1:
            raise NotInSource('{} is nested too deep to find'.format('.'.join(chain)))
        if owners:
            cls = owners[0]
            rel = module_file or self.where_defined(cls) or self._only_definer(cls, ast.ClassDef)
            found = self._method(rel, cls, attr) if rel else None
            if found is None and rel:
                found = self._assigned(rel, cls, attr)
        else:
            rel = module_file or self.where_defined(attr) or self._only_definer(attr, ast.FunctionDef)
            found = self._function(rel, attr) if rel else None
        if found is None:
            raise NotInSource('your code has no definition of {} to find by reading it'.format(
                '.'.join(chain)))
        return found

    def _module_names(self) -> set:
        return {Path(f).stem if Path(f).name != '__init__.py' else Path(f).parent.name
                for f in self.all_files()} - {self.base.name}

    def _only_definer(self, name, kind) -> str | None:
        found = [f for f in self.all_files() if self.tree(f) is not None and any(
            isinstance(s, kind) and s.name == name for s in self.tree(f).body)]
        return found[0] if len(found) == 1 else None

    def _function(self, rel, name):
        tree = self.tree(rel)
        for stmt in tree.body if tree else ():
            if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
                return rel, stmt
        return None

    def _method(self, rel, cls, name):
        tree = self.tree(rel)
        for stmt in tree.body if tree else ():
            if isinstance(stmt, ast.ClassDef) and stmt.name == cls:
                for item in stmt.body:
                    if isinstance(item, ast.FunctionDef) and item.name == name:
                        return rel, item
        return None

    def _assigned(self, rel, cls, attr):
        """The module function assigned to `cls.attr` somewhere in `rel` (`Variable.__add__ =
        add`, as the book's setup_variable does)."""
        tree = self.tree(rel)
        names = {n.value.id for n in ast.walk(tree) if isinstance(n, ast.Assign)
                 and isinstance(n.value, ast.Name) and any(
                     isinstance(t, ast.Attribute) and t.attr == attr
                     and isinstance(t.value, ast.Name) and t.value.id == cls for t in n.targets)}
        if len(names) != 1:
            return None
        return self._function(rel, names.pop())

    def top_level(self, rel, name):
        """The module-level statement of `rel` that binds `name` (None: none does)."""
        tree = self.tree(rel)
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) and stmt.name == name:
                return stmt
            if name in _bound(stmt) and not isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                return stmt
        return None

    def module_names(self, rel) -> set:
        """The names `rel` binds at module level (definitions, imports, assignments)."""
        tree = self.tree(rel)
        out = set()
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                out.add(stmt.name)
            elif isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Assign, ast.If, ast.Try)):
                out |= _bound(stmt)
        return out

    def owner(self, rel, node) -> str:
        tree = self.tree(rel)
        for stmt in tree.body:
            if isinstance(stmt, ast.ClassDef) and node in stmt.body:
                return stmt.name
        return ''


def _constants(tree) -> dict:
    """Module-level names bound to a constant (`is_simple_core = False`)."""
    out = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant):
            for t in stmt.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = stmt.value.value
    return out


def _live(body, constants):
    """The statements of a module body as they run: an `if` on a known constant (or its
    negation) contributes its taken branch only, any other `if` both."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            test, negate = stmt.test, False
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                test, negate = test.operand, True
            if isinstance(test, ast.Name) and test.id in constants:
                taken = bool(constants[test.id]) != negate
                yield from _live(stmt.body if taken else stmt.orelse, constants)
                continue
            yield from _live(stmt.body, constants)
            yield from _live(stmt.orelse, constants)
        else:
            yield stmt
