"""Topology templates: one block written once, ``count`` members made from it.

A pipeline with eight workers used to be eight hand-written copies of a process, two
sockets and a ``[[recv]]``, so the number of workers could not be a sweep axis. Here, as
with OMNeT++'s module vectors (``worker[N]`` swept with ``${N=4,8}``), the worker is
written once::

    [[process]]
    name = "worker{i+1}"          # members worker1 .. worker8
    count = 8

    [[socket]]
    name = "w{i+1}_in"            # one per member of the counted process it names
    process = "worker"            # the template's name (or "worker{i+1}")
    connect = "tcp://127.0.0.1:5557"

    [[recv]]
    socket = "w_in"               # expanded with its socket: one per member
    forward_to = "w_out"          # the same member's socket

What counts: ``count = N`` on a ``[[process]]`` makes N members, and every ``[[socket]]``
whose ``process`` names that template, and every ``[[send]]``/``[[recv]]`` on such a
socket, is made once per member. A ``[[socket]]`` outside a counted process may carry its
own ``count`` (its workloads follow it); a ``[[send]]``/``[[recv]]`` on an ordinary socket
may carry ``copies = N`` (their ``count`` already means a number of messages).

Placeholders. In every string of a member block, ``{i}`` is the member's index
(0 .. N-1) and ``{i+1}``, ``{5600+i}``, ``{2*i+1}`` are small linear forms of it
(integers, ``+``, ``-``, ``integer*i``; parsed here, never ``eval``-ed); ``{{`` and ``}}``
are literal braces. A template's *name* is its name without the placeholders
(``w{i+1}_in`` -> ``w_in``): sweep paths (``process.worker.count``) and the member
aggregates of ``zsim.metrics.flat_metrics`` (``socket.w_in.sum_delivered``) use it.

Order. Members are laid out member by member where the template's first block of each
section was: sockets ``w1_in, w1_out, w2_in, w2_out, ...``, exactly as one writes them by
hand, so a templated scenario and its hand-written twin are the same scenario (same
blocks in the same order, same digest, same ledger).

Expansion runs first in ``zsim.spec.from_dict``; the model, the validation harness and
sweeps only see ordinary blocks. Every mistake is one ``ScenarioError`` naming the block
and field: a count that is not an integer >= 0, a placeholder other than ``i``, ``{i}``
in a block that is not a member, a count on a socket inside a counted process, member
names that collide, a template name that is also the name of an ordinary block.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import ScenarioError

#: Sections whose blocks may be templates (``proxy`` only may not use ``{i}``).
SECTIONS = ("host", "link", "process", "socket", "send", "recv", "call")
#: The field that gives a block's number of members, per section.
COUNT_FIELD = {"host": "count", "link": "count", "process": "count", "socket": "count", "send": "copies", "recv": "copies",
               "call": "copies"}
#: Most members one template may have: far beyond any topology zsim simulates in useful
#: time, low enough that a typo (``count = 1e9``) is refused at once instead of filling memory.
MAX_MEMBERS = 100_000
_EXAMPLES = "{i}, {i+1}, {5600+i}, {2*i+1}"
#: ``{{``, ``}}``, a placeholder ``{...}``, or a stray brace.
_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
#: One term of a placeholder: ``K*i``, ``i*K``, ``K`` or ``i`` (K of at most 9 digits).
_TERM = re.compile(r"([+-]?)(\d{1,9}\*i|i\*\d{1,9}|\d{1,9}|i)")
#: Indices at which two name patterns are compared (``worker{i}`` is not ``worker{i+1}``).
_PROBES = (0, 1, 2, 3, 10)


# --------------------------------------------------------------------------------------
# Placeholders


def _linear(text: str) -> tuple[int, int] | None:
    """``a*i + b`` as ``(a, b)`` for a placeholder's text, or None if it is not one."""
    compact = "".join(text.split())
    if not compact:
        return None
    a = b = 0
    position = 0
    uses_i = False
    while position < len(compact):
        match = _TERM.match(compact, position)
        if match is None or (position > 0 and not match.group(1)):
            return None
        sign = -1 if match.group(1) == "-" else 1
        term = match.group(2)
        if term == "i":
            a += sign
            uses_i = True
        elif "*" in term:
            a += sign * int(term.replace("*", "").replace("i", ""))
            uses_i = True
        else:
            b += sign * int(term)
        position = match.end()
    return (a, b) if uses_i else None


