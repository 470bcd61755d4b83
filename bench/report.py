#!/usr/bin/env python3
"""Overhead ratios from pytest-benchmark JSON files written by the bench suite.

    python bench/report.py RUN.json
    python bench/report.py CYTHON.json PURE.json

For each file: per workload, the median time of ``plain`` and every variant's
median divided by plain's (the overhead ratio), then the geometric mean of
each variant's ratios over the workloads — the first number to watch is the
geometric mean of the ``recursion-only`` ratios.  When a run has both
``counting-prehook`` and ``python-floor``, a last column ("cassette / floor")
gives their ratio per workload: cassette with a counting hook on every
operation against the workload's own code rewritten to call a Python hook
on each call and operator (bench/floor.py), with its geometric mean on a line
of its own; and "per event" the same per operation each counted (time over
plain's, divided by its ``events_per_call``): cassette hooks operations the
floor does not (attributes, iteration, library code), so the two see
different numbers of events.  ``--stat min`` (or ``mean``) compares that statistic instead of
the median.

Given two files (a run with the Cython core and one with
``CASSETTE_PURE_PYTHON=1``), it also prints, per workload and variant, the
speedup of the Cython run over the pure-Python one (pure median / Cython
median).  Which file is which is read from the ``cassette`` entry that
bench/conftest.py writes into the JSON's machine_info; when that does not
tell, the first file is taken as the Cython run.

Benchmarks that name a ``suite`` in their extra_info (bench/test_libraries.py:
"libraries") get a ratio table of their own, after the others'.

Benchmarks of bench/test_first_call.py (the first overdubbed call in a fresh
process: plain, cold cache, warm cache) get a table of their own, and so do
those of bench/test_runtime_functions.py: the extra cost of one function
made while overdubbed, per kind (see that module).

Standard library only; exits non-zero only on unreadable input.
"""

import argparse
import json
import math
import sys

VARIANTS = ("plain", "recursion-only", "one-callee-prehook", "prehook", "counting-prehook",
            "counting-pre-post", "setprofile", "monitoring", "python-floor")

#: The "cassette / floor" column: this variant's time over that one's.
CASSETTE_VS_FLOOR = ("counting-prehook", "python-floor")

#: Titles of the ratio tables of benchmarks whose extra_info names a suite
#: (benchmarks without one are bench/test_overhead.py's).
SUITE_TITLES = {"libraries": "Real libraries (bench/test_libraries.py)",
                "cli": "The command line (bench/test_cli.py; the scripts' own timing of their "
                       "warm calls)"}


