#!/usr/bin/env python3
"""The first overdubbed call: what it costs, cold and with the disk cache.

Every measurement runs in a fresh interpreter, because what is measured is
one-time work (rewriting, routing, dispatch planning) that a process pays
once.  Three modes:

``plain``  the workload's first call, without cassette imported at all;
``cold``   its first call overdubbed, with an empty disk cache directory;
``warm``   its first call overdubbed, in a new process, with the cache a
           previous (cold) process populated.

Workloads, each reaching many functions once:

``statistics``  most of the ``statistics`` module (means, medians, spreads,
                quantiles, regression, ``NormalDist``) on floats, Fractions
                and Decimals;
``json``        ``json.JSONEncoder(indent=2, sort_keys=True)`` on a nested
                structure (``indent`` selects the pure-Python encoder,
                ``json.encoder._make_iterencode``) and decoding it back with
                the pure-Python scanner (``json.scanner.py_make_scanner``);
``generated``   a generated module of :data:`GENERATED_FUNCTIONS` distinct
                small functions (plus the comprehensions and methods they
                define) calling each other as a binary tree.

The context is ``recursion-only`` (as in test_overhead.py: one ``execute``
handler for a function nobody calls; only calls and ``with`` are rewritten)
or, with ``--context touching``, a catch-all prehook that counts operations
(every site kind is rewritten: the most rewriting work).

The child process (``python first_call_workload.py child WORKLOAD MODE``)
prints one JSON object: the first-call time, the result's digest (every mode
must compute the same), and for overdubbed modes the breakdown of the first
call — time in ``template_for`` split into disk loads, rewrites
(``rewrite._rewritten_code``) and disk stores; ``routing.route_new_classes``;
the second call (the steady-state cost of running overdubbed) and the rest
(resolution, dispatch planning, binding) — plus, cold, each rewritten code
object's rewrite time and instruction count and, on the same code objects,
the time of a plain ``Bytecode.from_code(c).to_code()`` round-trip.

Run ``python bench/first_call_workload.py`` for the table (``--rounds``,
``--context``, ``--workload``); ``bench/test_first_call.py`` runs the same
measurements under pytest-benchmark.
"""

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

WORKLOADS = ("statistics", "json", "generated")
MODES = ("plain", "cold", "warm")
GENERATED_FUNCTIONS = 400
GENERATED_MODULE = "cassette_bench_generated"


# --------------------------------------------------------------------------
# Workloads (run in the child)


def statistics_workload():
    import decimal
    import fractions
    import statistics as st

    data = [((i * 37) % 101) / 7.0 for i in range(120)]
    other = [x * 0.5 + ((i * 13) % 7) for i, x in enumerate(data)]
    ints = [(i * 7) % 11 for i in range(60)]
    fracs = [fractions.Fraction((i * 5) % 17, 3) for i in range(40)]
    decs = [decimal.Decimal(i % 9) / decimal.Decimal(4) for i in range(40)]
    dist = st.NormalDist.from_samples(data)
    out = [
        st.mean(data), st.fmean(data), st.median(data), st.median_low(data),
        st.median_high(data), st.median_grouped(ints), st.mode(ints), st.multimode(ints),
        st.stdev(data), st.pstdev(data), st.variance(data), st.pvariance(data),
        st.quantiles(data, n=4), st.quantiles(data, n=10, method="inclusive"),
        st.geometric_mean([x + 1 for x in data]), st.harmonic_mean([x + 1 for x in data]),
        st.correlation(data, other), st.covariance(data, other),
        tuple(st.linear_regression(data, other)),
        st.mean(fracs), st.variance(fracs), st.median(fracs),
        st.mean(decs), st.stdev(decs),
        dist.mean, dist.stdev, dist.cdf(5.0), dist.inv_cdf(0.3), dist.pdf(4.0),
        dist.overlap(st.NormalDist(5.0, 2.0)), dist.zscore(6.0),
        (dist + 2.0).mean, (dist * 3.0).stdev, dist.quantiles(4),
    ]
    return repr(out)


class _Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


def _encode_default(obj):
    if isinstance(obj, _Point):
        return {"point": [obj.x, obj.y]}
    raise TypeError(type(obj).__name__)