@dataclass(frozen=True)
class Text:
    """A string of a member block, parsed once: literal pieces and ``(a, b)`` forms."""

    parts: tuple[str | tuple[int, int], ...]

    @property
    def constant(self) -> bool:
        return all(isinstance(part, str) for part in self.parts)

    def render(self, i: int) -> str:
        return "".join(part if isinstance(part, str) else str(part[0] * i + part[1]) for part in self.parts)

    def stripped(self) -> str:
        """The text without its placeholders (a template's name)."""
        return "".join(part for part in self.parts if isinstance(part, str))


def parse_text(text: str, path: str) -> Text:
    """Parse the placeholders of one string of a member block (``ScenarioError`` naming
    ``path`` for ``{j}``, ``{i**2}``, ``{i:02}`` or a stray brace)."""
    parts: list[str | tuple[int, int]] = []
    literal: list[str] = []
    position = 0
    for match in _TOKEN.finditer(text):
        literal.append(text[position:match.start()])
        position = match.end()
        token = match.group(0)
        if token in ("{{", "}}"):
            literal.append(token[0])
            continue
        if match.group(1) is None:
            raise ScenarioError(path, f"{text!r} has a single {token!r}; a placeholder is {{...}} ({_EXAMPLES}), a literal brace is "
                                      f"written twice ({token * 2})")
        form = _linear(match.group(1))
        if form is None:
            content = match.group(1).strip()
            if re.fullmatch(r"[A-Za-z_]\w*", content):
                reason = f"unknown placeholder {{{content}}}; the member index is i ({_EXAMPLES})"
            else:
                reason = f"placeholder {token} is not a sum of i, integers and integer*i ({_EXAMPLES})"
            raise ScenarioError(path, f"in {text!r}: {reason}")
        if literal:
            parts.append("".join(literal))
            literal = []
        parts.append(form)
    literal.append(text[position:])
    if "".join(literal):
        parts.append("".join(literal))
    return Text(tuple(parts))


def uses_index(text: str) -> bool:
    """Whether an ordinary string holds something meant as a member placeholder (``{i}``,
    ``{i+1}``, ``{5600+i}``): in a block that is not a member that is a mistake."""
    for match in re.finditer(r"\{([^{}]*)\}", text.replace("{{", "").replace("}}", "")):
        if _linear(match.group(1)) is not None:
            return True
    return False


def template_name(name: Any) -> str | None:
    """The template name of a block name with placeholders (``w{i+1}_in`` -> ``w_in``), or
    None when ``name`` is not a string with a valid placeholder."""
    if not isinstance(name, str) or "{" not in name:
        return None
    try:
        text = parse_text(name, "")
    except ScenarioError:
        return None
    return None if text.constant else text.stripped()


def member_pattern(name: str) -> re.Pattern[str] | None:
    """A regular expression matching every member name of a name pattern, whatever its
    count (``w{i+1}_in`` -> ``w-?\\d+_in``), or None if ``name`` has no placeholder."""
    try:
        text = parse_text(name, "")
    except ScenarioError:
        return None
    if text.constant:
        return None
    return re.compile("".join(re.escape(part) if isinstance(part, str) else r"-?\d+" for part in text.parts))


# --------------------------------------------------------------------------------------
# What expansion gives back


@dataclass(frozen=True)
class Template:
    """One template of a parsed scenario and its members (in order of ``i``)."""

    kind: str  # "host", "link", "process", "socket", "send" or "recv"
    name: str  # the template name: the block's name without placeholders ("w_in")
    pattern: str  # the name as written ("w{i+1}_in"; a workload without a name: "recv.w{i+1}_in")
    count: int
    root: str  # the block whose count makes the members ("process[worker]")
    members: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """How errors name it: ``socket[w_in]``, ``recv[w_in]`` (a workload without a name
        goes by its socket, as ``zsim.spec.workload_label`` does)."""
        return section_label(self.kind, self.name)


