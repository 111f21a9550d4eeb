"""A seeded fuzzer for every parser of cukit that takes user text or foreign structures.

Targets (tests/fuzz/targets.py) each turn a random.Random into one input, feed it to
cukit, and say which exceptions are a clean refusal; anything else is a finding: a
crash (the worker process dies), an unexpected exception class, a broken invariant
(a signature whose text does not read back the same), or a hang (one case past its
time limit). Every case is reproducible from (seed, target, index) alone.

    python -m tests.fuzz --minutes 10             # every target, round robin
    python -m tests.fuzz --target signature --cases 20000 --seed 7
    python -m tests.fuzz --target source --seed 7 --case 1234   # replay one case

CI runs a fixed, small number of cases per target (tests/test_fuzz.py). Under the
sanitizer build (CUKIT_SANITIZE=1) run the same commands with the sanitizer runtime
preloaded; the workers inherit the environment, and a sanitizer report ends the
worker with a non-zero status, which is reported as a crash with its last input.
"""
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback

DEFAULT_SEED = 16


def case_rng(seed, target, index):
    """The generator of one case: a function of its seed, target and index only."""
    return random.Random(f"{seed}:{target}:{index}")


def shorten(text, limit=600):
    text = str(text)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def run_cases(target, seed, first, count, journal=None, deadline=None, out=None):
    """Run cases [first, first + count) of one target in this process.

    Returns (cases run, findings). Before each case its index goes to `journal`, so
    a parent can name the input that killed this process; each finding goes to the
    JSON file `out` as it is found, so one that came before a crash or a hang is kept.
    """
    from . import targets

    spec = targets.TARGETS[target]
    findings = []
    spec.setup()
    try:
        return _run(spec, target, seed, first, count, journal, deadline, findings, out)
    finally:
        spec.teardown()


def _run(spec, target, seed, first, count, journal, deadline, findings, out):
    ran, kept = 0, 0
    for index in range(first, first + count):
        if deadline is not None and time.monotonic() > deadline:
            break
        if journal is not None:
            journal.seek(0)
            journal.write(f"{index:012d}")
            journal.flush()
        rng = case_rng(seed, target, index)
        spec.index = index
        data = spec.make(rng)
        start = time.monotonic()
        try:
            spec.check(data)
        except spec.allowed:
            pass
        except Exception as exc:  # noqa: BLE001 - every other exception is a finding
            findings.append({
                "target": target, "seed": seed, "case": index, "kind": "exception",
                "input": shorten(spec.show(data)),
                "error": shorten("".join(traceback.format_exception_only(type(exc), exc))),
            })
        took = time.monotonic() - start
        if took > spec.time_limit:
            findings.append({
                "target": target, "seed": seed, "case": index, "kind": "slow",
                "input": shorten(spec.show(data)), "error": f"took {took:.1f} s",
            })
        ran += 1
        if out is not None and len(findings) > kept:
            kept = len(findings)
            with open(out, "w") as f:
                json.dump({"ran": 0, "findings": findings}, f)  # "ran" is the parent's count
    return ran, findings


def _hang_limit(target):
    """Seconds one case may run before its worker is killed and the case reported as a
    hang: the target's hang_limit, else four times its limit for a slow case, at least 30."""
    from . import targets

    spec = targets.TARGETS[target]
    return spec.hang_limit or max(30.0, 4 * spec.time_limit)


def _watch(cmd, root, env, journal, limit):
    """Run a worker; kill it once the case in its journal has not changed for `limit`
    seconds. Returns (seconds the stuck case ran, or 0; exit status; its stderr)."""
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                text=True)
        last, since, hung = None, time.monotonic(), 0.0
        while proc.poll() is None:
            try:
                proc.wait(0.5)
                break
            except subprocess.TimeoutExpired:
                pass
            with open(journal) as f:
                case = f.read().strip()
            if case != last:
                last, since = case, time.monotonic()
            elif case and time.monotonic() - since > limit:
                hung = time.monotonic() - since
                proc.kill()
                proc.wait()
        err.seek(0)
        return hung, proc.returncode, err.read()


def run_isolated(target, seed, first, count, seconds=None, env=None):
    """Run cases in a worker process, restarting it after a crash.

    Returns (cases run, findings, seconds taken). A crash is reported with the
    input of the case the worker was running.
    """
    findings, ran = [], 0
    start = time.monotonic()
    index = first
    while index < first + count:
        if seconds is not None and time.monotonic() - start > seconds:
            break
        with tempfile.NamedTemporaryFile("w+", prefix="cukit-fuzz-", delete=False) as j, \
                tempfile.NamedTemporaryFile("w+", prefix="cukit-fuzz-out-", delete=False) as o:
            journal, out = j.name, o.name
        left = None if seconds is None else max(1.0, seconds - (time.monotonic() - start))
        cmd = [sys.executable, "-m", "tests.fuzz", "--worker", "--target", target,
               "--seed", str(seed), "--first", str(index), "--cases", str(first + count - index),
               "--journal", journal, "--out", out]
        if left is not None:
            cmd += ["--seconds", f"{left:.1f}"]
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        hung, returncode, stderr = _watch(cmd, root, env, journal, _hang_limit(target))
        try:
            with open(out) as f:
                result = json.load(f)
        except (OSError, ValueError):
            result = None
        with open(journal) as f:
            last = f.read().strip()
        os.unlink(journal)
        os.unlink(out)
        if returncode == 0 and result is not None:
            ran += result["ran"]
            findings += result["findings"]
            break
        # The worker died: the case in the journal is the one that killed it.
        crashed = int(last) if last else index
        if result is not None:
            ran += result["ran"]
            findings += result["findings"]
        from . import targets

        spec = targets.TARGETS[target]
        spec.setup()
        spec.index = crashed
        data = spec.make(case_rng(seed, target, crashed))
        spec.teardown()
        findings.append({
            "target": target, "seed": seed, "case": crashed, "kind": "hang" if hung else "crash",
            "input": shorten(spec.show(data)),
            "error": (f"the case ran for over {hung:.0f} s; its worker was killed" if hung else
                      f"the worker exited with status {returncode}: "
                      + shorten(stderr.strip()[-2000:], 2000)),
        })
        ran += crashed - index + 1
        index = crashed + 1
    return ran, findings, time.monotonic() - start


def report(findings):
    lines = []
    for f in findings:
        lines.append(f"[{f['kind']}] target {f['target']} seed {f['seed']} case {f['case']} "
                     f"(replay: python -m tests.fuzz --target {f['target']} --seed {f['seed']} "
                     f"--case {f['case']})\n  input: {f['input']}\n  {f['error']}")
    return "\n".join(lines)