class Run:
    """One pytest-benchmark JSON file: the chosen statistic (seconds; the
    median unless told otherwise) by (workload, variant)."""

    def __init__(self, path, stat="median"):
        self.path = path
        self.stat = stat
        with open(path) as f:
            data = json.load(f)
        info = data.get("machine_info", {})
        cassette = info.get("cassette", {})
        self.implementation = cassette.get("implementation", "unknown")
        self.python = cassette.get("python") or info.get("python_version", "?")
        self.medians = {}
        self.events = {}        # (workload, variant) -> events its hook counted per call
        self.workloads = []
        self.suites = {}        # suite ("" for test_overhead.py) -> its workloads
        self.first_calls = {}   # workload -> mode -> (median seconds, extra_info)
        self.runtime_functions = {}  # kind -> (shape, variant) -> (seconds, functions)
        for bench in data.get("benchmarks", []):
            extra = bench.get("extra_info") or {}
            if "first_call_mode" in extra:
                self.first_calls.setdefault(extra["first_call_workload"], {})[
                    extra["first_call_mode"]] = (bench["stats"][stat], extra)
                continue
            if "functions" in extra and "kind" in extra:
                self.runtime_functions.setdefault(extra["kind"], {})[
                    extra["shape"], extra["variant"]] = (bench["stats"][stat],
                                                         extra["functions"])
                continue
            workload, variant = identify(bench)
            if workload is None:
                continue
            if workload not in self.workloads:
                self.workloads.append(workload)
                self.suites.setdefault(extra.get("suite", ""), []).append(workload)
            # bench/test_cli.py times processes; the calls inside, once
            # warm, are what its scripts time themselves.
            self.medians[workload, variant] = extra.get(f"inner_{stat}", bench["stats"][stat])
            if extra.get("events_per_call"):
                self.events[workload, variant] = extra["events_per_call"]

    def label(self):
        return f"{self.path} (cassette runtime: {self.implementation}, Python {self.python})"

    def ratio(self, workload, variant):
        plain = self.medians.get((workload, "plain"))
        value = self.medians.get((workload, variant))
        if plain is None or value is None or plain <= 0:
            return None
        return value / plain

    def per_event(self, workload, variant, baseline):
        """``variant``'s time over plain per event it counted, over
        ``baseline``'s: what one hooked operation costs against one of the
        baseline's (``variant`` may count more operations than the baseline,
        each at a cost of its own)."""
        plain = self.medians.get((workload, "plain"))
        costs = []
        for name in (variant, baseline):
            value = self.medians.get((workload, name))
            events = self.events.get((workload, name))
            if plain is None or value is None or not events or value <= plain:
                return None
            costs.append((value - plain) / events)
        return costs[0] / costs[1]

    def between(self, workload, variant, baseline):
        """``variant``'s statistic over ``baseline``'s, for one workload."""
        value = self.medians.get((workload, variant))
        base = self.medians.get((workload, baseline))
        if value is None or base is None or base <= 0:
            return None
        return value / base


def identify(bench):
    """(workload, variant) of one benchmark entry, or (None, None)."""
    extra = bench.get("extra_info") or {}
    if "first_call_mode" in extra:
        return None, None       # bench/test_first_call.py: see first_call_report
    if "workload" in extra and "variant" in extra:
        return extra["workload"], extra["variant"]
    params = bench.get("params") or {}
    if "workload" in params and "variant" in params:
        return params["workload"], params["variant"]
    # test_overhead[<workload>-<variant>]
    name = bench.get("name", "")
    if "[" in name and name.endswith("]"):
        ident = name[name.index("[") + 1:-1]
        for variant in sorted(VARIANTS, key=len, reverse=True):   # counting-prehook before prehook
            if ident.endswith("-" + variant):
                return ident[:-len(variant) - 1], variant
    return None, None


def version_tuple(text):
    try:
        return tuple(int(part) for part in text.split(".")[:2])
    except ValueError:
        return (0, 0)


