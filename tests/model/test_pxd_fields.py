"""Each ``.pxd`` declares exactly the fields its ``.py`` class has (``zsim/native.py``).

Compiled, a ``cdef class`` has only the fields its ``.pxd`` declares: a field the ``.py``
assigns but the ``.pxd`` lacks raises ``AttributeError`` in compiled mode only (or, on a
class a Python subclass extends, silently moves into that subclass's ``__dict__``), and a
declaration left behind after the field went is dead weight in every instance. Both are
invisible to the pure-Python run, so this test reads the two files side by side.

The ``.py`` side is the class's ``__slots__`` when it has them, else every ``self.x = ...``
(plain, annotated, augmented or tuple assignment) in its methods; fields a ``.pxd`` base
class declares belong to that base.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from zsim import native

_CLASS = re.compile(r"cdef class (\w+)(?:\((\w+)\))?\s*:$")
_FIELD = re.compile(r"cdef\s+(?:(?:public|readonly)\s+)?(.+)$")


def pxd_classes(text: str) -> dict[str, tuple[str | None, set[str]]]:
    """``cdef class`` name -> (its base, the attribute names it declares)."""
    classes: dict[str, tuple[str | None, set[str]]] = {}
    fields: set[str] | None = None
    for line in text.splitlines():
        code = line.split("#", 1)[0].rstrip()
        if not code:
            continue
        if not code[0].isspace():  # a class header, or anything else at module level
            match = _CLASS.fullmatch(code)
            fields = None
            if match:
                fields = set()
                classes[match[1]] = (match[2], fields)
            continue
        match = _FIELD.fullmatch(code.strip())
        if fields is None or match is None or "(" in match[1]:  # not in a class, not cdef, or a method
            continue
        first, *more = (part.strip() for part in match[1].split(","))
        fields.update([first.split()[-1], *more])  # "long long[::1] keys" -> keys; "long a, b" -> a, b
    return classes


def _assigned(function: ast.FunctionDef) -> set[str]:
    if not function.args.args or any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
                                     for d in function.decorator_list):
        return set()
    me = function.args.args[0].arg
    names: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        else:
            continue
        while targets:
            target = targets.pop()
            if isinstance(target, (ast.Tuple, ast.List)):
                targets.extend(target.elts)
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == me:
                names.add(target.attr)
    return names


def py_classes(text: str) -> dict[str, tuple[set[str] | None, set[str]]]:
    """Class name -> (its ``__slots__`` or None, the ``self`` attributes its methods assign)."""
    classes: dict[str, tuple[set[str] | None, set[str]]] = {}
    for node in ast.parse(text).body:
        if not isinstance(node, ast.ClassDef):
            continue
        slots = None
        assigned: set[str] = set()
        for item in node.body:
            if isinstance(item, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__" for t in item.targets):
                slots = set(ast.literal_eval(item.value))
            elif isinstance(item, ast.FunctionDef):
                assigned |= _assigned(item)
        classes[node.name] = (slots, assigned)
    return classes


def mismatches(pxd_text: str, py_text: str, other_pxds: tuple[str, ...] = ()) -> list[str]:
    """What differs, one line per class and field (empty: the two agree). ``other_pxds``:
    the ``.pxd`` files a base class may be declared in (``cimport``ed)."""
    declared = pxd_classes(pxd_text)
    defined = py_classes(py_text)
    anywhere = {name: cls for text in other_pxds for name, cls in pxd_classes(text).items()} | declared
    problems = []
    for name, (base, fields) in declared.items():
        if name not in defined:
            problems.append(f"class {name} is declared but not defined")
            continue
        inherited: set[str] = set()
        while base in anywhere:
            base, base_fields = anywhere[base]
            inherited |= base_fields
        slots, assigned = defined[name]
        has = slots if slots is not None else assigned - inherited
        for field in sorted(has - fields):
            problems.append(f"{name}.{field} is {'in __slots__' if slots is not None else 'assigned'} but not declared")
        for field in sorted(fields - has):
            problems.append(f"{name}.{field} is declared but {'not in __slots__' if slots is not None else 'never assigned'}")
        if slots is not None:  # and every assignment must land in a field
            for field in sorted(assigned - fields - inherited):
                problems.append(f"{name}.{field} is assigned but neither in __slots__ nor declared")
    return problems


@pytest.mark.parametrize("module", native.MODULES)
def test_the_pxd_declares_exactly_the_fields_of_its_classes(module):
    source = native.source_path(module)
    pxd = source.with_suffix(".pxd")
    others = tuple(native.source_path(other).with_suffix(".pxd").read_text() for other in native.MODULES if other != module)
    problems = mismatches(pxd.read_text(), source.read_text(), others)
    root = Path(native.__file__).resolve().parents[1]
    assert not problems, f"{pxd.relative_to(root)} and {source.relative_to(root)} disagree: " + "; ".join(problems)


def test_the_pxd_reader_finds_each_kind_of_declaration():
    pxd = """
cimport cython
cdef int MODULE_LEVEL

cdef class Base:
    cdef public long index  # a comment
    cdef readonly double[::1] times
    cdef long long count, other
    cdef object __weakref__
    @cython.locals(x=long)
    cpdef long size(self, long x)
    cdef inline void _rise(self, Py_ssize_t pos)

cdef class Later


@cython.final
cdef class Child(Base):
    cdef public Base parent
"""
    assert pxd_classes(pxd) == {"Base": (None, {"index", "times", "count", "other", "__weakref__"}), "Child": ("Base", {"parent"})}


def test_a_missing_or_stale_declaration_is_named():
    pxd = "cdef class Base:\n    cdef public long index\n\ncdef class Child(Base):\n    cdef public long kept\n    cdef public long gone\n"
    py = """
class Base:
    __slots__ = ("index",)

class Child(Base):
    def __init__(self):
        self.index = 0  # Base's
        self.kept, self.new = 1, 2

    def bump(self):
        self.kept += 1
"""
    assert mismatches(pxd, py) == ["Child.new is assigned but not declared", "Child.gone is declared but never assigned"]
    slotted = "class Base:\n    __slots__ = ('index', 'extra')\n\nclass Child(Base):\n    __slots__ = ('kept', 'gone')\n"
    assert mismatches(pxd, slotted) == ["Base.extra is in __slots__ but not declared"]
    assert mismatches(pxd, "class Child:\n    pass\n") == ["class Base is declared but not defined",
                                                          "Child.gone is declared but never assigned",
                                                          "Child.kept is declared but never assigned"]


def test_a_base_declared_in_another_pxd_owns_its_fields():
    base_pxd = "cdef class Base:\n    cdef public long index\n"
    pxd = "cdef class Child(Base):\n    cdef public long kept\n"
    py = "class Child(Base):\n    def __init__(self):\n        self.index = self.kept = 0\n"
    assert mismatches(pxd, py, (base_pxd,)) == []
    assert mismatches(pxd, py) == ["Child.index is assigned but not declared"]
