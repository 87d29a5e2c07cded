"""The tables of docs/validation.md's section "Conformance with libzmq's own tests", made
from the tests themselves: every ``@ports`` record of tests/conformance, and
``left_out.LEFT_OUT``. ``tests/conformance/test_table.py`` checks the page holds exactly
these; after changing a port, rewrite the page with::

    python tests/conformance/table.py
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "validation.md"
BEGIN, END = "<!-- conformance:begin -->", "<!-- conformance:end -->"

if __name__ == "__main__":  # run as a script: import the package the way pytest does
    sys.path.insert(0, str(ROOT / "tests"))

import conformance  # noqa: E402
from conformance.left_out import LEFT_OUT, SKIPPED_FILES  # noqa: E402
from conformance.ported import Port  # noqa: E402

#: conformance modules that port nothing themselves
NOT_PORTS = {"test_table"}


def _order(where: str) -> tuple[str, int, str]:
    file, rest = where.split(":", 1)
    line = re.match(r"\d+", rest)
    return file, int(line.group(0)) if line else 0, rest


def ported() -> list[tuple[Port, str]]:
    """Every ported assertion and its test (``module::function``), by C file and line."""
    found = []
    for module_info in pkgutil.iter_modules(conformance.__path__):
        if not module_info.name.startswith("test_") or module_info.name in NOT_PORTS:
            continue
        module = importlib.import_module(f"conformance.{module_info.name}")
        for name, value in vars(module).items():
            port = getattr(value, "port", None)
            if name.startswith("test_") and isinstance(port, Port):
                found.append((port, f"{module_info.name}.py::{name}"))
    return sorted(found, key=lambda item: _order(item[0].where))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def section() -> str:
    """The Markdown between the page's markers."""
    ports = ported()
    files = sorted({port.where.split(":")[0] for port, _ in ports})
    lines = [f"{len(ports)} assertions ported from {len(files)} test files, every one passing; "
             f"{len(LEFT_OUT)} left out. Generated from tests/conformance by `python tests/conformance/table.py`.", "",
             "| libzmq assertion | what it asserts | transports | zsim's result | test |", "|---|---|---|---|---|"]
    for port, test in ports:
        transports = ", ".join(port.transports) if port.transports != ("none",) else "(no endpoint)"
        lines.append(f"| {port.where} | {_cell(port.asserts)} | {transports} | {_cell(port.result)} | `{test}` |")
    lines += ["", "Left out:", "", "| libzmq assertion | what it asserts | why not ported |", "|---|---|---|"]
    for where, asserts, why in sorted(LEFT_OUT, key=lambda row: _order(row[0])):
        lines.append(f"| {where} | {_cell(asserts)} | {_cell(why)} |")
    lines += ["", "Test files with no queuing assertion to port:", "", "| files | why |", "|---|---|"]
    lines += [f"| {_cell(files_)} | {_cell(why)} |" for files_, why in SKIPPED_FILES]
    return "\n".join(lines)


def page_section(text: str) -> str:
    """What the page holds between the markers."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[start:end].strip("\n")


def main() -> None:
    text = DOC.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOC.write_text(text[:start] + "\n" + section() + "\n" + text[end:])
    print(f"rewrote {DOC.relative_to(ROOT)}: {len(ported())} ported, {len(LEFT_OUT)} left out")


if __name__ == "__main__":
    main()
