"""python -m tests.fuzz: run the fuzz targets for a number of cases or minutes."""
import argparse
import json
import sys
import time

from . import DEFAULT_SEED, case_rng, report, run_cases, run_isolated, shorten


def main(argv=None):
    from . import targets

    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    ap.add_argument("--target", action="append", choices=sorted(targets.TARGETS),
                    help="a target to run (repeatable); default: all")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--cases", type=int, default=None, help="cases per target")
    ap.add_argument("--minutes", type=float, default=None, help="time for all targets together")
    ap.add_argument("--case", type=int, default=None, help="replay one case in this process")
    ap.add_argument("--save", default=None, help="write the findings to this JSON file")
    # The worker's own arguments (run_isolated starts it).
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--journal", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--seconds", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    names = args.target or sorted(set(targets.TARGETS) - targets.ON_REQUEST)

    if args.worker:
        deadline = None if args.seconds is None else time.monotonic() + args.seconds
        with open(args.journal, "r+") as journal:
            ran, findings = run_cases(names[0], args.seed, args.first, args.cases, journal,
                                      deadline, args.out)
        with open(args.out, "w") as f:
            json.dump({"ran": ran, "findings": findings}, f)
        return 0

    if args.case is not None:
        for name in names:
            spec = targets.TARGETS[name]
            spec.setup()
            spec.index = args.case
            data = spec.make(case_rng(args.seed, name, args.case))
            print(f"{name} case {args.case}: {shorten(spec.show(data), 4000)}")
            try:
                spec.check(data)  # raises what the case raises; a crash crashes here
            finally:
                spec.teardown()
            print("  ok")
        return 0

    if args.minutes is None and args.cases is None:
        args.cases = 1000
    all_findings, total = [], 0
    per_target = None if args.minutes is None else args.minutes * 60 / len(names)
    for name in names:
        count = args.cases if args.cases is not None else 10**9
        ran, findings, took = run_isolated(name, args.seed, 0, count, per_target)
        total += ran
        all_findings += findings
        print(f"{name:16s} {ran:8d} cases {took:7.1f} s  {len(findings)} finding(s)", flush=True)
    print(f"{total} cases, {len(all_findings)} finding(s); seed {args.seed}")
    if all_findings:
        print(report(all_findings))
    if args.save:
        with open(args.save, "w") as f:
            json.dump(all_findings, f, indent=1)
    return 1 if all_findings else 0


if __name__ == "__main__":
    sys.exit(main())
