#!/usr/bin/env python3
"""Two checkouts of cassette measured side by side, in one run.

    python bench/compare.py OLD NEW [--rounds 3] [-k EXPR] [--stat min] [--python PY]

``OLD`` and ``NEW`` are source trees with the Cython core built in place
(``python setup.py build_ext --inplace``) for the interpreter ``PY`` (the
one running this script by default), which also needs pytest-benchmark,
pyperformance and numpy.  Each round runs the overhead and derivative
benches of both trees, one after the other, alternating which goes first;
each tree's own bench code measures its own cassette.  Per tree, a
benchmark's time is the median of its rounds' medians; the report gives,
per variant, the geometric mean over the workloads of its ratio to
``plain`` (the overhead benches) or to ``dual`` (the derivatives), for both
trees, and NEW's change in percent.  ``--stat min`` compares the fastest
rounds instead of the medians (less sensitive to other load).  Nothing is asserted: this is for the
note of a change that must not cost speed.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import geomean, identify  # noqa: E402  (the bench's own report module)

BENCHES = ["bench/test_overhead.py", "bench/test_derivatives.py"]


def run_once(tree, python, keyword, out, stat):
    command = [python, "-m", "pytest", *BENCHES, "--benchmark-only", "-q", "-p", "no:cacheprovider",
               f"--benchmark-json={out}"]
    if keyword:
        command += ["-k", keyword]
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("CASSETTE_PURE_PYTHON", None)
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"compare.py: the bench failed in {tree}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return medians_of(out, stat)


def medians_of(path, stat):
    """(bench family, workload, variant) -> the statistic, from one JSON file;
    the family (the test function) keeps the overhead and derivative benches
    of a workload apart."""
    with open(path) as f:
        data = json.load(f)
    medians = {}
    for bench in data.get("benchmarks", []):
        workload, variant = identify(bench)
        if workload is not None:
            family = bench.get("name", "").split("[")[0]
            medians[family, workload, variant] = bench["stats"][stat]
    return medians


def summary(runs):
    """(family, workload, variant) -> median over the rounds of each round's value."""
    keys = set().union(*runs)
    return {key: statistics.median(run[key] for run in runs if key in run) for key in keys}


def baseline_of(medians, family, workload):
    return "dual" if (family, workload, "dual") in medians else "plain"


def ratios(medians):
    """variant -> geometric mean over workloads of its ratio to its baseline."""
    by_variant = {}
    for (family, workload, variant), value in medians.items():
        baseline = baseline_of(medians, family, workload)
        if variant == baseline or (family, workload, baseline) not in medians:
            continue
        by_variant.setdefault(variant, []).append(value / medians[family, workload, baseline])
    return {variant: geomean(values) for variant, values in sorted(by_variant.items())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=pathlib.Path)
    parser.add_argument("new", type=pathlib.Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("-k", dest="keyword", default=None)
    parser.add_argument("--stat", default="median", choices=("median", "min", "mean"))
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    runs = {"old": [], "new": []}
    with tempfile.TemporaryDirectory() as work:
        for round_ in range(args.rounds):
            order = ("old", "new") if round_ % 2 == 0 else ("new", "old")
            for side in order:
                tree = getattr(args, side).resolve()
                out = os.path.join(work, f"{side}-{round_}.json")
                runs[side].append(run_once(tree, args.python, args.keyword, out, args.stat))
                print(f"round {round_ + 1}/{args.rounds}: {side} done", file=sys.stderr)
    old_medians, new_medians = summary(runs["old"]), summary(runs["new"])
    print(f"{'workload / variant (ratio)':<44}{'old':>9}{'new':>9}{'change':>9}")
    for family, workload, variant in sorted(old_medians):
        baseline = baseline_of(old_medians, family, workload)
        key, base = (family, workload, variant), (family, workload, baseline)
        if variant == baseline or key not in new_medians or base not in new_medians:
            continue
        before = old_medians[key] / old_medians[base]
        after = new_medians[key] / new_medians[base]
        print(f"{workload + ' / ' + variant:<44}{before:>8.3f}x{after:>8.3f}x"
              f"{(after / before - 1) * 100:>+8.1f}%")
    print()
    old, new = ratios(old_medians), ratios(new_medians)
    print(f"{'variant (geomean of ratios)':<34}{'old':>9}{'new':>9}{'change':>9}")
    for variant in old:
        if variant in new and old[variant] and new[variant]:
            change = (new[variant] / old[variant] - 1) * 100
            print(f"{variant:<34}{old[variant]:>8.3f}x{new[variant]:>8.3f}x{change:>+8.1f}%")


if __name__ == "__main__":
    main()