def json_workload():
    import json as json_module
    import json.scanner

    data = {
        "name": "cassette", "version": [0, 1, 0], "ok": True, "none": None,
        "points": [_Point(i, i * 0.5) for i in range(6)],
        "nested": {f"k{i}": {"values": list(range(i)), "label": f"item {i}\u00e9",
                             "ratio": i / 7.0, "flags": [i % 2 == 0, None]}
                   for i in range(12)},
        "matrix": [[(r * c) % 5 for c in range(5)] for r in range(5)],
        "escapes": "tab\tquote\"backslash\\newline\n",
    }
    encoder = json_module.JSONEncoder(indent=2, sort_keys=True, default=_encode_default)
    text = encoder.encode(data)
    compact = json_module.dumps(data, indent=None, separators=(",", ":"), sort_keys=True,
                                default=_encode_default, ensure_ascii=False)
    decoder = json_module.JSONDecoder(object_pairs_hook=lambda pairs: dict(sorted(pairs)))
    decoder.scan_once = json.scanner.py_make_scanner(decoder)
    back = decoder.decode(text)
    return repr((len(text), len(compact), back == json_module.loads(compact), back["matrix"]))


def generated_source(count=GENERATED_FUNCTIONS):
    """A module of ``count`` distinct functions ``f0`` … calling each other
    as a binary tree (``f(i)`` calls ``f(2i+1)`` and ``f(2i+2)``), in six
    shapes: arithmetic loops, string handling with a generator expression,
    containers, try/except, a class with methods, ``with`` and a
    comprehension."""
    lines = ['"""Generated by bench/first_call_workload.py."""', "",
             "import contextlib", "", "",
             "@contextlib.contextmanager",
             "def _scope(x):",
             "    yield x + 1", "", ""]
    for i in range(count):
        children = [c for c in (2 * i + 1, 2 * i + 2) if c < count]
        calls = " + ".join(f"f{c}(x + {c % 5})" for c in children) or "0"
        shape = i % 6
        if shape == 0:
            body = [f"total = x + {i}",
                    "for k in range(3):",
                    f"    total = total * 3 + k - (total // {i % 7 + 2})",
                    "return (total + {calls}) % 1000003"]
        elif shape == 1:
            body = [f's = f"{{x}}-{i}-{{x * {i % 4 + 1}}}"',
                    'parts = s.split("-")',
                    'joined = "_".join(p.upper() for p in parts if p)',
                    "return (len(joined) + {calls}) % 1000003"]
        elif shape == 2:
            body = [f'd = {{"a": x, "b": [x, x + {i}], "i": {i}}}',
                    'd["c"] = sum(d["b"])',
                    f'd.setdefault("e", []).append(x * {i % 9 + 1})',
                    'return (len(d) + d["c"] + d["e"][0] + {calls}) % 1000003']
        elif shape == 3:
            body = ["try:",
                    f"    v = {i} // (x % 3)",
                    "except ZeroDivisionError:",
                    "    v = -1",
                    "finally:",
                    f"    w = x ^ {i}",
                    "return (v + w + {calls}) % 1000003"]
        elif shape == 4:
            body = [f"k = K{i}(x)",
                    "k.bump(2)",
                    "return (k.value() + {calls}) % 1000003"]
            lines += [f"class K{i}:",
                      "    def __init__(self, x):",
                      f"        self.x = x * {i % 5 + 1}",
                      "",
                      "    def bump(self, n):",
                      "        self.x += n",
                      "",
                      "    def value(self):",
                      f"        return self.x - {i}",
                      "", ""]
        else:
            body = ["with _scope(x) as y:",
                    f"    squares = [z * z + {i} for z in range(y % 5 + 1)]",
                    "return (sum(squares) + {calls}) % 1000003"]
        lines.append(f"def f{i}(x):")
        lines += ["    " + line.replace("{calls}", calls) for line in body]
        lines += ["", ""]
    return "\n".join(lines) + "\n"


def generated_workload():
    import importlib

    module = importlib.import_module(GENERATED_MODULE)
    return repr(module.f0(3))


BUILDERS = {
    "statistics": lambda: statistics_workload,
    "json": lambda: json_workload,
    "generated": lambda: generated_workload,
}


def prepare(workload):
    """Import what the workload imports (outside the timed call)."""
    import decimal  # noqa: F401
    import fractions  # noqa: F401
    import json.scanner  # noqa: F401
    import statistics as _statistics  # noqa: F401
    if workload == "generated":
        import importlib
        importlib.import_module(GENERATED_MODULE)


