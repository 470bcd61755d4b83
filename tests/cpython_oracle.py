"""The faithfulness oracle: CPython's own regression tests, plain vs overdubbed.

SPEC §3.4 says that overdubbing with a context that defines nothing returns
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

Two contexts are provided: :class:`Nothing` defines no handler at all, and
:class:`Touching` has a catch-all ``prehook`` that touches every operation
(counts it, reads ``type(f)`` and ``len(args)``), which forces every site kind
to be rewritten and every operation through the full hook protocol.

Use it from Python::

    plain = run_module("test.test_bisect")
    dubbed = run_module("test.test_bisect", Nothing())
    assert not regressions(plain, dubbed)

or from the command line, for a per-module table (add ``-v`` for the
regressions' tracebacks, ``--escapes`` to count escapes too,
``--extended`` to add the modules of :data:`EXTENDED`)::

    CASSETTE_PURE_PYTHON=1 PYTHONPATH=. python tests/cpython_oracle.py [-v] [--escapes] [--extended] [test.test_x ...]

*Escapes* (SPEC §3.3) are measured with :class:`EscapeCounter`, a profile
function active while a test runs overdubbed: every Python frame that starts
or resumes there must run rewritten code, except cassette's own code, the
``bytecode`` package's, this harness's (the hooks), code without a single
call site (rewriting leaves such code unchanged) and whatever cassette's
machinery calls for itself (the frames below a cassette frame that is not
one of those that call into the program: the runtime's, ``entry.py``'s and
``engine.py``'s bodies).  It makes runs several times slower, so the pytest
suite does not use it.
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
from cassette.operations import Intercept
from cassette.rewrite import kinds_for, template_for

#: The CPython test modules the oracle runs by default.
MODULES = (
    "test.test_grammar",
    "test.test_scope",
    "test.test_fractions",
    "test.test_bisect",
    "test.test_heapq",
    "test.test_textwrap",
)

#: More modules for ``--extended`` on the command line (not in the pytest
#: suite: slower, and their remaining failures include the pure runtime's
#: known limits — its own frames on the stack that frame-walking code and
#: the recursion limit see).
EXTENDED = (
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


_CASSETTE_DIR = os.path.dirname(os.path.abspath(cassette.__file__))
_BYTECODE_DIR = os.path.dirname(os.path.abspath(sys.modules["bytecode"].__file__))
_HERE = os.path.abspath(__file__)
# cassette frames that call into the program; every other cassette frame is
# machinery: what it calls runs for cassette, not for the program.
_PROGRAM_FILES = frozenset(
    os.path.join(_CASSETTE_DIR, name) for name in ("_pyruntime.py", "entry.py"))
_ENGINE_FILE = os.path.join(_CASSETTE_DIR, "engine.py")
_ENGINE_MACHINERY = frozenset({
    "check_arguments", "intercepted_rows", "intercepted_kinds", "rewritten_function",
    "decide", "target", "body_of", "metaclass_call", "instance_call",
})
_CALL_KINDS = kinds_for(Intercept.CALLS)


class EscapeCounter:
    """Counts Python frames that run un-rewritten inside overdubbed tests.

    Install it with :meth:`start` / :meth:`stop` around a run; wrappers made
    by :func:`overdubbed` flag the time spent inside ``cassette.overdub``.
    ``escapes`` maps ``"file:line name"`` of an escaping code object to how
    many frames of it started or resumed."""

    def __init__(self):
        self.escapes = collections.Counter()
        self.depth = 0
        self._verdicts = {}      # id(code) -> (code, escaping?)
        self._machinery = set()  # ids of live frames running for cassette

    @staticmethod
    def _is_machinery_code(code):
        filename = os.path.abspath(code.co_filename)
        if not filename.startswith(_CASSETTE_DIR + os.sep) or filename in _PROGRAM_FILES:
            return False
        return filename != _ENGINE_FILE or code.co_name in _ENGINE_MACHINERY

    def _escaping(self, code):
        entry = self._verdicts.get(id(code))
        if entry is not None and entry[0] is code:
            return entry[1]
        filename = os.path.abspath(code.co_filename)
        if (filename == _HERE or filename.startswith(_BYTECODE_DIR + os.sep)
                or filename.startswith(_CASSETTE_DIR + os.sep)):
            verdict = False
        elif any(_is_runtime_object(c) for c in code.co_consts):
            verdict = False                  # rewritten: slots are bound
        else:
            verdict = bool(template_for(code, _CALL_KINDS).slot_indices)
        self._verdicts[id(code)] = (code, verdict)
        return verdict

    def _profile(self, frame, event, arg):
        if event == "return":
            self._machinery.discard(id(frame))
            return
        if event != "call" or not self.depth:
            return
        caller = frame.f_back
        if ((caller is not None and id(caller) in self._machinery)
                or self._is_machinery_code(frame.f_code)):
            self._machinery.add(id(frame))
            return
        if self._escaping(frame.f_code):
            code = frame.f_code
            self.escapes[f"{code.co_filename}:{code.co_firstlineno} {code.co_qualname}"] += 1

    def start(self):
        sys.setprofile(self._profile)

    def stop(self):
        sys.setprofile(None)


def _is_runtime_object(value):
    owner = getattr(value, "__self__", value)
    return type(owner).__module__.startswith("cassette.")


#: The :class:`EscapeCounter` of the run in progress, if any.
_counter = None


def overdubbed(ctx, method):
    """A stand-in for the bound ``method`` that runs it overdubbed by ``ctx``,
    carrying unittest's skip / expected-failure marks."""
    @functools.wraps(method)
    def run_overdubbed(*args, **kwargs):
        counter = _counter
        limit = sys.getrecursionlimit()
        if counter is not None:
            counter.depth += 1
        try:
            return cassette.overdub(ctx, method, *args, **kwargs)
        finally:
            if counter is not None:
                counter.depth -= 1
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


def run_module(module_name, ctx=None, escapes=None):
    """Run ``module_name``'s tests, overdubbed by ``ctx`` unless it is None;
    return the :class:`Outcome`.  ``escapes``, an :class:`EscapeCounter`,
    counts escapes during an overdubbed run."""
    global _counter
    suite = load_suite(module_name)
    if ctx is not None:
        for test in iter_tests(suite):
            overdub_test(ctx, test)
    outcome = Outcome()
    started = time.perf_counter()
    if escapes is not None and ctx is not None:
        _counter = escapes
        escapes.start()
    try:
        suite.run(outcome)
    finally:
        if _counter is not None:
            escapes.stop()
            _counter = None
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
        for label, ctx in (("Nothing", Nothing()), ("Touching", touching())):
            counter = EscapeCounter() if count_escapes else None
            dubbed = run_module(name, ctx, counter)
            lost = regressions(plain, dubbed)
            total += len(lost)
            extra = f" ops={ctx.metadata.count}" if label == "Touching" else ""
            if counter is not None:
                extra += f" escapes={sum(counter.escapes.values())}"
                if verbose:
                    for where, n in counter.escapes.most_common(15):
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
