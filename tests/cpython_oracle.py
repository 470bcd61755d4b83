"""The faithfulness oracle: CPython's own regression tests, plain vs overdubbed.

reference §3.4 says that overdubbing with a context that defines nothing returns
exactly what the plain call returns, "for any Python program: the language's
own tests pass under it".  This module checks that claim against modules of
the ``test`` package that ships with the running interpreter.

For one test module the harness

1. loads its unittest suite and runs it plainly, in this process — the
   *oracle* — recording which test ids pass;
2. loads a fresh suite and runs it again with every test *overdubbed*: on each
   TestCase instance, ``setUp``, the test method and ``tearDown`` are replaced
   by wrappers that run the bound method as ``cassette.overdub(ctx, method)``
   (the unittest machinery itself — result objects, ``subTest``,
   ``assertRaises`` set up by the runner — stays plain; everything the test's
   own code calls, ``self.assert*`` included, runs overdubbed);
3. reports every id that passed plainly but not overdubbed (a *regression*),
   with the first lines of its traceback.

Three contexts are provided: :class:`Nothing` defines no handler at all,
:class:`Touching` has a catch-all ``prehook`` that touches every operation
(counts it, reads ``type(f)`` and ``len(args)``), which forces every site kind
to be rewritten and every operation through the full hook protocol, and
:func:`tagging` is a ``Nothing`` with tagging enabled (the propagation sites
rewritten, every primitive through the tagging fallback).

Use it from Python::

    plain = run_module("test.test_bisect")
    dubbed = run_module("test.test_bisect", Nothing())
    assert not regressions(plain, dubbed)

or from the command line, for a per-module table (add ``-v`` for the
regressions' tracebacks, ``--escapes`` to count escapes too,
``--extended`` to add the modules of :data:`EXTENDED`)::

    CASSETTE_PURE_PYTHON=1 PYTHONPATH=. python tests/cpython_oracle.py [-v] [--escapes] [--extended] [test.test_x ...]

*Escapes* (reference §3.3) are counted with :func:`cassette.count_escapes`
around the overdubbed run.  It makes runs several times slower, so the
pytest suite counts them only for the modules it checks for zero escapes.
"""

import collections
import functools
import importlib
import os
import sys
import time
import traceback
import unittest

import cassette

#: The CPython test modules the oracle runs by default.  (test_heapq, a
#: third of their time by volume — random heaps of thousands of items —
#: rather than by code, is in EXTENDED.)
MODULES = (
    "test.test_grammar",
    "test.test_scope",
    "test.test_fractions",
    "test.test_bisect",
    "test.test_textwrap",
)

#: More modules for ``--extended`` on the command line (not in the pytest
#: suite: slower, and their remaining failures include the pure runtime's
#: known limits — its own frames on the stack that frame-walking code and
#: the recursion limit see).
EXTENDED = (
    "test.test_heapq",
    "test.test_super", "test.test_with", "test.test_contextlib", "test.test_class",
    "test.test_listcomps", "test.test_setcomps", "test.test_dictcomps",
    "test.test_genexps", "test.test_unpack", "test.test_raise",
    "test.test_keywordonlyarg", "test.test_positional_only_arg",
    "test.test_funcattrs", "test.test_named_expressions", "test.test_patma",
    "test.test_yield_from", "test.test_augassign", "test.test_compare",
    "test.test_property", "test.test_opcodes", "test.test_exceptions",
    "test.test_generators", "test.test_coroutines", "test.test_asyncgen",
    "test.test_dataclasses", "test.test_descr", "test.test_extcall",
    "test.test_string", "test.test_format", "test.test_fstring", "test.test_enum",
    "test.test_functools", "test.test_itertools",
)

# Attributes unittest reads from the test method object itself.
_UNITTEST_MARKS = (
    "__unittest_skip__", "__unittest_skip_why__", "__unittest_expecting_failure__",
)


class Nothing(cassette.Context):
    """A context that defines nothing: overdubbing must change nothing."""


class Counter:
    """Mutable metadata of :class:`Touching`: the operations seen."""

    __slots__ = ("count",)

    def __init__(self):
        self.count = 0


class Touching(cassette.Context):
    """A context whose catch-all prehook touches every operation.

    It calls the builtins ``type`` and ``len`` as they were when this module
    was imported: a test that replaces ``builtins.len`` (test_functools
    does, with an ``lru_cache`` that cannot hash a dict) changes the
    program's ``len``, and a hook is not part of the program."""

    def prehook(self, f, *args, **kwargs):
        self.metadata.count += 1
        _type(f)
        _len(args)


_type = type
_len = len


def touching():
    """A fresh :class:`Touching` context with a zeroed :class:`Counter`."""
    return Touching(metadata=Counter())


def tagging():
    """A :class:`Nothing` context with tagging enabled: every propagation
    site is rewritten and every primitive runs through the tagging
    fallback, though nothing is tagged — which must change nothing."""
    return cassette.enabletagging(Nothing(), run_module)