# --------------------------------------------------------------------------
# The child process


def make_context(kind):
    import cassette

    if kind == "touching":
        class Touching(cassette.Context):
            def prehook(self, f, *args, **kwargs):
                self.metadata[0] += 1
        return Touching(metadata=[0])

    class Never(cassette.Context):
        pass

    def never_called(*args, **kwargs):
        raise AssertionError("never_called was called")

    cassette.execute.register(Never, never_called)(lambda ctx, f, *a, **k: None)
    return Never()


class Probe:
    """Timers around the one-time work of a first overdubbed call."""

    def __init__(self):
        from cassette import diskcache, engine, rewrite, routing

        self.totals = {"template_for": 0.0, "load": 0.0, "rewrite": 0.0, "store": 0.0,
                       "route_new_classes": 0.0}
        self.rewrites = []          # (code, seconds)
        self.loads = []             # seconds of each load that hit
        clock = time.perf_counter
        totals = self.totals

        def timed(name, function, record=None):
            def wrapper(*args, **kwargs):
                start = clock()
                try:
                    result = function(*args, **kwargs)
                finally:
                    elapsed = clock() - start
                    totals[name] += elapsed
                if record is not None:
                    record(args, result, elapsed)
                return result
            wrapper.__wrapped__ = function
            return wrapper

        def record_rewrite(args, result, elapsed):
            if result is not args[0]:
                self.rewrites.append((args, elapsed))

        def record_load(args, result, elapsed):
            if result is not None:
                self.loads.append(elapsed)

        engine.template_for = timed("template_for", engine.template_for)
        rewrite._rewritten_code = timed("rewrite", rewrite._rewritten_code, record_rewrite)
        diskcache.load = timed("load", diskcache.load, record_load)
        diskcache.store = timed("store", diskcache.store)
        routing.route_new_classes = timed("route_new_classes", routing.route_new_classes)


def instruction_count(code):
    import dis
    return sum(1 for _ in dis.get_instructions(code))


def best_of(function, *args, repeat=3):
    """The fastest of ``repeat`` calls of ``function(*args)``, in seconds."""
    best = None
    for _ in range(repeat):
        start = time.perf_counter()
        function(*args)
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return best


def roundtrip(code):
    """A plain ``bytecode`` round-trip of ``code``."""
    from bytecode import Bytecode

    return Bytecode.from_code(code).to_code()


def child(workload, mode, context_kind):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))
    prepare(workload)
    run = BUILDERS[workload]()
    report = {"workload": workload, "mode": mode, "context": context_kind,
              "python": sys.version.split()[0]}
    if mode == "plain":
        start = time.perf_counter()
        result = run()
        report["first_call_s"] = time.perf_counter() - start
        start = time.perf_counter()
        run()
        report["second_call_s"] = time.perf_counter() - start
    else:
        import cassette
        from cassette import diskcache, rewrite
        from cassette.entry import IMPLEMENTATION

        probe = Probe()
        ctx = make_context(context_kind)
        templates_before = len(rewrite._templates)
        start = time.perf_counter()
        result = cassette.overdub(ctx, run)
        first = time.perf_counter() - start
        start = time.perf_counter()
        cassette.overdub(ctx, run)
        second = time.perf_counter() - start
        totals = probe.totals
        report.update(
            first_call_s=first, second_call_s=second, implementation=IMPLEMENTATION,
            code_objects=len(rewrite._templates) - templates_before,
            disk=dict(diskcache.STATS), cache_dir=diskcache.directory(),
            breakdown={
                "load": totals["load"], "rewrite": totals["rewrite"], "store": totals["store"],
                "template_for_other": totals["template_for"] - totals["load"]
                - totals["rewrite"] - totals["store"],
                "route_new_classes": totals["route_new_classes"],
                "execution (second call)": second,
                "rest": first - totals["template_for"] - totals["route_new_classes"] - second,
            })
        if probe.loads:
            report["load_us_median"] = statistics.median(probe.loads) * 1e6
        if probe.rewrites:
            from cassette.rewrite import _rewritten_code as rewritten_code

            rewritten_code = getattr(rewritten_code, "__wrapped__", rewritten_code)
            rows = []
            for args, seconds in probe.rewrites:
                code = args[0]
                count = instruction_count(code)
                rows.append((seconds, best_of(roundtrip, code), count,
                             best_of(rewritten_code, *args)))
            report["rewritten"] = len(rows)
            report["instructions"] = sum(r[2] for r in rows)
            report["rewrite_us_median"] = statistics.median(r[0] for r in rows) * 1e6
            report["rewrite_us_per_instr_median"] = statistics.median(
                r[0] / r[2] for r in rows if r[2]) * 1e6
            report["rewrite_us_per_instr_total"] = sum(r[0] for r in rows) / max(
                1, sum(r[2] for r in rows)) * 1e6
            report["rewrite_again_us_per_instr_median"] = statistics.median(
                r[3] / r[2] for r in rows if r[2]) * 1e6
            report["roundtrip_us_median"] = statistics.median(r[1] for r in rows) * 1e6
            report["roundtrip_us_per_instr_median"] = statistics.median(
                r[1] / r[2] for r in rows if r[2]) * 1e6
            report["roundtrip_us_per_instr_total"] = sum(r[1] for r in rows) / max(
                1, sum(r[2] for r in rows)) * 1e6
    report["result_digest"] = hashlib.sha256(result.encode()).hexdigest()[:16]
    print(json.dumps(report))


