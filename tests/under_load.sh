#!/usr/bin/env bash
# The test suite must fail only when the code is wrong, not because the machine is busy.
# This check clones the current commit into a fresh folder, starts one busy-loop process
# per core, runs the README's test command N times in a row (default 5), then once more
# with the machine idle, and prints one line per run. Exit status 0 only if every run
# passed. Not part of CI (it takes N+1 full test runs: one's time is in docs/speed.md, "Timings").
#
#   bash tests/under_load.sh            # 5 loaded runs + 1 idle run
#   bash tests/under_load.sh 3          # 3 loaded runs + 1 idle run
#   KEEP=1 bash tests/under_load.sh     # keep the clone and its logs
set -uo pipefail
runs="${1:-5}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/zsim-under-load.XXXXXX")"
hogs=()
suite=""
cleanup() {
    # the suite runs in the background (below) so that this trap runs at once on Ctrl-C or
    # kill, and takes the suite's whole process group with it
    if [ -n "$suite" ]; then kill -TERM -- "-$suite" 2>/dev/null; fi
    for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null; done
    wait 2>/dev/null
    if [ -z "${KEEP:-}" ]; then rm -rf "$work"; else echo "kept $work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # exit runs cleanup once, then stops: no further runs

git clone --quiet "$repo" "$work/zsim"
cd "$work/zsim"
echo "commit $(git rev-parse --short HEAD), $(nproc) cores, logs in $work"
bash dev.sh setup > "$work/setup.log" 2>&1 || { echo "setup failed: see $work/setup.log"; exit 1; }

cores="$(nproc)"
for _ in $(seq "$cores"); do
    python3 -c "while True: pass" &
    hogs+=("$!")
done
failed=0
run_suite() {  # label
    local log="$work/$1.log" start end status summary
    start=$(date +%s)
    setsid bash dev.sh test -q -p no:cacheprovider > "$log" 2>&1 &
    suite=$!
    wait "$suite"
    status=$?
    suite=""
    end=$(date +%s)
    summary="$(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed)' "$log" | tail -1)"
    load="$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "$1: exit $status, $((end - start)) s, load $load: ${summary:-no summary}"
    if [ "$status" -ne 0 ]; then
        failed=$((failed + 1))
        grep -E '^(FAILED|ERROR) ' "$log" | sed 's/^/    /'
    fi
}
for i in $(seq "$runs"); do
    run_suite "loaded-$i"
done
for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null; done
wait 2>/dev/null
hogs=()
run_suite "idle"
echo "$failed of $((runs + 1)) runs failed"
[ "$failed" -eq 0 ]
