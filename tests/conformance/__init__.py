"""zsim's conformance suite: libzmq 4.3.5's own tests (tests/*.cpp), one test per ported
assertion (``conformance.ported``); docs/validation.md lists them (``conformance.table``)."""
