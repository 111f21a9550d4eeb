"""The fuzz targets (tests/fuzz/), a fixed number of seeded cases each, in worker processes.

A crash, an exception other than a clean refusal, a broken round trip or a hang is
a failure whose message says how to replay the case. CUKIT_FUZZ_SEED changes the
seed; CUKIT_FUZZ_SCALE multiplies the case counts (below 1 under the sanitizer build
if it is slow, above 1 for a longer run; `python -m tests.fuzz --minutes 10` runs
by time instead).
"""
import os

import pytest

from fuzz import DEFAULT_SEED, report, run_isolated

# Cases per target in CI: together a few seconds on two cores.
CASES = {
    "signature": 3000,
    "signature_nvrtc": 60,  # each one runs NVRTC
    "source": 1500,
    "source_nvrtc": 60,  # each one runs NVRTC
    "name_expressions": 2000,
    "conditions_nvrtc": 60,  # each one runs NVRTC
    "includes": 60,       # each one runs NVRTC
    "cai": 2000,
    "dlpack": 2000,
    "layout": 2000,
    "load": 1000,
    "elementwise_params": 2000,
    "reduction_params": 2000,
    "ptx": 400,  # the emulator's PTX reader and interpreter: loads and launches
}


# On a GPU each Module.load first loads the image in a worker process of its own (a
# driver load, and ptxas for PTX: a fraction of a second a case where the emulator takes
# a millisecond): fewer cases there.
GPU_CASES = {"load": 150}
# The emulator's own reader and interpreter: on the emulator wherever the suite runs.
EMULATOR_ONLY = {"ptx"}


@pytest.mark.parametrize("target", sorted(CASES))
def test_fuzz_target(target):
    import cukit

    seed = int(os.environ.get("CUKIT_FUZZ_SEED", DEFAULT_SEED))
    env = None
    cases = CASES[target]
    if target in EMULATOR_ONLY:
        env = dict(os.environ, CUKIT_BACKEND="emulator")
    elif cukit.device_count() and cukit.backend() != "emulator":
        cases = GPU_CASES.get(target, cases)
    count = max(1, int(cases * float(os.environ.get("CUKIT_FUZZ_SCALE", "1"))))
    ran, findings, _ = run_isolated(target, seed, 0, count, env=env)
    assert not findings, f"{len(findings)} finding(s) in {ran} cases:\n{report(findings)}"
    assert ran == count


def test_the_harness_reports_a_crash_an_exception_and_a_hang_and_goes_on():
    ran, findings, _ = run_isolated("selftest", 1, 0, 9)
    assert ran == 9
    assert [(f["kind"], f["case"]) for f in findings] == [("crash", 3), ("exception", 5),
                                                          ("hang", 7)]
    assert "its worker was killed" in findings[2]["error"]
    assert "exited with status -6" in findings[0]["error"] and "KeyError" in findings[1]["error"]
    assert "--case 3" in report(findings)


def test_the_command_line_runs_by_count_and_replays_one_case():
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, "-m", "tests.fuzz", "--target", "signature",
                          "--cases", "50", "--seed", "3"], cwd=root, capture_output=True, text=True)
    assert run.returncode == 0 and "50 cases, 0 finding(s); seed 3" in run.stdout
    replay = subprocess.run([sys.executable, "-m", "tests.fuzz", "--target", "selftest",
                             "--case", "5"], cwd=root, capture_output=True, text=True)
    assert replay.returncode != 0 and "KeyError" in replay.stderr