@dataclass
class Expansion:
    """``raw`` with every template expanded, and where each member came from."""

    raw: dict[str, Any]
    #: per section, per expanded block: (template name, i) or None for an ordinary block
    origin: dict[str, list[tuple[str, int] | None]] = field(default_factory=dict)
    #: per section, per template name: (pattern, count, root label)
    templates: dict[str, dict[str, tuple[str, int, str]]] = field(default_factory=dict)

    def finish(self, names: Mapping[str, list[str]]) -> tuple[Template, ...]:
        """The templates with their members' names, ``names[section]`` being the parsed
        blocks' names in the order of ``raw[section]`` (workload names are decided by the
        parser: ``recv.w1_in`` for a ``[[recv]]`` without one)."""
        found: list[Template] = []
        for section, templates in self.templates.items():
            members: dict[str, list[str]] = {name: [] for name in templates}
            for index, origin in enumerate(self.origin.get(section, [])):
                if origin is not None:
                    members[origin[0]].append(names[section][index])
            for name, (pattern, count, root) in templates.items():
                found.append(Template(section, name, pattern, count, root, tuple(members[name])))
        return tuple(found)

    def explain(self, error: ScenarioError) -> ScenarioError:
        """``error`` (raised while parsing the expanded blocks) with the template that made
        the block it names, or the template behind an unknown name: a member is not in
        the file, its template is."""
        note = self._note(error)
        if note is None:
            return error
        return type(error)(error.path, f"{error.reason} ({note})")

    def _note(self, error: ScenarioError) -> str | None:
        head = re.match(r"^(host|link|process|socket|send|recv)\[([^\]]+)\]", error.path)
        if head is not None:
            section, label = head.groups()
            entries = self.raw.get(section)
            labels = [_error_label(section, entry) for entry in entries] if isinstance(entries, list) else []
            for index, origin in enumerate(self.origin.get(section, [])):
                if origin is not None and labels[index] == label:
                    name, i = origin
                    pattern, count, root = self.templates[section][name]
                    return f"{label} is member i = {i} of {section_label(section, name)} = {pattern!r}, made by {root} with {_count(count)}"
        unknown = re.search(r"unknown (process|socket) '([^']+)'", error.reason)
        if unknown is not None:
            section, name = unknown.groups()
            templates = self.templates.get(section, {})
            if name in templates:
                pattern, count, root = templates[name]
                return (f"{name!r} is the template {section}[{name}] = {pattern!r} ({_count(count)}, made by {root}); a block "
                        "that is not expanded with it names one member")
            for template, (pattern, count, root) in templates.items():
                regex = member_pattern(pattern)
                if regex is not None and regex.fullmatch(name):
                    if count == 0:
                        return f"{section_label(section, template)} = {pattern!r} has no members: {root} has count = 0"
                    return f"{section_label(section, template)} = {pattern!r}, made by {root} with count = {count}, has no member {name!r}"
        return None


def section_label(section: str, name: str) -> str:
    """``socket[w_in]``; for workloads ``recv[w_in]`` rather than ``recv[recv.w_in]``."""
    prefix = section + "."
    return f"{section}[{name[len(prefix):] if name.startswith(prefix) else name}]"


def _error_label(section: str, entry: Any) -> str:
    """The name the parser's errors give a block (``zsim.spec._label``)."""
    if not isinstance(entry, dict):
        return ""
    key = "name" if "name" in entry or section in ("process", "socket") else "socket"
    value = entry.get(key)
    return value if isinstance(value, str) else ""


def _count(count: int) -> str:
    return "count = 0: no members" if count == 0 else f"count = {count}"


# --------------------------------------------------------------------------------------
# Expansion


@dataclass
class _Root:
    """A block whose count makes members; every block expanded with it shares it."""

    label: str
    count: int


@dataclass
class _Block:
    section: str
    entry: dict[str, Any]
    label: str
    root: _Root | None = None
    name: str | None = None  # template name, for a member block
    pattern: str | None = None
    #: reference fields naming a template, replaced by the member's name: field -> template
    references: dict[str, str] = field(default_factory=dict)