def geomean(values):
    values = [v for v in values if v is not None and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def fmt_ratio(value, suffix="x"):
    return "-" if value is None else f"{value:.2f}{suffix}"


def table(header, rows):
    widths = [max(len(str(row[i])) for row in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(str(cell).rjust(w) if i else str(cell).ljust(w)
                       for i, (cell, w) in enumerate(zip(row, widths)))
             for row in [header] + rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def variants_of(runs):
    present = {v for run in runs for (_, v) in run.medians}
    return [v for v in VARIANTS if v in present] + sorted(present - set(VARIANTS))


def workloads_of(runs):
    order = []
    for run in runs:
        order.extend(w for w in run.workloads if w not in order)
    return order


def ratio_report(run, suite=""):
    workloads = run.suites.get(suite, [])
    present = {v for (w, v) in run.medians if w in workloads}
    variants = [v for v in variants_of([run]) if v != "plain" and v in present]
    header = ["workload", "plain (ms)"] + variants
    floor = all(v in variants for v in CASSETTE_VS_FLOOR)
    if floor:
        header += ["cassette / floor", "per event"]
    rows = []
    for workload in workloads:
        plain = run.medians.get((workload, "plain"))
        rows.append([workload, "-" if plain is None else f"{plain * 1e3:.3f}"]
                    + [fmt_ratio(run.ratio(workload, v)) for v in variants])
        if floor:
            rows[-1].append(fmt_ratio(run.between(workload, *CASSETTE_VS_FLOOR)))
            rows[-1].append(fmt_ratio(run.per_event(workload, *CASSETTE_VS_FLOOR)))
    rows.append(["geomean", ""] + [
        fmt_ratio(geomean([run.ratio(w, v) for w in workloads])) for v in variants])
    if floor:
        rows[-1].append(fmt_ratio(geomean(
            [run.between(w, *CASSETTE_VS_FLOOR) for w in workloads])))
        rows[-1].append(fmt_ratio(geomean(
            [run.per_event(w, *CASSETTE_VS_FLOOR) for w in workloads])))
    # A suite of its own runs only some of the variants: those it has.
    expected = [v for v in VARIANTS if not suite or v in present]
    missing = [f"{w} [{v}]" for w in workloads for v in expected
               if (w, v) not in run.medians and not (v == "monitoring" and version_tuple(run.python) < (3, 12))]
    title = SUITE_TITLES.get(suite, suite)
    text = [(f"{title}: " if title else "")
            + f"{run.stat.capitalize()} time of each variant / {run.stat} of plain: "
            f"{run.label()}",
            table(header, rows)]
    recursion = geomean([run.ratio(w, "recursion-only") for w in workloads])
    counted = sum(run.ratio(w, "recursion-only") is not None for w in workloads)
    if counted:
        text.append(f"geometric mean of the recursion-only ratios: {fmt_ratio(recursion)}"
                    f" over {counted} of {len(workloads)} workloads")
    if floor:
        versus = [run.between(w, *CASSETTE_VS_FLOOR) for w in workloads]
        text.append("geometric mean of counting-prehook / python-floor (cassette / floor): "
                    f"{fmt_ratio(geomean(versus))} over "
                    f"{sum(v is not None for v in versus)} of {len(workloads)} workloads")
        each = [run.per_event(w, *CASSETTE_VS_FLOOR) for w in workloads]
        text.append("geometric mean of the same per event each counts ((time - plain) / "
                    f"events): {fmt_ratio(geomean(each))} over "
                    f"{sum(v is not None for v in each)} of {len(workloads)} workloads")
    if missing:
        text.append("no result (failed, skipped or not run): " + ", ".join(missing))
    return "\n".join(text)


def first_call_report(run):
    """The table of bench/test_first_call.py's benchmarks (first overdubbed
    call in a fresh process: plain, cold cache, warm cache)."""

    def ratio(a, b):
        return "-" if a is None or b is None or b <= 0 else f"{a / b:.1f}x"

    def num(value, fmt):
        return "-" if value is None else format(value, fmt)

    header = ["workload", "plain (ms)", "cold (ms)", "warm (ms)", "cold/plain", "warm/plain",
              "cold/warm", "code objects", "rewrite us/fn", "rewrite us/instr",
              "round-trip us/instr", "load us/fn"]
    rows = []
    breakdowns = []
    for workload, modes in run.first_calls.items():
        plain, cold, warm = (modes.get(m, (None, {}))[0] for m in ("plain", "cold", "warm"))
        cold_info = modes.get("cold", (None, {}))[1]
        warm_info = modes.get("warm", (None, {}))[1]
        rows.append([workload, num(plain and plain * 1e3, ".1f"), num(cold and cold * 1e3, ".1f"),
                     num(warm and warm * 1e3, ".1f"), ratio(cold, plain), ratio(warm, plain),
                     ratio(cold, warm), num(cold_info.get("code_objects"), ".0f"),
                     num(cold_info.get("rewrite_us_median"), ".0f"),
                     num(cold_info.get("rewrite_us_per_instr_median"), ".1f"),
                     num(cold_info.get("roundtrip_us_per_instr_median"), ".1f"),
                     num(warm_info.get("load_us_median"), ".0f")])
        for mode, info in (("cold", cold_info), ("warm", warm_info)):
            parts = info.get("breakdown_ms")
            if parts:
                breakdowns.append(f"  {workload} {mode}: " + ", ".join(
                    f"{name} {value:.1f}" for name, value in parts.items()))
    text = [f"First overdubbed call in a fresh process ({run.stat}): {run.label()}",
            table(header, rows)]
    if breakdowns:
        text.append("breakdown of the first call (ms):")
        text += breakdowns
    return "\n".join(text)


def runtime_function_report(run):
    """Per kind of function made at run time: what one costs overdubbed over
    plain, the cost of calling one already seen taken away (see
    bench/test_runtime_functions.py)."""
    rows = []
    for kind, times in run.runtime_functions.items():
        try:
            made = times["made", "overdub"][0] - times["made", "plain"][0]
            hoisted = times["hoisted", "overdub"][0] - times["hoisted", "plain"][0]
            count = times["made", "plain"][1]
        except KeyError:
            continue
        rows.append([kind, f"{times['made', 'plain'][0] / count * 1e9:.0f}",
                     f"{times['made', 'overdub'][0] / count * 1e9:.0f}",
                     f"{(made - hoisted) / count * 1e6:.2f}"])
    header = ["function made at run time", "plain (ns/iter)", "overdub (ns/iter)",
              "extra per function (us)"]
    return (f"Functions made while overdubbed: {run.label()}\n"
            + table(header, rows))


def order_runs(first, second):
    """(cython run, pure run), from the recorded runtimes when they tell."""
    if first.implementation == "python" and second.implementation == "cython":
        return second, first
    if not (first.implementation == "cython" and second.implementation == "python"):
        print(f"note: runtimes recorded as {first.implementation!r} and "
              f"{second.implementation!r}; taking {first.path} as the Cython run "
              f"and {second.path} as the pure-Python run\n")
    return first, second


def speedup_report(cython, pure):
    variants = variants_of([cython, pure])
    workloads = workloads_of([cython, pure])
    header = ["workload"] + variants
    rows = []

    def speedup(workload, variant):
        fast = cython.medians.get((workload, variant))
        slow = pure.medians.get((workload, variant))
        if fast is None or slow is None or fast <= 0:
            return None
        return slow / fast

    for workload in workloads:
        rows.append([workload] + [fmt_ratio(speedup(workload, v)) for v in variants])
    rows.append(["geomean"] + [fmt_ratio(geomean([speedup(w, v) for w in workloads]))
                               for v in variants])
    return "\n".join([
        f"Cython-core speedup over pure Python (pure {cython.stat} / Cython {cython.stat}):",
        f"  Cython run: {cython.label()}",
        f"  pure run:   {pure.label()}",
        table(header, rows),
        "(plain, setprofile, monitoring and python-floor do not run cassette "
        "code: their speedups show run-to-run noise)",
    ])


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Overhead ratios (and Cython-vs-pure speedups) from "
                    "pytest-benchmark JSON files of bench/.")
    parser.add_argument("json", nargs="+", metavar="JSON",
                        help="one run, or two: the Cython-core run then the "
                             "pure-Python run")
    parser.add_argument("--stat", choices=("median", "min", "mean"), default="median",
                        help="the statistic compared (default: median; min is "
                             "less sensitive to load from other processes)")
    args = parser.parse_args(argv)
    if len(args.json) > 2:
        parser.error("give one JSON file, or two (Cython run, pure-Python run)")
    try:
        runs = [Run(path, args.stat) for path in args.json]
    except (OSError, ValueError, KeyError) as exc:
        print(f"report.py: cannot read benchmark JSON: {exc}", file=sys.stderr)
        return 1
    if len(runs) == 2:
        runs = list(order_runs(*runs))
    for run in runs:
        for suite in sorted(run.suites, key=bool):     # test_overhead.py's first
            print(ratio_report(run, suite))
            print()
        if run.first_calls:
            print(first_call_report(run))
            print()
        if run.runtime_functions:
            print(runtime_function_report(run))
            print()
    if len(runs) == 2:
        print(speedup_report(*runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
