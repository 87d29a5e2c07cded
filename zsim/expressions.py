"""Arithmetic over named metrics: ``[validation.derived]`` and ``[report.derived]``.

An expression combines metric names, numbers, ``+ - * /``, parentheses and the functions
``max()``, ``min()``, ``abs()`` and ``sum()``:

    sockets.sink.last_recv_s - 0.3                       (a zsim validate summary path)
    socket.sink.last_recv_s - sender.vent.finished_at_s  (a sweep row's flat names)
    `pipe.pub->sub (tcp send).dropped` / sent             (a name with other characters: backquotes)

A plain name is a run of letters, digits, ``_`` and ``.``; anything else (``->``, spaces,
brackets, as in pipe names) goes between backquotes. Nothing else is allowed: no
attribute access, subscripts, comparisons or other calls; parsing uses Python's ``ast`` on
a rewritten text and evaluation walks the tree, so no code is ever executed.

An expression is at most ``zsim.limits.MAX_EXPRESSION_CHARS`` characters long and nests at
most ``MAX_EXPRESSION_DEPTH`` deep (operators, signs, parentheses and calls along its
deepest chain, counted on the text before Python parses it; evaluation walks a tree no
deeper): longer or deeper is a ``ValueError`` saying which bound, never a RecursionError.
Numbers are finite (``1e999`` is refused).

Missing values, one rule: a name without a value (the lookup gives None, or NaN: the
latency of a socket that got nothing) has no value; arithmetic on no value and a division
by zero give no value; ``max()``, ``min()`` and ``sum()`` take the values there are (no
value only when none is); ``abs()`` of no value is none. ``evaluate`` gives None for no
value. A designer's ``max(socket.w1.latency_p99_s, socket.w2.latency_p99_s)`` is the worst
latency of the workers that got work, and ``a - b`` with ``b`` missing is no number rather
than ``a`` (``zsim.metrics`` applies the rule to a run's row).
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from . import limits

__all__ = ["Expression", "parse", "evaluate", "names", "FUNCTIONS"]

_BINARY: dict[type, Callable[[Any, Any], Any]] = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
                                                  ast.Div: operator.truediv}
#: the functions an expression may call; each gets only the arguments that have a value
#: (``Expression.evaluate`` gives no value when none has)
FUNCTIONS: dict[str, Callable[..., float]] = {"max": lambda *a: max(a), "min": lambda *a: min(a), "abs": abs, "sum": lambda *a: sum(a)}
_NUMBER = re.compile(r"(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
_WORD = re.compile(r"[A-Za-z0-9_.]+")


_LARGEST = 1.7976931348623157e308  # the largest finite float
#: characters of a number in an expression (a float has 17 significant digits; 10**400
#: written out is refused as not finite anyway)
_NUMBER_CHARS = 400


def _depth(text: str) -> int:
    """An upper bound of how deeply ``text`` (rewritten: names are ``_n<index>``) nests once
    parsed: per comma-separated argument, its operators and signs plus the deepest group
    inside it; a group (parentheses, a call) one more. Linear, without recursion: it runs
    before ``ast.parse``, whose C parser fails on deep input with RecursionError or
    MemoryError rather than SyntaxError."""
    stack: list[list[int]] = [[0, 0, 0]]  # per open group: [operators in this argument, deepest group in it, deepest argument]
    for index, char in enumerate(text):
        if char in "+-" and index >= 2 and text[index - 1] in "eE" and (text[index - 2].isdigit() or text[index - 2] == "."):
            continue  # an exponent's sign (1e-5), part of a number
        if char == "(":
            stack.append([0, 0, 0])
        elif char == ")" and len(stack) > 1:
            operators, inner, best = stack.pop()
            group = max(best, operators + inner) + 1
            stack[-1][1] = max(stack[-1][1], group)
        elif char == ",":
            top = stack[-1]
            top[2] = max(top[2], top[0] + top[1])
            top[0] = top[1] = 0
        elif char in "+-*/":
            stack[-1][0] += 1
    depth = 0
    for operators, inner, best in stack:  # unclosed groups: the parser says so, after this bound
        depth += max(best, operators + inner) + 1
    return depth


class Expression:
    """A parsed expression: ``names`` (in order of first use) and ``evaluate(lookup)``."""

    def __init__(self, text: str) -> None:
        if not isinstance(text, str) or not text.strip():
            raise ValueError("an expression must be a non-empty string")
        if len(text) > limits.MAX_EXPRESSION_CHARS:
            raise ValueError(f"is {len(text):,} characters long; at most {limits.MAX_EXPRESSION_CHARS:,} are accepted "
                             "(zsim.limits.MAX_EXPRESSION_CHARS)")
        self.text = text
        self.names: list[str] = []
        rewritten = self._rewrite(text)
        depth = _depth(rewritten)
        if depth > limits.MAX_EXPRESSION_DEPTH:
            raise ValueError(f"nests {depth:,} deep (operators, signs, parentheses and calls along its deepest chain); at most "
                             f"{limits.MAX_EXPRESSION_DEPTH} are accepted (zsim.limits.MAX_EXPRESSION_DEPTH): a long sum "
                             "reads sum(a, b, c, ...)")
        try:
            tree = ast.parse(rewritten, mode="eval")
        except SyntaxError as exc:
            raise ValueError(f"not an expression: {exc.msg}") from None
        except (RecursionError, MemoryError, ValueError):  # bounded above; Python's own parser limits, if ever lower
            raise ValueError(f"nests too deeply for Python's parser (at most {limits.MAX_EXPRESSION_DEPTH} levels)") from None
        self._tree = self._check(tree)

    def _rewrite(self, text: str) -> str:
        """Each metric name becomes ``_n<index>`` (names have dots and other characters)."""
        out: list[str] = []
        i = 0
        while i < len(text):
            char = text[i]
            if char == "`":
                end = text.find("`", i + 1)
                if end < 0:
                    raise ValueError(f"unclosed backquote at character {i + 1}")
                self._name(text[i + 1:end], out)
                i = end + 1
                continue
            number = _NUMBER.match(text, i)
            word = _WORD.match(text, i)
            if number and (not word or number.end() >= word.end()):
                if len(number.group(0)) > _NUMBER_CHARS:  # Python reads at most 4,300 digits of an integer
                    raise ValueError(f"a number of {len(number.group(0)):,} characters at character {i + 1}; at most "
                                     f"{_NUMBER_CHARS} are accepted")
                out.append(number.group(0))
                i = number.end()
                continue
            if word:
                token = word.group(0)
                if token in FUNCTIONS:
                    out.append(token)
                else:
                    self._name(token, out)
                i = word.end()
                continue
            out.append(char)
            i += 1
        return "".join(out).strip()

    def _name(self, name: str, out: list[str]) -> None:
        if not name.strip():
            raise ValueError("an empty name between backquotes")
        if name not in self.names:
            self.names.append(name)
        out.append(f"_n{self.names.index(name)}")

    def _check(self, tree: ast.AST) -> ast.AST:
        for node in ast.walk(tree):
            if isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.USub, ast.UAdd, ast.Name, ast.Load, ast.Call,
                                 *_BINARY)):
                if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS
                                                       and not node.keywords):
                    raise ValueError("only max(), min(), abs() and sum() may be called")
                continue
            if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
                if not (node.value <= _LARGEST and math.isfinite(float(node.value))):  # 1e999, 10**400 written out
                    raise ValueError("a number must be finite (at most about 1.8e308)")
                continue
            raise ValueError(f"{type(node).__name__} is not allowed (use metric names, numbers, + - * /, max, min, abs, sum)")
        return tree

    def evaluate(self, lookup: Callable[[str], Any]) -> float | None:
        """The value, with ``lookup(name)`` giving each name's value (None or NaN: no
        value); None when it has none (the module's rule)."""

        def ev(node: ast.AST) -> Any:
            if isinstance(node, ast.Expression):
                return ev(node.body)
            if isinstance(node, ast.Constant):
                return float(node.value) if isinstance(node.value, (int, float)) else None
            if isinstance(node, ast.Name):
                value = lookup(self.names[int(node.id[2:])])
                if value is None:
                    return None
                value = float(value)
                return None if value != value else value  # NaN: no value
            if isinstance(node, ast.UnaryOp):
                value = ev(node.operand)
                return None if value is None else (-value if isinstance(node.op, ast.USub) else value)
            if isinstance(node, ast.BinOp):
                left, right = ev(node.left), ev(node.right)
                if left is None or right is None:
                    return None
                if isinstance(node.op, ast.Div) and right == 0:
                    return None
                return _BINARY[type(node.op)](left, right)
            if isinstance(node, ast.Call):
                args = [a for a in (ev(a) for a in node.args) if a is not None]  # the values there are
                if not args:
                    return None
                return float(FUNCTIONS[node.func.id](*args))  # type: ignore[attr-defined]
            raise ValueError(type(node).__name__)

        value = ev(self._tree)
        return None if value is None or value != value else float(value)


@lru_cache(maxsize=256)
def parse(text: str) -> Expression:
    """A parsed expression (cached); ``ValueError`` with the reason if it is not one."""
    return Expression(text)


def evaluate(expr: str, lookup: Callable[[str], Any]) -> float | None:
    """The value of ``expr`` with ``lookup(name)`` for each name (None if one is missing)."""
    return parse(expr).evaluate(lookup)


def names(expr: str) -> list[str]:
    """The metric names ``expr`` reads, in order of first use."""
    return list(parse(expr).names)