def expand_templates(raw: dict[str, Any], valid_name: Callable[[str], bool]) -> Expansion:
    """Expand every template of ``raw`` (a scenario dict, not modified).

    ``valid_name`` is the scenario's rule for names (``zsim.spec``). Sections that are not
    arrays of tables are left alone (the parser reports them). A scenario without
    templates comes back as it is, the same object: its digest cannot change.
    """
    entries = {section: _entries(raw, section) for section in (*SECTIONS, "proxy")}
    if not any(_may_template(section, entry) for section, blocks in entries.items() for entry in blocks):
        _check_sizes({section: [_Block(section, entry, _plain_label(section, index, entry)) for index, entry in enumerate(found)]
                      for section, found in entries.items() if section in SECTIONS})
        return Expansion(raw)
    blocks: dict[str, list[_Block]] = {section: [] for section in SECTIONS}
    templates: dict[str, dict[str, _Block]] = {section: {} for section in SECTIONS}

    for section in ("host", "link", "process"):
        for index, entry in enumerate(entries[section]):
            block = _Block(section, entry, _plain_label(section, index, entry))
            if "count" in entry:
                _make_template(block, _Root("", _count_of(entry, "count", block)), valid_name, templates)
            blocks[section].append(block)

    for index, entry in enumerate(entries["socket"]):
        block = _Block("socket", entry, _plain_label("socket", index, entry))
        owner = _reference(entry.get("process"), templates["process"], f"{block.label}.process", "process")
        if owner is not None:
            if "count" in entry:
                root = _root_of(templates["process"][owner])
                raise ScenarioError(f"{_template_label(block)}.count", f"the socket belongs to {root.label} (process = "
                                                                       f"{entry['process']!r}), a counted process that makes one "
                                                                       f"per member: their number is the count of {root.label}; "
                                                                       "remove this count")
            block.references["process"] = owner
            _make_template(block, _root_of(templates["process"][owner]), valid_name, templates)
        elif "count" in entry:
            _make_template(block, _Root("", _count_of(entry, "count", block)), valid_name, templates)
        blocks["socket"].append(block)

    for section in ("send", "recv", "call"):
        for index, entry in enumerate(entries[section]):
            block = _Block(section, entry, _plain_label(section, index, entry))
            owner = _reference(entry.get("socket"), templates["socket"], f"{block.label}.socket", "socket")
            if owner is not None:
                socket_block = templates["socket"][owner]
                if "copies" in entry:
                    raise ScenarioError(f"{_template_label(block)}.copies", f"the {section} is on the socket template "
                                                                        f"{_member_label(socket_block)} and is made once per member "
                                                                        "with it: remove copies")
                block.references["socket"] = owner
                _make_template(block, _root_of(socket_block), valid_name, templates, socket_block)
            elif "copies" in entry:
                _make_template(block, _Root("", _count_of(entry, "copies", block)), valid_name, templates)
            if "forward_to" in entry:
                target = _reference(entry["forward_to"], templates["socket"], f"{_member_label(block)}.forward_to", "socket")
                if target is not None:
                    target_block = templates["socket"][target]
                    if block.root is None or target_block.root is not block.root:
                        raise ScenarioError(f"{_member_label(block)}.forward_to", f"socket {entry['forward_to']!r} is the template "
                                                                                  f"{_member_label(target_block)}, made by "
                                                                                  f"{_root_of(target_block).label}; a stage forwards "
                                                                                  "to a socket of its own member: name one socket")
                    block.references["forward_to"] = target
            blocks[section].append(block)

    for index, entry in enumerate(entries["proxy"]):
        label = _plain_label("proxy", index, entry)
        for key in ("frontend", "backend"):
            target = _reference(entry.get(key), templates["socket"], f"{label}.{key}", "socket")
            if target is not None:
                template = _member_label(templates["socket"][target])
                raise ScenarioError(f"{label}.{key}", f"socket {entry[key]!r} is the template {template}; a proxy is not expanded "
                                                      "with templates: name one member")
        _check_ordinary(entry, label)

    for section in SECTIONS:
        for block in blocks[section]:
            if block.root is None:
                _check_ordinary(block.entry, block.label)
    _check_template_names(blocks, templates)
    _check_sizes(blocks)  # before a member is made
    return _build(raw, blocks, templates)


def _count_field(root: _Root) -> str:
    section = root.label.split("[", 1)[0]
    return f"{root.label}.{COUNT_FIELD.get(section, 'count')}"


def _text_chars(value: Any) -> int:
    """Characters of the strings with placeholders in a block: what each member renders anew."""
    if isinstance(value, str):
        return len(value) if "{" in value else 0
    if isinstance(value, dict):
        return sum(_text_chars(item) for item in value.values())
    if isinstance(value, list):
        return sum(_text_chars(item) for item in value)
    return 0


