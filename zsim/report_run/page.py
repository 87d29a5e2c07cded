"""The run report's HTML: one file, figures inlined as ``data:`` URIs, no script, no link
out of the page, so it opens offline, can be mailed, and shows the same thing in a year.

Everything is escaped (scenario and entity names are user text). Numbers carry their unit
in human form (``zsim.units``). Warnings come first and stand out: a reader must not take
a horizon too short, an overloaded consumer or a rate not achieved for an answer.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Iterable, Sequence
from typing import Any

from ..units import human_bytes, human_time

STYLE = """
body { font-family: -apple-system, "Segoe UI", "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 1.2em auto; max-width: 1280px;
       padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ccc; padding-bottom: 0.15em; }
p.description { color: #444; margin-top: 0; }
nav { font-size: 0.9em; margin: 0.6em 0 1em; }
nav a { margin-right: 1em; color: #1a5fb4; }
table { border-collapse: collapse; font-size: 0.84em; margin: 0.5em 0 0.8em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; vertical-align: top; }
th { background: #f2f2f2; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.flagged td { background: #fff1f0; }
td.bad { color: #b00020; font-weight: bold; }
.warnings { border: 2px solid #b00020; background: #fff4f4; padding: 0.6em 1em; margin: 1em 0; border-radius: 4px; }
.warnings h2 { border: none; margin-top: 0.2em; color: #b00020; }
.warnings li { margin-bottom: 0.4em; }
.warnings code { background: #fde0e0; }
.calm { border: 1px solid #9c9; background: #f4fff4; padding: 0.5em 1em; border-radius: 4px; }
.answer { border: 2px solid #b36b00; background: #fff8ec; padding: 0.5em 1em; margin: 1em 0; border-radius: 4px; }
.answer h2, .calm h2 { border: none; margin-top: 0.2em; }
figure { margin: 0.8em 0 1.4em; }
figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-size: 0.85em; color: #444; margin-top: 0.3em; max-width: 70em; }
.note { font-size: 0.85em; color: #555; }
code { font-size: 0.95em; }
"""


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def count(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return f"{int(value):,}"


def seconds(value: float | None) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return human_time(value)


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f} %"


def rate(value: float | None) -> str:
    return "as fast as it can" if value is None else f"{value:,.0f}/s" if value >= 100 else f"{value:.3g}/s"


class Cell:
    """A table cell: text, right-aligned if a number, red if ``bad``."""

    def __init__(self, text: Any, number: bool = False, bad: bool = False) -> None:
        self.text, self.number, self.bad = str(text), number, bad

    def render(self) -> str:
        classes = [name for name, on in (("n", self.number), ("bad", self.bad)) if on]
        attr = f' class="{" ".join(classes)}"' if classes else ""
        return f"<td{attr}>{esc(self.text)}</td>"


def table(head: Sequence[str], rows: Iterable[tuple[Sequence[Cell | str], bool]]) -> str:
    """``rows``: (cells, flagged); a flagged row is tinted."""
    out = ["<table>" + ("<thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead>" if head else "") + "<tbody>"]
    for cells, flagged in rows:
        rendered = "".join((c if isinstance(c, Cell) else Cell(c)).render() for c in cells)
        out.append(f'<tr class="flagged">{rendered}</tr>' if flagged else f"<tr>{rendered}</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def figure(png: bytes, alt: str, caption: str, anchor: str) -> str:
    return (f'<figure id="{esc(anchor)}"><img src="{data_uri(png)}" alt="{esc(alt)}">'
            f"<figcaption>{caption}</figcaption></figure>")


def page(title: str, body: Sequence[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def bytes_text(value: float) -> str:
    return human_bytes(value)
