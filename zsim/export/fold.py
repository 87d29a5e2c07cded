"""Templates folded by member index: the members of a ``count = N`` template written once.

The members' code is written out for each member, then ``fold`` compares the texts token
by token: where they differ only in strings, numbers and comments linear in the member
index (``"w1_in"``, ``"w2_in"`` -> ``f"w{i + 1}_in"``), one text of ``i`` replaces them;
otherwise the caller keeps the members written out. Checking every member's text, rather
than guessing from the template, is what makes a folded function exactly the members'.

The comparison is of structure, not layout: a docstring is compared by its words (member
10's ``w10_in`` is one character longer than member 9's ``w9_in`` and can wrap the
docstring onto another line), and line breaks inside brackets are not tokens that count
(a list wrapped at another item). The folded text keeps the first member's layout, its
docstrings wrapped anew around the pattern.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Sequence

from .literals import escaped, linear, wrap

_RUN = re.compile(r"(\d+)")


def infer(values: Sequence[str]) -> list[str | tuple[int, int]] | None:
    """The pattern behind the strings of members 0, 1, ...: literal pieces and ``(a, b)``
    for a number ``a*i + b``; None unless it reproduces every value exactly."""
    if len(values) < 2:
        return None
    pieces = [_RUN.split(value) for value in values]
    if any(len(p) != len(pieces[0]) for p in pieces):
        return None
    pattern: list[str | tuple[int, int]] = []
    for k, first in enumerate(pieces[0]):
        column = [p[k] for p in pieces]
        if all(item == first for item in column):
            pattern.append(first)
            continue
        if k % 2 == 0:  # text between the numbers differs
            return None
        b = int(column[0])
        a = int(column[1]) - b
        if any(str(a * i + b) != item for i, item in enumerate(column)):
            return None
        pattern.append((a, b))
    merged: list[str | tuple[int, int]] = []
    for part in pattern:  # one literal between two numbers
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        else:
            merged.append(part)
    return merged


def _render(pattern: Sequence[str | tuple[int, int]]) -> str:
    """A pattern as text, its numbers as ``{a*i + b}`` (for docstrings and comments)."""
    return "".join(part if isinstance(part, str) else "{" + linear(*part) + "}" for part in pattern)


def _fstring(pattern: Sequence[str | tuple[int, int]]) -> str:
    """A pattern of literal source text as an f-string (``"w1_in"`` -> ``f"w{i + 1}_in"``)."""
    return "f" + "".join(part.replace("{", "{{").replace("}", "}}") if isinstance(part, str) else "{" + linear(*part) + "}"
                         for part in pattern)


def fold(texts: Sequence[str]) -> str | None:
    """One text for the members' texts when they differ only in string, number and comment
    tokens linear in the member index ``i``, else None. Docstrings and comments get the
    pattern as text (``w{i + 1}_in``), strings become f-strings, numbers expressions."""
    if len(texts) < 2:
        return None
    try:
        # NL: a line break that ends no statement (inside brackets, a blank line): layout
        streams = [[token for token in tokenize.generate_tokens(io.StringIO(text).readline) if token.type != tokenize.NL]
                   for text in texts]
    except (tokenize.TokenError, SyntaxError):
        return None
    first = streams[0]
    if any(len(s) != len(first) for s in streams):
        return None
    lines = texts[0].splitlines(keepends=True)
    edits: list[tuple[tuple[int, int], tuple[int, int], str]] = []
    previous = None
    for k, token in enumerate(first):
        column = [s[k] for s in streams]
        if any(t.type != token.type for t in column):
            return None
        if all(t.string == token.string for t in column):
            if token.type not in (tokenize.NEWLINE, tokenize.COMMENT):
                previous = token
            continue
        if token.type not in (tokenize.STRING, tokenize.NUMBER, tokenize.COMMENT):
            return None
        if token.type == tokenize.STRING and previous is not None and previous.type == tokenize.INDENT:
            folded_doc = _docstring([t.string for t in column], token.start[1])
            if folded_doc is None:
                return None
            edits.append((token.start, token.end, folded_doc))
            previous = token
            continue
        pattern = infer([t.string for t in column])
        if pattern is None:
            return None
        if token.type == tokenize.COMMENT:
            replacement = _render(pattern)  # a comment: the pattern, as text
        elif token.type == tokenize.NUMBER:
            if len(pattern) != 3 or pattern[0] or pattern[2] or isinstance(pattern[1], str):
                return None  # only whole integers fold
            replacement = f"({linear(*pattern[1])})"
        else:
            folded = _string_fstring(token.string, pattern)
            if folded is None:
                return None
            replacement = folded
        edits.append((token.start, token.end, replacement))
        if token.type != tokenize.COMMENT:
            previous = token
    for start, end, replacement in reversed(edits):
        (row1, col1), (row2, col2) = start, end
        head = lines[row1 - 1][:col1]
        tail = lines[row2 - 1][col2:]
        lines[row1 - 1:row2] = [head + replacement + tail]
    return "".join(lines)


def _docstring(sources: Sequence[str], indent: int) -> str | None:
    """The members' docstrings (token sources, ``\"\"\"...\"\"\"``) as one, when their words
    differ only in numbers linear in the member index: the pattern as text
    (``w{i + 1}_in``), wrapped as ``literals.docstring`` wraps, at the docstring's
    ``indent``; None otherwise. Words, not lines: how a member's text wrapped is layout."""
    quote = '"""'
    if not all(source.startswith(quote) and source.endswith(quote) and len(source) >= 6 for source in sources):
        return None
    pattern = infer([" ".join(source[3:-3].split()) for source in sources])
    if pattern is None:
        return None
    text = _render(pattern)  # the members' text is already escaped for a docstring
    wrapped = wrap(text, 104 - indent)
    if len(wrapped) <= 1:
        return f"{quote}{text}{quote}"
    pad = " " * indent
    return "\n".join([f"{quote}{wrapped[0]}", *(pad + line for line in wrapped[1:]), pad + quote])


def _string_fstring(source: str, pattern: Sequence[str | tuple[int, int]]) -> str | None:
    """A string token's source (``"w1_in"``, ``b"w1"``) as an f-string of its pattern, or None
    for a token that cannot become one (a triple-quoted or raw string)."""
    match = re.match(r"[A-Za-z]*", source)
    head = match.group(0) if match else ""
    first = pattern[0]
    if head.lower() not in ("", "b") or source[len(head):].startswith(('"""', "'''")) or not isinstance(first, str):
        return None
    text = _fstring([first[len(head):], *pattern[1:]])
    return text + ".encode()" if head else text


def fstring_literal(pattern: Sequence[str | tuple[int, int]]) -> str:
    """``f"worker{i + 1}"`` for a pattern of plain text and numbers."""
    pieces = []
    for part in pattern:
        if isinstance(part, str):
            # Python's own escaping of the text (backslashes, quotes, controls), braces doubled for the f-string
            pieces.append(escaped(part).replace("{", "{{").replace("}", "}}"))
        else:
            pieces.append("{" + linear(*part) + "}")
    return 'f"' + "".join(pieces) + '"'