def _check_sizes(blocks: Mapping[str, list[_Block]]) -> None:
    """The topology's size after expansion, counted from the blocks and their counts (no
    member made yet): sockets, processes, workloads, I/O threads and rendered text against
    ``zsim.limits``; over a bound, one line naming the count that drove it."""
    from . import limits

    def total(sections: tuple[str, ...]) -> tuple[int, str]:
        count = 0
        drivers: dict[str, int] = {}
        for section in sections:
            for block in blocks.get(section, []):
                members = block.root.count if block.root is not None else 1
                count += members
                key = _count_field(block.root) if block.root is not None else f"[[{section}]]"
                drivers[key] = drivers.get(key, 0) + members
        return count, max(drivers, key=lambda key: drivers[key]) if drivers else sections[0]

    for what, sections, bound in (("sockets", ("socket",), "MAX_SOCKETS"), ("processes", ("process",), "MAX_PROCESSES"),
                                  ("hosts", ("host",), "MAX_PROCESSES"), ("links", ("link",), "MAX_SOCKETS"),
                                  ("[[send]] and [[recv]] workloads", ("send", "recv"), "MAX_WORKLOADS")):
        count, driver = total(sections)
        limits.check_size(what, count, bound, driver)
    io_threads = 0
    worst = ("", 0, 0, 0)
    for block in blocks.get("process", []):
        members = block.root.count if block.root is not None else 1
        each = block.entry.get("io_threads", 1)
        each = each if isinstance(each, int) and not isinstance(each, bool) and each > 0 else 1
        io_threads += members * each
        if members * each > worst[1]:
            worst = (block.label if block.root is None else _member_label(block), members * each, members, each)
    if worst[0]:
        label, _, members, each = worst
        how = f"{members:,} members x io_threads = {each:,} " if members > 1 else f"io_threads = {each:,} "
        limits.check_size("I/O threads", io_threads, "MAX_IO_THREADS", f"{label}.io_threads", how)
    chars = 0
    driver = ""
    for found in blocks.values():
        for block in found:
            if block.root is not None:
                text = _text_chars(block.entry) * block.root.count
                chars += text
                driver = driver or _count_field(block.root)
    if chars:
        limits.check_size("characters of text (names, endpoints, topics with placeholders)", chars, "MAX_EXPANDED_CHARS", driver)


def _entries(raw: Mapping[str, Any], section: str) -> list[dict[str, Any]]:
    value = raw.get(section, [])
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        return []
    return value


def _may_template(section: str, entry: dict[str, Any]) -> bool:
    if section in COUNT_FIELD and COUNT_FIELD[section] in entry:
        return True
    return any("{" in text for text in _strings(entry))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def _plain_label(section: str, index: int, entry: dict[str, Any]) -> str:
    key = "name" if "name" in entry or section in ("host", "link", "process", "socket", "proxy") else "socket"
    value = entry.get(key)
    return f"{section}[{value}]" if isinstance(value, str) and value else f"{section}[{index}]"


def _root_of(block: _Block) -> _Root:
    """The root of a template's block (every template has one)."""
    assert block.root is not None
    return block.root


def _template_label(block: _Block) -> str:
    """A block's label by its template name when its name has placeholders."""
    name = template_name(block.entry.get("name"))
    return f"{block.section}[{name}]" if name else block.label


def _member_label(block: _Block) -> str:
    """A member block's label: its template's name (``socket[w_in]``)."""
    return section_label(block.section, block.name) if block.name is not None else _template_label(block)


def _count_of(entry: dict[str, Any], key: str, block: _Block) -> int:
    value = entry[key]
    name = template_name(entry.get("name"))
    where = f"{block.section}[{name}].{key}" if name else f"{block.label}.{key}"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not value.is_integer()):
        raise ScenarioError(where, f"must be an integer >= 0 (the number of members), got {value!r}")
    if value < 0:
        raise ScenarioError(where, f"must be an integer >= 0 (the number of members), got {value!r}")
    if value > MAX_MEMBERS:
        raise ScenarioError(where, f"must be at most {MAX_MEMBERS:,} members, got {int(value):,}")
    return int(value)