class Outcome(unittest.TestResult):
    """A TestResult that keeps, per test id, whether it passed and, if not,
    the first lines of its traceback.  Subtest failures count against their
    parent test."""

    def __init__(self):
        super().__init__()
        self.passed = set()
        self.problems = {}        # test id -> short traceback text
        self.skipped_ids = set()
        self.seconds = 0.0
        self.escapes = None       # a cassette.Escapes when counted

    @staticmethod
    def _id(test):
        test = getattr(test, "test_case", test)   # a _SubTest's parent
        return test.id()

    def _note(self, test, err):
        text = "".join(traceback.format_exception(*err)) if isinstance(err, tuple) else str(err)
        self.problems.setdefault(self._id(test), text)

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed.add(self._id(test))

    def addError(self, test, err):
        super().addError(test, err)
        self._note(test, err)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._note(test, err)

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._note(subtest, err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.skipped_ids.add(self._id(test))

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.problems.setdefault(self._id(test), "unexpected success")

    @property
    def passing(self):
        """Ids that passed with no failing subtest."""
        return self.passed - set(self.problems)


def iter_tests(suite):
    """The TestCase instances of a (nested) suite, in order."""
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from iter_tests(item)
        else:
            yield item


def overdubbed(ctx, method):
    """A stand-in for the bound ``method`` that runs it overdubbed by ``ctx``,
    carrying unittest's skip / expected-failure marks."""
    @functools.wraps(method)
    def run_overdubbed(*args, **kwargs):
        limit = sys.getrecursionlimit()
        try:
            return cassette.overdub(ctx, method, *args, **kwargs)
        finally:
            # A test that lowers the limit and fails before restoring it
            # must not take the rest of the run down with it.
            if sys.getrecursionlimit() != limit:
                sys.setrecursionlimit(limit)
    for mark in _UNITTEST_MARKS:
        if hasattr(method, mark):
            setattr(run_overdubbed, mark, getattr(method, mark))
    return run_overdubbed


def overdub_test(ctx, test):
    """Make ``test`` (a TestCase instance) run its ``setUp``, test method and
    ``tearDown`` overdubbed by ``ctx`` (instance attributes shadow the
    class's methods; unittest looks them up on the instance)."""
    name = getattr(test, "_testMethodName", None)
    if name is None or not hasattr(test, name):
        return          # e.g. unittest's _FailedTest / ModuleImportFailure
    for attr in ("setUp", name, "tearDown"):
        setattr(test, attr, overdubbed(ctx, getattr(test, attr)))


def load_suite(module_name):
    """A fresh unittest suite for ``module_name`` (honours ``load_tests``)."""
    module = importlib.import_module(module_name)
    return unittest.defaultTestLoader.loadTestsFromModule(module)


def run_module(module_name, ctx=None, count_escapes=False):
    """Run ``module_name``'s tests, overdubbed by ``ctx`` unless it is None;
    return the :class:`Outcome`.  With ``count_escapes``, the run is watched
    by :func:`cassette.count_escapes` and ``outcome.escapes`` holds what it
    saw."""
    suite = load_suite(module_name)
    if ctx is not None:
        for test in iter_tests(suite):
            overdub_test(ctx, test)
    outcome = Outcome()
    started = time.perf_counter()
    if count_escapes:
        with cassette.count_escapes() as outcome.escapes:
            suite.run(outcome)
    else:
        suite.run(outcome)
    outcome.seconds = time.perf_counter() - started
    return outcome


def first_lines(text, count=12):
    """The head and the last lines of a traceback: where it went wrong."""
    lines = text.rstrip().splitlines()
    if len(lines) <= count:
        return "\n".join(lines)
    return "\n".join(lines[:3] + ["    ..."] + lines[-(count - 3):])


def regressions(plain, dubbed):
    """``{test id: traceback head}`` for tests that passed in ``plain`` but
    not in ``dubbed``."""
    lost = plain.passing - dubbed.passing
    return {
        test_id: first_lines(dubbed.problems.get(test_id, "did not run / not reported"))
        for test_id in sorted(lost)
    }


def describe(module_name, label, lost):
    """An assertion message listing the regressions of one run."""
    parts = [f"{len(lost)} test(s) of {module_name} pass plainly but fail "
             f"overdubbed by {label}:"]
    for test_id, text in lost.items():
        parts.append(f"--- {test_id}\n{text}")
    return "\n".join(parts)


def main(argv):
    verbose = "-v" in argv
    count_escapes = "--escapes" in argv
    names = [a for a in argv if not a.startswith("-")] or list(MODULES)
    if "--extended" in argv:
        names += [name for name in EXTENDED if name not in names]
    runtime = sys.modules["cassette.entry"].IMPLEMENTATION
    print(f"Python {sys.version.split()[0]}, cassette runtime: {runtime}")
    total = 0
    for name in names:
        plain = run_module(name)
        row = [f"{name:24} plain {len(plain.passing):4} ({plain.seconds:5.1f}s)"]
        for label, ctx in (("Nothing", Nothing()), ("Touching", touching()),
                           ("Tagging", tagging())):
            dubbed = run_module(name, ctx, count_escapes)
            lost = regressions(plain, dubbed)
            total += len(lost)
            extra = f" ops={ctx.metadata.count}" if label == "Touching" else ""
            if count_escapes:
                extra += f" escapes={dubbed.escapes.total}"
                if verbose:
                    for where, n in dubbed.escapes.frames.most_common(15):
                        print(f"    escape x{n}: {where}")
            row.append(f"{label} {len(plain.passing) - len(lost):4}/{len(plain.passing)} "
                       f"({dubbed.seconds:5.1f}s){extra}")
            if verbose and lost:
                print(describe(name, label, lost))
        print(" | ".join(row), flush=True)
    if count_escapes:
        from cassette.rewrite import UNREWRITABLE
        for where, error in UNREWRITABLE.items():
            print(f"    not rewritable (runs as is): {where}: {error}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
