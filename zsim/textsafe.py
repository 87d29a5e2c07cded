"""Text from files that cannot act where zsim shows it.

A scenario's name and description, its endpoints and topics, a sweep's axis value names,
a comparison's file names are text someone else wrote. Shown as they are, they could act:
an ESC sequence rewrites the terminal, a ``|`` or raw HTML breaks a Markdown table, ``$``
starts matplotlib's mathtext, a quote ends a string in generated code. Each place zsim
shows such text goes through the escaping of its medium:

* the terminal: ``terminal`` (whole outputs: C0 and C1 control characters, DEL and the
  Unicode bidirectional overrides become visible escapes, ``\\x1b``; newlines and tabs stay)
  and ``one_line`` (names and error lines: newlines and tabs escaped too);
* Markdown: ``md`` (inline text: Markdown's and HTML's special characters escaped) and
  ``md_code`` (a code span that no backtick in the text can end);
* matplotlib: ``zsim.plotting.save`` makes every text artist plain text (no mathtext, no
  TeX) before a figure is written;
* HTML: ``zsim.report_run.page.esc`` (``html.escape``);
* Python source: ``repr`` (``zsim.export.literals``).
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

#: Unicode bidirectional controls (embeddings, overrides, isolates, marks): they reorder
#: what a terminal or an editor shows ("Trojan Source")
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROLS_BUT_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{_BIDI}]")
_CONTROLS = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{_BIDI}]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: Any) -> str:
    """``text`` for a terminal: control characters as visible escapes, lines kept."""
    return _CONTROLS_BUT_LINES.sub(_visible, str(text))


def one_line(text: Any) -> str:
    """``text`` as one line for a terminal: every control character (newlines too) escaped."""
    return _CONTROLS.sub(_visible, str(text))


_MD_SPECIAL = re.compile(r"([\\`\[\]|])")


def md(text: Any, line_start: bool = False) -> str:
    """``text`` as inline Markdown that shows as written: ``<``, ``>`` and ``&`` as HTML
    entities (no raw HTML), the punctuation of tables, links, images and code spans
    (``|``, brackets, backticks, backslashes) backslash-escaped; control characters and
    newlines as visible escapes. ``line_start``: the text starts a line, so a heading,
    list or quote mark there is escaped too."""
    value = one_line(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    value = _MD_SPECIAL.sub(r"\\\1", value)
    if not line_start:
        return value
    number = re.match(r"\d+(?=[.)])", value)
    if number:  # "1. x" would start an ordered list: "1\. x"
        return number.group() + "\\" + value[number.end():]
    return "\\" + value if value[:1] in ("#", "-", "+", "=", "*") else value


def md_code(text: Any, in_table: bool = False) -> str:
    """``text`` as a Markdown code span that shows it as written: fenced by more backticks
    than any run inside it, control characters as visible escapes. ``in_table``: a ``|``
    escaped as ``\\|``, which GitHub-flavoured tables need even inside a code span."""
    value = one_line(text)
    if in_table:
        value = value.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") or not value.strip() else ""
    return f"{fence}{pad}{value}{pad}{fence}"


class Code(str):
    """A Markdown table cell shown as code (a field path, a name): ``md_cell``."""


def md_cell(value: Any) -> str:
    """A Markdown table cell: a ``Code`` as a code span, anything else as escaped text."""
    return md_code(value, in_table=True) if isinstance(value, Code) else md(value)


def md_table(headers: Any, rows: Any) -> list[str]:
    """A Markdown table whose headers and cells are all escaped (``md_cell``)."""
    lines = ["| " + " | ".join(md_cell(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return lines


def md_url(path: str) -> str:
    """A relative link target: as is when plain (``drops.png``), else URL-encoded in ``<>``."""
    if re.fullmatch(r"[A-Za-z0-9._/-]+", path) and not path.startswith("/"):
        return path
    return "<" + urllib.parse.quote(path) + ">"
