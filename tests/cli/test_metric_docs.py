"""The pages that list metric names say what ``zsim.metrics`` says, so they cannot drift
from it: docs/sweeps.md's table of names covers every field of every family and names
nothing the grammar does not know, its pooled names are the pooled names, docs/compare.md's
table of preferred directions is ``PREFERENCES`` in order, and every ``zsim compare``
title line a page shows (``NAME - LABEL; lower is better (FAMILY)``) is the label and
direction the module gives."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from zsim import metrics

DOCS = Path(__file__).resolve().parents[2] / "docs"
#: what a placeholder of the table stands for in a concrete name
SAMPLES = {"<pipe name>": "a->b (tcp send)", "<code>": "overloaded"}


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end > 0 else len(text)]


def _expand(pattern: str) -> list[str]:
    """``a.{b,c}_{d,e}`` -> every combination; placeholders (``<name>``) -> sample names."""
    for placeholder, sample in SAMPLES.items():
        pattern = pattern.replace(placeholder, sample)
    pattern = re.sub(r"<[^>]+>", "x", pattern)
    parts = re.split(r"\{([^}]*)\}", pattern)
    choices = [[part] if i % 2 == 0 else part.split(",") for i, part in enumerate(parts)]
    return ["".join(combination) for combination in itertools.product(*choices)]


def documented_names() -> list[str]:
    """The names of docs/sweeps.md's table (first column) and its paragraph on pooled names."""
    text = _section((DOCS / "sweeps.md").read_text(), "### Metric names")
    names: list[str] = []
    for line in text.splitlines():
        if not line.startswith("| `"):
            continue
        previous = ""
        for span in re.findall(r"`([^`]+)`", line.split(" | ")[0]):
            if "<field>" in span:
                continue  # a template's aggregates over any field above
            if span.startswith("."):  # `.backlog_at_end`: of the name before it
                span = previous.rsplit(".", 1)[0] + span
            previous = span
            names += _expand(span)
    pooled = text[text.index("**Pooled**"):]
    pooled = pooled[:pooled.index("\n\n")]
    names += [name for span in re.findall(r"`([^`]+)`", pooled) if "*" not in span for name in _expand(span) if "..." not in name]
    return names


def test_the_table_of_names_is_the_grammar() -> None:
    names = documented_names()
    unknown = [name for name in names if metrics.parse(name) is None]
    assert unknown == []
    documented: dict[str, set[str]] = {}
    for name in names:
        parsed = metrics.parse(name)
        assert parsed is not None
        documented.setdefault(parsed.kind, set()).add(parsed.field)
    for prefix, family in metrics.FAMILIES.items():
        assert set(family.fields) - documented.get(prefix, set()) == set(), prefix
    assert set(metrics.POOLED) - set(metrics.POOLED_ALIASES) - documented["pooled"] == set()
    assert set(metrics.MACHINE_FIELDS) <= documented["machine"]


def test_the_table_of_preferred_directions_is_the_modules() -> None:
    text = _section((DOCS / "compare.md").read_text(), "**Preferred directions**")
    table_text = text[text.index("| family |"):]
    lines = list(itertools.takewhile(lambda line: line.startswith("|"), table_text.splitlines()))[2:]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines]
    table = [(row[0], row[2]) for row in rows]
    expected = [(rule.family, rule.prefers or "none") for rule in metrics.PREFERENCES]
    assert table[:len(expected)] == expected
    assert table[len(expected):] == [("anything else (`batch_s`)", "none")]
    # every word the table says a family's names contain is found by its rule's pattern
    for (family, _), row in zip(expected, rows, strict=False):
        rule = next(r for r in metrics.PREFERENCES if r.family == family)
        for word in re.findall(r"`([a-z_0-9]+)`", row[1]):
            assert re.search(rule.pattern, word), (family, word)


def test_every_compare_title_a_page_shows_is_the_modules_label_and_direction() -> None:
    title = re.compile(r"^(\S+) - (.+); (lower|higher) is better \((.+)\)$")
    shown = 0
    for page in DOCS.glob("*.md"):
        for line in page.read_text().splitlines():
            found = title.match(line)
            if found is None or found.group(4) == "--prefer":
                continue
            name, label, prefers, family = found.groups()
            assert (metrics.label(name), metrics.preference(name)) == (label, (prefers, family)), f"{page.name}: {line}"
            shown += 1
    assert shown >= 10
