#!/usr/bin/env bash
# gpu_check.sh - everything a change must pass on a machine with a GPU, in one run:
# build in place, the whole test suite, PyCUDA's conformance tests through
# `python -m cukit.pycuda` (when their folder is given), the emulator's differential
# test (tests/differential.py check: GPU against emulator), then the benchmarks. Each step's output goes to its own log;
# the last lines printed are one summary line per step.
#
#     tools/gpu_check.sh [LOGDIR]              (from anywhere)
#
# Environment: PYTHON (default python3); CUKIT_PYCUDA_CONFORMANCE (a folder holding
# PyCUDA's test_*.py); CUKIT_CHECK_BENCH (space-separated benchmark names, default
# "launch array reduce random pycuda copy"; empty for none); CUKIT_CHECK_BUDGET
# (seconds for the whole run, default 540: a step that would start later is skipped
# and says so); CUKIT_CHECK_BUILD=0 to use the extension already built in src/cukit;
# CUKIT_CHECK_SUITE_LIMIT (seconds for the suite, default 420; each failure's traceback
# is in LOGDIR/failures.log as it happens, so a run cut short keeps them);
# CUKIT_CHECK_DIFFERENTIAL=0 to leave out the differential step (the suite runs the same
# corpus in tests/test_emulator.py, once per NVRTC installed).
set -uo pipefail
cd "$(dirname "$0")/.."
logs=${1:-$(mktemp -d "${TMPDIR:-/tmp}/cukit-gpu-check.XXXXXX")}
mkdir -p "$logs"
python=${PYTHON:-python3}
budget=${CUKIT_CHECK_BUDGET:-540}
benches=${CUKIT_CHECK_BENCH-launch array reduce random pycuda copy}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export NCCL_NVLS_ENABLE=0
summary=()
start=$SECONDS

left() { echo $((budget - (SECONDS - start))); }

step() { # step NAME SECONDS COMMAND...: run with a time limit, log, one summary line
    local name=$1 limit=$2
    shift 2
    local l
    l=$(left)
    if [ "$l" -le 15 ]; then
        summary+=("$name: skipped (the time budget is spent)")
        return
    fi
    [ "$limit" -gt "$l" ] && limit=$l
    local t0=$SECONDS rc=0
    timeout "$limit" "$@" > "$logs/$name.log" 2>&1 || rc=$?
    local last
    last=$(grep -E "passed|failed|error|skipped|no tests ran" "$logs/$name.log" | tail -1)
    summary+=("$name: rc=$rc $((SECONDS - t0))s ${last:-$(tail -1 "$logs/$name.log")}")
}

if [ "${CUKIT_CHECK_BUILD:-1}" != 0 ]; then
    step build 300 "$python" setup.py -q build_ext --inplace -b src
fi
"$python" -c "import cukit; print(cukit.__version__, cukit.device_count(), 'GPU(s):',
    cukit.Device(0).name if cukit.device_count() else '-')" > "$logs/device.log" 2>&1
summary+=("device: $(tail -1 "$logs/device.log")")

# The suite's own conformance test would run PyCUDA's files a second time: the steps
# below run each on its own, with its counts.
# With pytest-xdist, CUKIT_CHECK_WORKERS processes share the GPU (tests dealt out one at a
# time); what fails there runs again alone (a test of timings or of free memory may
# fail only beside others), and the step's line is that rerun's.
# With pytest-timeout, a test that hangs fails after CUKIT_CHECK_TEST_TIMEOUT seconds (its
# fixtures count: a module that warms up its kernels cold can take a minute or more while
# every worker compiles) with
# every thread's stack in the log, instead of eating the whole budget; -v names each
# test as it ends, so a run cut short still says which failed.
workers=${CUKIT_CHECK_WORKERS:-8}
suite_limit=${CUKIT_CHECK_SUITE_LIMIT:-420}
hang=()
if "$python" -c "import pytest_timeout" 2> /dev/null; then
    hang=(--timeout "${CUKIT_CHECK_TEST_TIMEOUT:-300}" --timeout-method thread)
fi
if [ "$workers" -gt 1 ] && "$python" -c "import xdist" 2> /dev/null; then
    step suite "$suite_limit" env -u CUKIT_PYCUDA_CONFORMANCE CUKIT_FAILLOG="$logs/failures.log" "$python" -m pytest -v -rfE "${hang[@]}" \
        -o cache_dir="$logs/.pytest_cache" -n "$workers" --dist loadgroup --durations=30 tests
    # the failed tests by name (xdist's "@group" suffix taken off: --last-failed would
    # match none of them and run the whole suite again)
    mapfile -t failed < <(grep -E "^(FAILED|ERROR) " "$logs/suite.log" | awk '{print $2}' | sed 's/@[^[:space:]]*$//' | sort -u)
    if [ "${#failed[@]}" -gt 0 ]; then
        step suite-rerun 240 env -u CUKIT_PYCUDA_CONFORMANCE CUKIT_FAILLOG="$logs/failures-rerun.log" "$python" -m pytest -q -rfE "${hang[@]}" \
            -p no:cacheprovider "${failed[@]}"
    fi
else
    step suite "$suite_limit" env -u CUKIT_PYCUDA_CONFORMANCE CUKIT_FAILLOG="$logs/failures.log" "$python" -m pytest -v -p no:cacheprovider \
        -rfE "${hang[@]}" --durations=30 tests
fi

if [ -n "${CUKIT_PYCUDA_CONFORMANCE:-}" ]; then
    for f in "$CUKIT_PYCUDA_CONFORMANCE"/test_*.py; do
        step "pycuda-$(basename "$f" .py)" 300 "$python" -m cukit.pycuda -m pytest -q \
            -p no:cacheprovider "$f"
    done
fi

if [ -f tests/differential.py ] && [ "${CUKIT_CHECK_DIFFERENTIAL:-1}" != 0 ]; then
    # the corpus on the GPU and on the emulator, compared; the last line counts what differs
    step differential 300 "$python" tests/differential.py check "$logs"
fi

for b in $benches; do
    [ -f "benchmarks/bench_$b.py" ] || continue
    step "bench-$b" 240 "$python" "benchmarks/bench_$b.py" --json "$logs/bench_$b.json"
done

echo "logs: $logs"
printf '%s\n' "${summary[@]}"
