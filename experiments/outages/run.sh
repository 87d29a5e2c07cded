#!/usr/bin/env bash
# The outage study in one command: both sweeps (study.toml: WAN outages of 0.5, 5 and 60 s;
# crash.toml: the data centre's host dying for 30 s), each with heartbeats off and on (and
# the RPC client's IMMEDIATE off and on through the cuts), and
# their reports, into OUT (default out/outages). About a minute on 2 cores.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-out/outages}"
# zsim on PATH (an activated .venv), else the project's own (.venv/bin/zsim after setup)
zsim="$(command -v zsim || echo "$here/../../.venv/bin/zsim")"
"$zsim" sweep "$here/study.toml" --engine local --out "$out/cut" --report
"$zsim" sweep "$here/crash.toml" --engine local --out "$out/crash" --report