# --------------------------------------------------------------------------
# The parent: fresh processes


class Session:
    """A temporary directory holding the generated module and the cache
    directories of one measurement session."""

    def __init__(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="cassette-first-call-")
        self.path = self._tmp.name
        self.module_dir = os.path.join(self.path, "modules")
        os.makedirs(self.module_dir)
        with open(os.path.join(self.module_dir, GENERATED_MODULE + ".py"), "w") as f:
            f.write(generated_source())
        self._caches = 0

    def new_cache_dir(self):
        self._caches += 1
        path = os.path.join(self.path, f"cache{self._caches}")
        os.makedirs(path)
        return path

    def run(self, workload, mode, cache_dir=None, context="recursion-only"):
        """One child process; returns its report (raises if it failed)."""
        import cassette

        env = dict(os.environ)
        cassette_root = os.path.dirname(os.path.dirname(os.path.abspath(cassette.__file__)))
        env["PYTHONPATH"] = os.pathsep.join(
            [self.module_dir, cassette_root] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env.pop("CASSETTE_NO_DISK_CACHE", None)
        env.pop("CASSETTE_CACHE_MAX_MB", None)
        if cache_dir is not None:
            env["CASSETTE_CACHE_DIR"] = cache_dir
        child_mode = "plain" if mode == "plain" else "cassette"
        completed = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "child", workload, child_mode,
             "--context", context],
            env=env, capture_output=True, text=True, timeout=600)
        if completed.returncode != 0:
            raise RuntimeError(f"{workload} [{mode}] child failed:\n{completed.stderr}")
        report = json.loads(completed.stdout.strip().splitlines()[-1])
        report["mode"] = mode
        return report

    def measure(self, workload, mode, context="recursion-only"):
        """A fresh process's first call in ``mode`` (a warm one after a cold
        process populated a fresh cache directory)."""
        if mode == "plain":
            return self.run(workload, mode, context=context)
        cache = self.new_cache_dir()
        if mode == "warm":
            self.run(workload, "cold", cache, context)
        return self.run(workload, mode, cache, context)

    def close(self):
        self._tmp.cleanup()


def summarize(reports):
    """{workload: {mode: {...medians...}}} from a list of child reports."""
    by = {}
    for report in reports:
        by.setdefault(report["workload"], {}).setdefault(report["mode"], []).append(report)
    summary = {}
    for workload, modes in by.items():
        summary[workload] = {}
        for mode, runs in modes.items():
            entry = {"first_call_ms": statistics.median(r["first_call_s"] for r in runs) * 1e3,
                     "runs": len(runs)}
            for key in ("code_objects", "rewritten", "instructions", "rewrite_us_median",
                        "rewrite_us_per_instr_median", "rewrite_us_per_instr_total",
                        "rewrite_again_us_per_instr_median",
                        "roundtrip_us_median", "roundtrip_us_per_instr_median",
                        "roundtrip_us_per_instr_total", "load_us_median"):
                values = [r[key] for r in runs if key in r]
                if values:
                    entry[key] = statistics.median(values)
            breakdowns = [r["breakdown"] for r in runs if "breakdown" in r]
            if breakdowns:
                entry["breakdown_ms"] = {k: statistics.median(b[k] for b in breakdowns) * 1e3
                                         for k in breakdowns[0]}
            summary[workload][mode] = entry
    return summary


