#!/usr/bin/env bash
# zsim developer entry point: creates .venv on first use, then runs one job.
#   bash dev.sh demo   the main job (see README)
#   bash dev.sh test        the whole test suite (what CI runs)
#   bash dev.sh test-quick  the model's exact behaviour: tests/model, tests/spec, tests/conformance,
#                           without real pyzmq, Spark or the slow tests
#   bash dev.sh test-fast   every test without real pyzmq, Spark or the slow ones (results, sweeps,
#                           search, CLI, trust too)
#                           (how long each takes, measured and dated: docs/speed.md, "Timings")
#   bash dev.sh lint        ruff (rules E, F, I, UP, B), mypy on zsim/ and validation/ (strict on
#                           zsim/model and zsim/app.py: pyproject.toml [[tool.mypy.overrides]]), and
#                           the import layers of pyproject.toml [tool.importlinter] (lint-imports)
#   bash dev.sh bench       the speed benchmarks
#   bash dev.sh setup  only create/update .venv
set -euo pipefail
cd "$(dirname "$0")"
VENV="${ZSIM_VENV:-.venv}"
PY="${PYTHON:-python3}"

setup() {
    if [ ! -x "$VENV/bin/python" ]; then
        "$PY" -m venv "$VENV"
    fi
    local stamp="$VENV/.zsim-installed"
    # Reinstall when the dependencies or the compiled hot path changed: the editable install
    # compiles the modules of zsim/native.py (a .py or .pxd newer than the last build would
    # otherwise run pure Python, with a warning: see zsim/native.py).
    local changed
    changed=$(find pyproject.toml setup.py zsim -newer "$stamp" \( -name pyproject.toml -o -name setup.py -o -name '*.pxd' \
        -o -name native.py \) -print -quit 2>/dev/null || true)
    if [ -z "$changed" ] && [ -f "$stamp" ]; then
        for pxd in $(find zsim -name '*.pxd'); do
            if [ "${pxd%.pxd}.py" -nt "$stamp" ]; then changed="${pxd%.pxd}.py"; break; fi
        done
    fi
    if [ ! -f "$stamp" ] || [ -n "$changed" ]; then
        "$VENV/bin/python" -m pip install --quiet --upgrade pip
        "$VENV/bin/python" -m pip install --quiet -e ".[all]"
        touch "$stamp"
        local mode
        mode=$("$VENV/bin/python" -c "import zsim.native as n; print(n.describe())")
        if [ "$mode" != "compiled" ]; then
            echo "dev.sh: warning: zsim's compiled core was not built, zsim runs $mode (reinstall with -v to see why)" >&2
        fi
    fi
}

# What the whole suite needs beyond Python packages: headless Chromium (Debian's package;
# tests/results/test_run_report.py opens a run report in it). Installed when this runs as root
# with apt-get (as CI does); otherwise the suite stops at once and says what to install.
system_deps() {
    # iproute2 (ip, tc): the link tests build network namespaces (validation/netns.py); they
    # need root, and without it they skip with one line. Installed only where we are root.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && ! { command -v ip && command -v tc; } >/dev/null 2>&1; then
        echo "dev.sh: installing iproute2 (ip, tc), which tests/validation/test_netns.py builds its links with" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null
        apt-get install -y -qq iproute2 >/dev/null
    fi
    if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then
        return
    fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "dev.sh: installing headless Chromium (Debian's chromium), which tests/results/test_run_report.py opens reports in" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null
        apt-get install -y -qq chromium >/dev/null
        return
    fi
    echo "dev.sh: the test suite needs headless Chromium: install it (Debian/Ubuntu: sudo apt-get install chromium) and run again" >&2
    exit 1
}

job="${1:-help}"
shift || true
case "$job" in
    setup)
        setup
        ;;
    demo)
        setup
        "$VENV/bin/python" -m zsim.demo "$@"
        ;;
    test)
        system_deps
        setup
        "$VENV/bin/python" -m pytest "$@"
        ;;
    test-quick)
        setup
        "$VENV/bin/python" -m pytest -q -m "not real and not spark and not slow" tests/model tests/spec tests/conformance "$@"
        ;;
    test-fast)
        setup
        "$VENV/bin/python" -m pytest -q -m "not real and not spark and not slow" "$@"
        ;;
    lint)
        setup
        "$VENV/bin/python" -m ruff check zsim validation tests benchmarks
        "$VENV/bin/python" -m mypy zsim validation
        "$VENV/bin/lint-imports" --no-cache
        ;;
    bench)
        setup
        "$VENV/bin/python" benchmarks/bench_core.py "$@"
        ;;
    *)
        echo "usage: bash dev.sh {demo|test|test-quick|test-fast|lint|bench|setup} [args...]" >&2
        exit 2
        ;;
esac