def _make_template(block: _Block, root: _Root, valid_name: Callable[[str], bool], templates: dict[str, dict[str, _Block]],
                   socket_block: _Block | None = None) -> None:
    """Make ``block`` a member block of ``root``: its name pattern and template name."""
    section, entry = block.section, block.entry
    block.root = root
    own = "count" if section in ("host", "link", "process", "socket") else "copies"
    if "name" not in entry and section in ("host", "link"):
        raise ScenarioError(f"{block.label}.name", f"a counted [[{section}]] needs a name with the member index, e.g. "
                                                   f"name = \"{section}{{i}}\"")
    if "name" in entry:
        if not isinstance(entry["name"], str):
            raise ScenarioError(f"{block.label}.name", f"must be a string, got {entry['name']!r}")
        from .limits import check_text

        pattern = check_text(entry["name"], f"{block.label}.name")
        text = parse_text(pattern, f"{block.label}.name")
        if text.constant:
            why = (f"it has {own}" if own in entry else
                   f"it is made once per member of {root.label}")
            raise ScenarioError(f"{block.label}.name", f"{pattern!r} would name every member the same ({why}); put the member index in "
                                                       f"it, e.g. {pattern + '{i}'!r}")
        name = text.stripped()
        if not valid_name(name):
            raise ScenarioError(f"{block.label}.name", f"without its placeholders {pattern!r} must still be a name (letters, digits, "
                                                       f"'_', '-', '.'): it names the template in sweep paths and metrics, got "
                                                       f"{name!r}")
    else:  # a workload without a name: the parser names it "<kind>.<socket>"
        socket = entry.get("socket")
        if socket_block is not None:
            pattern, name = f"{section}.{socket_block.pattern}", f"{section}.{socket_block.name}"
        elif isinstance(socket, str) and template_name(socket) is not None:
            pattern, name = f"{section}.{socket}", f"{section}.{template_name(socket)}"
        else:
            raise ScenarioError(f"{block.label}.name", f"the {_count_of(entry, 'copies', block)} copies on socket {socket!r} need "
                                                       "names of their own, e.g. name = \"<name>{i}\"")
    block.name, block.pattern = name, pattern
    _render(entry, _member_label(block), 0)  # every placeholder checked now, even with count = 0
    if not root.label:  # the block whose count makes the members
        root.label = section_label(section, name)
    if name in templates[section]:
        other = templates[section][name]
        raise ScenarioError(f"{block.label}.name", f"the template name {name!r} ({pattern!r} without its placeholders) is also the "
                                                   f"template name of {other.pattern!r}; sweep paths and metrics could not tell them "
                                                   "apart")
    templates[section][name] = block


def _reference(value: Any, templates: Mapping[str, _Block], path: str, what: str) -> str | None:
    """The template a reference field names (by its template name, or by its name pattern),
    or None for an ordinary name. A pattern that names a template but gives other members
    (``worker{i}`` for ``worker{i+1}``) is an error."""
    if not isinstance(value, str):
        return None
    if value in templates:
        return value
    name = template_name(value)
    if name is None or name not in templates:
        return None
    block = templates[name]
    if value != block.pattern:
        assert block.pattern is not None
        probe = parse_text(value, path)
        own = parse_text(block.pattern, path)
        if any(probe.render(i) != own.render(i) for i in _PROBES):
            raise ScenarioError(path, f"{value!r} names the {what} template {_member_label(block)} = {block.pattern!r} but gives other "
                                      f"members ({probe.render(0)!r} for i = 0, not {own.render(0)!r}); write {name!r} or "
                                      f"{block.pattern!r}")
    return name


def _check_ordinary(entry: dict[str, Any], label: str, path: str = "") -> None:
    """An ordinary block (no count, not in a counted process) may not use ``{i}``."""
    for key, value in entry.items():
        where = f"{path}.{key}" if path else str(key)
        items: list[tuple[str, Any]] = [(where, value)]
        if isinstance(value, list):
            items = [(f"{where}[{n}]", item) for n, item in enumerate(value)]
        for item_path, item in items:
            if isinstance(item, dict):
                _check_ordinary(item, label, item_path)
            elif isinstance(item, str) and uses_index(item):
                raise ScenarioError(f"{label}.{item_path}", f"{item!r} uses the member index {{i}} but the block is not a template: "
                                                            "give it a count (a [[process]] or [[socket]]; copies on a [[send]] or "
                                                            "[[recv]]), or put it in a counted process (process = \"<template "
                                                            "name>\") or on a templated socket")


