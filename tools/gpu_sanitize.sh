#!/usr/bin/env bash
# gpu_sanitize.sh - the GPU test suite under compute-sanitizer: memcheck over every
# GPU test file (bar the one that crashes kernels on purpose), then racecheck over
# the tests of the kernels cukit generates itself (strided copies and fills). Each
# file is its own run, so a time budget stops between files, never inside one.
# Prints how many errors each tool found in how many files; exits 1 when any.
#
#     tools/gpu_sanitize.sh [LOGDIR]        (from anywhere, on a machine with a GPU)
#
# Environment: PYTHON (default python3), SANITIZER (default compute-sanitizer),
# CUKIT_SANITIZE_BUDGET (seconds for all runs, default 3600), CUKIT_SANITIZE_FILES
# (the memcheck files, default every one with GPU tests), PYTEST_ARGS.
set -uo pipefail
cd "$(dirname "$0")/.."
logs=${1:-$(mktemp -d "${TMPDIR:-/tmp}/cukit-gpu-sanitize.XXXXXX")}
mkdir -p "$logs"
python=${PYTHON:-python3}
sanitizer=${SANITIZER:-compute-sanitizer}
budget=${CUKIT_SANITIZE_BUDGET:-3600}
command -v "$sanitizer" > /dev/null || { echo "no $sanitizer on PATH (it comes with the CUDA toolkit)" >&2; exit 2; }
start=$SECONDS

# tests/test_faults.py makes kernels fault on purpose: memcheck would rightly count those.
# CUKIT_SANITIZE_FILES picks the memcheck files (default: every one with GPU tests).
memcheck_files=${CUKIT_SANITIZE_FILES:-$(grep -l "pytest.mark.gpu" tests/test_*.py | grep -v test_faults.py)}
racecheck_files="tests/test_views.py tests/test_memory.py"
status=0

sweep() { # sweep TOOL FILES...: one sanitizer run per file, every process it starts followed
    local tool=$1 errors=0 done=0 left=() failed=()
    shift
    for file in "$@"; do
        local left_s=$((budget - (SECONDS - start)))
        if [ "$left_s" -le 10 ]; then
            left+=("$file")
            continue
        fi
        local name="$tool.$(basename "$file" .py)"
        # --report-api-errors no: cukit probes the driver on purpose (cuFuncGetParamInfo
        # past a kernel's last parameter, the emulator's own device attribute, names that
        # may be missing) and handles what it
        # returns; the counts are of what the tool checks in kernels.
        timeout "$left_s" "$sanitizer" --tool "$tool" --target-processes all --report-api-errors no \
            --log-file "$logs/$name.%p.log" --print-limit 100 \
            "$python" -m pytest -q -p no:cacheprovider -m gpu ${PYTEST_ARGS:-} "$file" \
            > "$logs/$name.pytest" 2>&1
        local rc=$?
        if grep -qh "Device not supported\|device is not supported" "$logs/$name".*.log 2>/dev/null; then
            echo "$tool: this machine's GPU cannot be sanitized (the tool says: device not supported)"
            return 3
        fi
        # One "ERROR SUMMARY: N errors" per process the tool followed.
        local n
        n=$(cat "$logs/$name".*.log 2>/dev/null | sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' |
            awk '{s += $1} END {print s + 0}')
        errors=$((errors + n))
        if [ "$rc" -eq 124 ]; then # stopped by the budget: its processes never summed up
            left+=("$file (cut short)")
            continue
        fi
        done=$((done + 1))
        [ "$rc" -eq 0 ] && [ "$n" -eq 0 ] || failed+=("$(basename "$file") ($n errors, pytest $rc: $(tail -n 1 "$logs/$name.pytest"))")
    done
    echo "$tool: $errors errors in $done test files"
    for f in "${failed[@]}"; do echo "  $f"; done
    [ "${#left[@]}" -eq 0 ] || echo "  not run (time budget spent): ${left[*]}"
    [ "$errors" -eq 0 ] && [ "${#failed[@]}" -eq 0 ]
}

# shellcheck disable=SC2086 # the lists are file names without spaces
sweep memcheck $memcheck_files || status=1
sweep racecheck $racecheck_files || status=1
echo "logs in $logs"
exit $status
