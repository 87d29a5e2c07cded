"""Python literals and words for the programs ``zsim export`` writes.

Everything a scenario puts into a program passes through here: a name, an endpoint or a
topic becomes a literal Python's own escaping wrote (``quoted``, ``quoted_bytes``), text in
a docstring or a comment is made inert (``doc_safe``), a number is written as Python
writes it, a distribution as one draw from the loop's ``rng`` (``draw``) or in words for a
docstring (``describe``). Kept apart so that the one place that decides how scenario text
becomes source is small enough to check (docs/safety.md: generated programs).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable

from ..distributions import Distribution


def escaped(text: str) -> str:
    """The inside of a double-quoted Python literal of ``text``: each character as Python's
    own ``repr`` escapes it (backslashes, newlines, NUL, every control and unprintable
    character), a double quote as ``\\"``."""
    return "".join('\\"' if ch == '"' else "'" if ch == "'" else repr(ch)[1:-1] for ch in text)


def quoted(text: str) -> str:
    """A double-quoted Python literal of ``text`` (``escaped``): it reads back as ``text``,
    whatever it holds, and nothing in it can end the literal."""
    return f'"{escaped(str(text))}"'


def quoted_bytes(text: str) -> str:
    """A bytes literal of ``text`` (UTF-8): ``b"weather."``, or ``"é".encode()``."""
    if text.isascii():
        return "b" + quoted(text)  # ASCII: a bytes literal escapes as a str literal does
    return f"{quoted(text)}.encode()"


_DOC_ESCAPES = {ord("\\"): "\\\\", ord('"'): '\\"',
                **{code: f"\\\\x{code:02x}" for code in (*range(32), *range(0x7F, 0xA0))},
                **{code: f"\\\\u{code:04x}" for code in (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))}}


def doc_safe(text: str) -> str:
    """``text`` for inside a docstring or a comment: backslashes and double quotes escaped
    (no ``\"\"\"`` can end the docstring, no trailing quote can join its end), control
    characters, line separators and bidirectional overrides as visible escapes (no NUL in
    the source, no line break that would end a comment, nothing that reorders the text)."""
    return text.translate(_DOC_ESCAPES)


def num(value: float) -> str:
    """A float literal as Python writes it (``0.001``, ``1e-05``, ``4.0``)."""
    return repr(float(value))


def seconds(value: float) -> str:
    """``0.1 ms``, ``2.5 s``: for comments and docstrings."""
    if value == 0:
        return "0 s"
    if value < 1:
        return f"{value * 1000:.6g} ms"
    return f"{value:.6g} s"


def _size(value: float) -> str:
    return f"{value:,.0f} B"


def describe(dist: Distribution) -> str:
    """A distribution in words, for docstrings."""
    unit = seconds if dist.unit == "s" else _size
    if dist.kind == "constant":
        return unit(dist.value)
    if dist.kind == "exponential":
        return f"exponential, mean {unit(dist.mean)}"
    if dist.kind == "uniform":
        return f"uniform over {unit(dist.low)} to {unit(dist.high)}"
    if dist.kind == "lognormal":
        return f"lognormal, mean {unit(dist.mean)}, sigma {dist.sigma:g}"
    return "one of " + ", ".join(unit(v) for v in dist.values)


def draw(dist: Distribution, name: str, integer: bool = False) -> str:
    """A Python expression of one draw of ``dist`` from the loop's ``rng``; an empirical
    distribution draws from the list ``name`` (``value_lists`` writes it)."""
    if dist.kind == "constant":
        return str(int(round(dist.value))) if integer else num(dist.value)
    if dist.kind == "exponential":
        expression = f"rng.exponential({num(dist.mean)})" if dist.mean > 0 else "0.0"
    elif dist.kind == "uniform":
        expression = f"rng.uniform({num(dist.low)}, {num(dist.high)})"
    elif dist.kind == "lognormal":
        # numpy's lognormal takes the mean of the logarithm; the scenario gives the mean
        expression = f"rng.lognormal(math.log({num(dist.mean)}) - {dist.sigma!r} ** 2 / 2, {dist.sigma!r})"
    else:
        expression = f"rng.choice({name})"
    return f"max(0, int(round({expression})))" if integer else expression


def value_lists(dists: Iterable[tuple[Distribution | None, str]]) -> list[str]:
    """``name = [...]`` for each empirical distribution, wrapped (a loop function's prelude)."""
    lines = []
    for dist, name in dists:
        if dist is not None and dist.kind == "empirical":
            items = ", ".join(num(v) for v in dist.values)
            wrapped = textwrap.wrap(items, 100)
            if len(wrapped) == 1:
                lines.append(f"    {name} = [{items}]  # equally likely")
            else:
                lines += [f"    {name} = [  # equally likely", *(f"        {line}" for line in wrapped), "    ]"]
    return lines


def linear(a: int, b: int) -> str:
    """``a*i + b`` as Python, written as one would: ``i + 1``, ``5600 + i``, ``5600 + 2 * i``, ``7 - i``."""
    term = "i" if abs(a) == 1 else f"{abs(a)} * i"
    if b == 0:
        return term if a > 0 else f"-{term}"
    if a < 0:
        return f"{b} - {term}" if b > 0 else f"-{term} - {-b}"
    if b > 99:  # a base number (a port): first
        return f"{b} + {term}"
    return f"{term} + {b}" if b > 0 else f"{term} - {-b}"


def section(title: str) -> str:
    rule = "# " + "-" * 98
    return f"{rule}\n# {doc_safe(title)}\n{rule}"


def wrap(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """``textwrap.wrap``, keeping "t = 10 ms" and "2,000 B" on one line (no break at a NUL)."""
    glued = re.sub(r"(?<=\d) (?=(ms|s|B)\b)", "\x00", text.replace("t = ", "t\x00=\x00"))
    return [line.replace("\x00", " ") for line in textwrap.wrap(glued, width, initial_indent=first, subsequent_indent=rest)]


def docstring(text: str, indent: int) -> list[str]:
    pad = " " * indent
    text = doc_safe(text)
    # narrower than the lines: a template's docstring grows when its members fold ("w1" -> "w{i + 1}")
    wrapped = wrap(text, 104 - indent)
    if len(wrapped) <= 1:
        return [f'{pad}"""{text}"""']
    return [f'{pad}"""{wrapped[0]}'] + [f"{pad}{line}" for line in wrapped[1:]] + [f'{pad}"""']

