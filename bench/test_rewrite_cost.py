"""What rewriting one code object costs (issue 37's first target): every
function and method — nested ones and comprehensions included — of
:data:`MODULES`, forty modules of the standard library, rewritten as a
context that defines nothing needs it (``Context`` with no handler: calls
and ``with`` only) and as one whose catch-all prehook sees every
operation (every site kind: the most work) — the rewrite itself, which
neither the template cache nor the disk cache is asked for.

One benchmark per (context, module group): a round rewrites every code
object of the group once.  ``extra_info``
holds the per-code-object distribution over all forty modules — median,
90th and 99th percentile, in µs — for each context, and the same for a
plain ``bytecode`` round trip (``Bytecode.from_code(c).to_code()``), the
floor of any rewrite built on that package.  That the rewritten code
computes what the original does is the differential tests' job; here each
is checked to be a code object of the same name, arguments and flags.

Run: ``python3 tools/dev.py bench -k rewrite_cost``.
"""

import importlib
import statistics
import time
import types

import pytest
from bytecode import Bytecode

import cassette
from cassette import engine, rewrite

#: Forty modules of the standard library, pure Python, of every kind of code
#: (parsers, containers, numerics, text, I/O, concurrency, dataclasses …).
MODULES = (
    "argparse", "ast", "base64", "bisect", "calendar", "collections", "configparser",
    "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal", "difflib", "email.message",
    "enum", "fractions", "functools", "gettext", "heapq", "html.parser", "inspect", "ipaddress",
    "json.decoder", "json.encoder", "logging", "pathlib", "pprint", "queue", "random", "shlex",
    "statistics", "string", "tarfile", "textwrap", "tokenize", "traceback", "typing",
    "urllib.parse", "zipfile",
)
GROUPS = {f"modules {i + 1}-{i + 10}": MODULES[i:i + 10] for i in range(0, len(MODULES), 10)}


class Noop(cassette.Context):
    pass


class Touching(cassette.Context):
    def prehook(self, f, /, *args, **kwargs):
        pass


def code_objects(module):
    """Every code object of ``module``'s functions and methods, nested code
    (closures, comprehensions, lambdas) included, each once."""
    seen, found = set(), []

    def add(code):
        if id(code) in seen:
            return
        seen.add(id(code))
        found.append(code)
        for const in code.co_consts:
            if type(const) is types.CodeType:
                add(const)

    def visit(namespace, depth=0):
        for value in list(vars(namespace).values()):
            if type(value) is types.FunctionType and value.__module__ == module.__name__:
                add(value.__code__)
            elif isinstance(value, (staticmethod, classmethod)) and type(
                    value.__func__) is types.FunctionType:
                add(value.__func__.__code__)
            elif isinstance(value, property):
                for accessor in (value.fget, value.fset, value.fdel):
                    if type(accessor) is types.FunctionType:
                        add(accessor.__code__)
            elif (isinstance(value, type) and value.__module__ == module.__name__
                  and depth < 3):
                visit(value, depth + 1)

    visit(module)
    return found


_codes = {name: code_objects(importlib.import_module(name)) for name in MODULES}


def kinds_of(context_class):
    return engine.intercepted_kinds((context_class,))


CONTEXTS = {"noop": Noop, "touching": Touching}


def rewrite_all(codes, kinds):
    """Rewrite ``codes`` from scratch; each one's cost in seconds."""
    costs = []
    for code in codes:
        start = time.perf_counter()
        rewritten = rewrite._rewritten_code(code, kinds, (), None)
        costs.append(time.perf_counter() - start)
        assert type(rewritten) is types.CodeType and rewritten.co_name == code.co_name
        assert (rewritten.co_argcount, rewritten.co_flags) == (code.co_argcount, code.co_flags)
    return costs


def round_trips(codes):
    costs = []
    for code in codes:
        start = time.perf_counter()
        Bytecode.from_code(code).to_code()
        costs.append(time.perf_counter() - start)
    return costs


def distribution(seconds):
    ordered = sorted(seconds)
    at = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e6  # noqa: E731
    return {"code objects": len(ordered), "median us": round(statistics.median(ordered) * 1e6, 1),
            "p90 us": round(at(0.90), 1), "p99 us": round(at(0.99), 1),
            "mean us": round(statistics.fmean(ordered) * 1e6, 1)}


@pytest.fixture(scope="module")
def distributions():
    """Over all forty modules, once: the rewrites' and the round trips'."""
    every = [code for name in MODULES for code in _codes[name]]
    found = {context: distribution(rewrite_all(every, kinds_of(cls)))
             for context, cls in CONTEXTS.items()}
    found["bytecode round trip"] = distribution(round_trips(every))
    return found


@pytest.mark.parametrize("group", list(GROUPS))
@pytest.mark.parametrize("context", list(CONTEXTS))
def test_rewrite_cost(benchmark, distributions, context, group):
    benchmark.group = f"rewrite cost: {group}"
    benchmark.extra_info["per code object, all forty modules"] = distributions
    codes = [code for name in GROUPS[group] for code in _codes[name]]
    kinds = kinds_of(CONTEXTS[context])
    benchmark.pedantic(rewrite_all, args=(codes, kinds), rounds=3, iterations=1)
