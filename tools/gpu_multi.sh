#!/usr/bin/env bash
# gpu_multi.sh - the many-GPU checks on a machine with 2 or more GPUs, in one run: build
# in place, tests/test_nccl.py and tests/test_multi_gpu.py in a shuffled order (with
# pytest-random-order where installed), the torchrun and mpirun recipes of docs/guide/many-gpus.md
# (tools/nccl_recipe.py), the symmetric-memory probe (tools/nccl_symmetric_probe.py), and
# benchmarks/bench_nccl.py on every GPU. One summary line
# per step at the end; logs in LOGDIR.
#
#     tools/gpu_multi.sh [LOGDIR]
set -uo pipefail
cd "$(dirname "$0")/.."
logs=${1:-$(mktemp -d "${TMPDIR:-/tmp}/cukit-gpu-multi.XXXXXX")}
mkdir -p "$logs"
python=${PYTHON:-python3}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" NCCL_NVLS_ENABLE=0
summary=()
step() { # step NAME SECONDS COMMAND...
    local name=$1 limit=$2 rc=0 t0=$SECONDS
    shift 2
    timeout "$limit" "$@" > "$logs/$name.log" 2>&1 || rc=$?
    local last
    last=$(grep -E "passed|failed|error|ok:|RESULT" "$logs/$name.log" | tail -1 | cut -c1-200)
    summary+=("$name: rc=$rc $((SECONDS - t0))s ${last:-$(tail -1 "$logs/$name.log")}")
}
step build 300 "$python" setup.py -q build_ext --inplace -b src
ngpu=$("$python" -c "import cukit; print(cukit.device_count())")
order=()
"$python" -c "import random_order" 2>/dev/null && order=(--random-order)
step tests "${CUKIT_MULTI_TEST_LIMIT:-240}" "$python" -m pytest -q -rf --timeout 60 "${order[@]}" \
    tests/test_nccl.py tests/test_multi_gpu.py
step torchrun 60 torchrun --nproc-per-node="$ngpu" tools/nccl_recipe.py
step mpirun 60 mpirun --allow-run-as-root --oversubscribe -np "$ngpu" "$python" tools/nccl_recipe.py mpi
step symmetric_probe 90 "$python" tools/nccl_symmetric_probe.py --gpus "$ngpu"
step bench_nccl "${CUKIT_MULTI_BENCH_LIMIT:-150}" "$python" benchmarks/bench_nccl.py \
    --gpus "$ngpu" --reps "${CUKIT_MULTI_BENCH_REPS:-3}" --json "$logs/nccl.json"
printf '%s\n' "${summary[@]}"