def format_summary(summary):
    lines = []
    header = (f"{'workload':<11} {'plain ms':>9} {'cold ms':>9} {'warm ms':>9} "
              f"{'cold/plain':>10} {'warm/plain':>10} {'cold/warm':>9} {'codes':>6} "
              f"{'rw us/fn':>9} {'rw us/ins':>9} {'again':>6} {'rt us/ins':>9} {'load us':>8}")
    lines += [header, "-" * len(header)]
    for workload, modes in summary.items():
        plain = modes.get("plain", {}).get("first_call_ms")
        cold = modes.get("cold", {})
        warm = modes.get("warm", {})

        def ratio(a, b):
            return f"{a / b:.1f}x" if a and b else "-"

        def num(value, fmt):
            return format(value, fmt) if value is not None else "-"

        lines.append(
            f"{workload:<11} {num(plain, '9.1f')} {num(cold.get('first_call_ms'), '9.1f')} "
            f"{num(warm.get('first_call_ms'), '9.1f')} "
            f"{ratio(cold.get('first_call_ms'), plain):>10} "
            f"{ratio(warm.get('first_call_ms'), plain):>10} "
            f"{ratio(cold.get('first_call_ms'), warm.get('first_call_ms')):>9} "
            f"{num(cold.get('code_objects'), '6.0f')} "
            f"{num(cold.get('rewrite_us_median'), '9.0f')} "
            f"{num(cold.get('rewrite_us_per_instr_median'), '9.1f')} "
            f"{num(cold.get('rewrite_again_us_per_instr_median'), '6.1f')} "
            f"{num(cold.get('roundtrip_us_per_instr_median'), '9.1f')} "
            f"{num(warm.get('load_us_median'), '8.0f')}")
    lines.append("")
    lines.append("codes: code objects given a template by the first call; rw: cold rewrite "
                 "(rewrite._rewritten_code) per code object and per instruction, medians "
                 "(again: the same rewrites repeated in the warmed-up process, best of 3); "
                 "rt: plain Bytecode.from_code(c).to_code() per instruction on the same code "
                 "objects; load: a warm disk-cache load per code object.")
    lines.append("")
    lines.append("Breakdown of the first overdubbed call (median ms):")
    for workload, modes in summary.items():
        for mode in ("cold", "warm"):
            breakdown = modes.get(mode, {}).get("breakdown_ms")
            if breakdown:
                parts = ", ".join(f"{k} {v:.1f}" for k, v in breakdown.items())
                lines.append(f"  {workload:<11} {mode:<5} total "
                             f"{modes[mode]['first_call_ms']:.1f}: {parts}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    child_parser = sub.add_parser("child")
    child_parser.add_argument("workload", choices=WORKLOADS)
    child_parser.add_argument("mode", choices=("plain", "cassette"))
    child_parser.add_argument("--context", default="recursion-only",
                              choices=("recursion-only", "touching"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--context", default="recursion-only",
                        choices=("recursion-only", "touching"))
    parser.add_argument("--workload", action="append", choices=WORKLOADS)
    parser.add_argument("--json", help="also write the summary here")
    args = parser.parse_args(argv)
    if args.command == "child":
        child(args.workload, args.mode, args.context)
        return 0
    session = Session()
    try:
        reports = []
        for workload in args.workload or WORKLOADS:
            for _ in range(args.rounds):
                for mode in MODES:
                    report = session.measure(workload, mode, args.context)
                    reports.append(report)
            digests = {r["result_digest"] for r in reports if r["workload"] == workload}
            if len(digests) != 1:
                raise SystemExit(f"{workload}: the modes computed different results")
        summary = summarize(reports)
        implementation = next((r["implementation"] for r in reports if "implementation" in r), "?")
        print(f"Python {sys.version.split()[0]}, cassette runtime {implementation}, "
              f"context {args.context}, {args.rounds} fresh processes per cell")
        print(format_summary(summary))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"summary": summary, "reports": reports}, f, indent=1)
    finally:
        session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
