"""docs/validation.md lists every ported libzmq assertion and every one left out, exactly
as tests/conformance has them (``conformance.table``), and each test there says which
assertion it ports, in the one registry (``conformance.ported.Port``) the table reads."""

from __future__ import annotations

import importlib
import pkgutil

import conformance
from conformance.left_out import LEFT_OUT
from conformance.ported import Port
from conformance.table import DOC, NOT_PORTS, page_section, ported, section


def test_docs_list_exactly_the_ported_and_left_out_assertions():
    assert page_section(DOC.read_text()) == section(), "docs/validation.md is stale: run python tests/conformance/table.py"


def test_every_conformance_test_names_the_assertion_it_ports():
    for module_info in pkgutil.iter_modules(conformance.__path__):
        if not module_info.name.startswith("test_") or module_info.name in NOT_PORTS:
            continue
        module = importlib.import_module(f"conformance.{module_info.name}")
        tests = [name for name, value in vars(module).items() if name.startswith("test_") and callable(value)]
        assert tests, module_info.name
        assert [name for name in tests if not isinstance(getattr(getattr(module, name), "port", None), Port)] == [], module_info.name


def test_each_assertion_is_ported_once_and_not_also_left_out():
    wheres = [port.where for port, _ in ported()]
    assert len(wheres) == len(set(wheres))
    assert sorted(set(wheres) & {where for where, _, _ in LEFT_OUT}) == []
    assert len(ported()) >= 80
    assert len({where.split(":")[0] for where in wheres}) >= 15