def _check_template_names(blocks: Mapping[str, list[_Block]], templates: Mapping[str, dict[str, _Block]]) -> None:
    """A template's name is not also the name of an ordinary block of its section."""
    for section in SECTIONS:
        for block in blocks[section]:
            name = block.entry.get("name")
            if block.root is None and isinstance(name, str) and name in templates[section]:
                template = templates[section][name]
                raise ScenarioError(f"{block.label}.name", f"{name!r} is also the name of the template {_member_label(template)} = "
                                                           f"{template.pattern!r}; sweep paths and metrics could not tell them apart")


def _render(value: Any, path: str, i: int) -> Any:
    if isinstance(value, str):
        return parse_text(value, path).render(i) if "{" in value or "}" in value else value
    if isinstance(value, dict):
        return {key: _render(item, f"{path}.{key}", i) for key, item in value.items()}
    if isinstance(value, list):
        return [_render(item, f"{path}[{n}]", i) for n, item in enumerate(value)]
    return value


def _member(block: _Block, i: int, members: Mapping[str, Mapping[str, list[str]]]) -> dict[str, Any]:
    own = COUNT_FIELD[block.section] if block.root is not None and block.root.label == _member_label(block) else None
    entry = {key: value for key, value in block.entry.items() if key != own}
    label = _member_label(block)
    result = {key: _render(value, f"{label}.{key}", i) for key, value in entry.items()}
    for key, template in block.references.items():
        section = "process" if key == "process" else "socket"
        result[key] = members[section][template][i]
    return result


def _build(raw: dict[str, Any], blocks: Mapping[str, list[_Block]], templates: Mapping[str, dict[str, _Block]]) -> Expansion:
    """The expanded scenario: per section, ordinary blocks in place and each root's member
    blocks member by member where its first block in that section was."""
    members: dict[str, dict[str, list[str]]] = {section: {} for section in SECTIONS}
    for section in ("process", "socket"):
        for name, block in templates[section].items():
            assert block.root is not None and block.pattern is not None
            text = parse_text(block.pattern, f"{_member_label(block)}.name")
            members[section][name] = [text.render(i) for i in range(block.root.count)]
    expanded = copy.copy(raw)
    result = Expansion(expanded)
    for section in SECTIONS:
        if section not in raw or not blocks[section]:
            continue
        out: list[dict[str, Any]] = []
        origin: list[tuple[str, int] | None] = []
        done: set[int] = set()
        for block in blocks[section]:
            root = block.root
            if root is None:
                out.append(copy.deepcopy(block.entry))
                origin.append(None)
                continue
            if id(root) in done:
                continue
            done.add(id(root))
            group = [b for b in blocks[section] if b.root is root]
            for i in range(root.count):
                for member_block in group:
                    assert member_block.name is not None
                    out.append(_member(member_block, i, members))
                    origin.append((member_block.name, i))
        expanded[section] = out
        result.origin[section] = origin
        result.templates[section] = {
            name: (block.pattern or name, block.root.count if block.root else 0, block.root.label if block.root else "")
            for name, block in templates[section].items()
        }
    _check_collisions(result, templates)
    return result


def _check_collisions(result: Expansion, templates: Mapping[str, dict[str, _Block]]) -> None:
    """Two blocks of a section with one name, at least one of them a member: say which
    template made it (the parser would name a member the file does not contain)."""
    for section in SECTIONS:
        seen: dict[str, tuple[str, int] | None] = {}
        for entry, origin in zip(result.raw.get(section, []), result.origin.get(section, []), strict=True):
            name = entry.get("name")
            if not isinstance(name, str):
                continue
            if name in seen and (origin is not None or seen[name] is not None):
                mine, other = (origin, seen[name]) if origin is not None else (seen[name], origin)
                assert mine is not None
                block = templates[section][mine[0]]
                clash = (f"member i = {other[1]} of {section}[{other[0]}]" if other is not None else f"another [[{section}]]")
                if other is not None and other[0] == mine[0]:
                    clash = f"its member i = {other[1]}"
                raise ScenarioError(f"{section}[{mine[0]}].name", f"member i = {mine[1]} of {block.pattern!r} is named {name!r}, "
                                                                  f"the name of {clash}")
            seen[name] = origin
