#!/usr/bin/env bash
# gpu_sanitize.sh - the GPU test suite under compute-sanitizer: memcheck over every
# GPU test file (bar the one that crashes kernels on purpose), then racecheck and
# synccheck over tools/generated_kernels.py, which runs each family of kernels cukit
# writes itself (elementwise, reductions, scans, random, sort, strided copies) and checks
# them against numpy. Each file is its own run, CUKIT_SANITIZE_JOBS of them at once,
# so a time budget stops between files, never inside one. Prints how many errors
# each tool found in how many runs; exits 1 when any.
#
#     tools/gpu_sanitize.sh [LOGDIR]        (from anywhere, on a machine with a GPU)
#
# Environment: PYTHON (default python3), SANITIZER (default compute-sanitizer),
# CUKIT_SANITIZE_BUDGET (seconds for all runs, default 3600), CUKIT_SANITIZE_JOBS
# (runs at once, default 1), CUKIT_SANITIZE_FILES (the memcheck files, default every
# one with GPU tests), PYTEST_ARGS.
set -uo pipefail
cd "$(dirname "$0")/.."
logs=${1:-$(mktemp -d "${TMPDIR:-/tmp}/cukit-gpu-sanitize.XXXXXX")}
mkdir -p "$logs"
python=${PYTHON:-python3}
sanitizer=${SANITIZER:-compute-sanitizer}
budget=${CUKIT_SANITIZE_BUDGET:-3600}
jobs=${CUKIT_SANITIZE_JOBS:-1}
# the extension built in place (as tools/gpu_check.sh), else an installed cukit
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
command -v "$sanitizer" > /dev/null || { echo "no $sanitizer on PATH (it comes with the CUDA toolkit)" >&2; exit 2; }
start=$SECONDS

# tests/test_faults.py makes kernels fault on purpose: memcheck would rightly count those.
# Elsewhere, tests marked `unsanitized` are left out: what they check is what the tool
# changes (a fault on purpose, host memory over a million launches, concurrency).
memcheck_files=${CUKIT_SANITIZE_FILES:-$(grep -l "pytest.mark.gpu" tests/test_*.py | grep -v test_faults.py)}
status=0

run_one() { # run_one TOOL NAME LIMIT COMMAND...: one sanitizer run, every process followed
    local tool=$1 name=$2 limit=$3
    shift 3
    # --report-api-errors no: cukit probes the driver on purpose (cuFuncGetParamInfo
    # past a kernel's last parameter, names that may be missing) and handles what it
    # returns; the counts are of what the tool checks in kernels.
    # --show-backtrace device: with host backtraces the tool saves each launch's host
    # stack, Python frames included, from inside the launch call: launches from several
    # Python threads then never returned (test_launch_from_several_threads, under
    # memcheck only), and a million launches held 66 Python memory blocks each.
    timeout "$limit" "$sanitizer" --tool "$tool" --target-processes all --report-api-errors no \
        --show-backtrace device \
        --log-file "$logs/$name.%p.log" --print-limit 100 "$@" > "$logs/$name.out" 2>&1
    echo $? > "$logs/$name.rc"
}

sweep() { # sweep TOOL RUN...: each RUN a test file or a script; JOBS at once
    local tool=$1 errors=0 done=0 left=() failed=() names=()
    shift
    for run in "$@"; do
        local left_s=$((budget - (SECONDS - start)))
        if [ "$left_s" -le 10 ]; then
            left+=("$run")
            continue
        fi
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
        local name
        name="$tool.$(basename "$run" .py)"
        names+=("$name:$run")
        rm -f "$logs/$name".*
        case $run in
            # -v: a run the budget cuts short still names the test it was in
            tests/*) run_one "$tool" "$name" "$left_s" "$python" -m pytest -v -p no:cacheprovider \
                         -m "(gpu or gpu_hardware) and not unsanitized" --durations=5 \
                         ${PYTEST_ARGS:-} "$run" & ;;
            *) run_one "$tool" "$name" "$left_s" "$python" "$run" & ;;
        esac
    done
    wait
    for entry in "${names[@]}"; do
        local name=${entry%%:*} run=${entry#*:} rc n
        rc=$(cat "$logs/$name.rc" 2>/dev/null || echo 1)
        if grep -qh "Device not supported\|device is not supported" "$logs/$name".*.log 2>/dev/null; then
            echo "$tool: this machine's GPU cannot be sanitized (the tool says: device not supported)"
            return 3
        fi
        # One "ERROR SUMMARY: N errors" per process the tool followed.
        n=$(cat "$logs/$name".*.log 2>/dev/null | sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' |
            awk '{s += $1} END {print s + 0}')
        errors=$((errors + n))
        if [ "$rc" -eq 124 ]; then # stopped by the budget: its processes never summed up
            left+=("$run (cut short, $n errors by then)")
            continue
        fi
        done=$((done + 1))
        [ "$rc" -eq 5 ] && rc=0 # pytest: every test of the file left out (unsanitized)
        [ "$rc" -eq 0 ] && [ "$n" -eq 0 ] || failed+=("$(basename "$run") ($n errors, exit $rc: $(tail -n 1 "$logs/$name.out"))")
    done
    echo "$tool: $errors errors in $done runs"
    for f in "${failed[@]}"; do echo "  $f"; done
    [ "${#left[@]}" -eq 0 ] || echo "  not finished (time budget spent): ${left[*]}"
    [ "$errors" -eq 0 ] && [ "${#failed[@]}" -eq 0 ] && [ "${#left[@]}" -eq 0 ]
}

export PYTHONUNBUFFERED=1
# racecheck and synccheck first: one short script each
sweep racecheck tools/generated_kernels.py || status=1
sweep synccheck tools/generated_kernels.py || status=1
# shellcheck disable=SC2086 # the list is file names without spaces
sweep memcheck $memcheck_files || status=1
echo "logs in $logs"
exit $status
