"""A pytest plugin: run a whole test suite with every test overdubbed.

Installed with cassette, it is registered under the ``pytest11`` entry point
``cassette``, so once cassette is installed::

    python -m pytest --cassette count tests/
    python -m pytest --cassette mypackage.contexts:Tracing --cassette-escapes tests/

Without ``--cassette`` it does nothing at all: it adds its two options and
does not even import cassette.  With plugin autoloading disabled
(``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``), load it with ``-p cassette`` (the
entry point's name) or ``-p cassette.pytest_plugin`` (the module); with
autoloading on, it is loaded already and ``-p cassette`` changes nothing.

``--cassette CONTEXT`` names the context:

``noop``
    :class:`Noop`, a context that defines nothing: overdubbing must change
    nothing, so a test that passes plainly must pass under it.
``count``
    :class:`Count`, a catch-all ``prehook`` counting every operation (its
    metadata is a :class:`Tally`); the summary reports the count.
``MODULE:NAME``
    ``NAME`` (a dotted path inside the module ``MODULE``, imported as
    ``import MODULE`` would, so ``python -m pytest`` finds modules of the
    current directory) is a :class:`cassette.Context` subclass, called with
    no arguments; a factory, called with no arguments, returning a context
    instance; or a context instance.

One context instance serves the whole session (its metadata accumulates over
the tests).  What runs overdubbed, by ``cassette.overdub(ctx, ...)``:

* a test function or method: the call of the test itself, with the fixture
  values as its arguments (pytest's ``pytest_pyfunc_call``), so
  parametrization, ``pytest.raises``, marks (``xfail``, ``skipif``) and
  subtests behave as they do plainly;
* a ``unittest.TestCase`` test: its ``setUp``, the test method and its
  ``tearDown``, each overdubbed (as the CPython oracle of the project's
  tests does; ``unittest.skip``, ``expectedFailure`` and ``subTest`` keep
  working, the unittest machinery, ``addCleanup`` callbacks and
  ``setUpClass`` run plainly).

Fixtures, pytest's own machinery and other plugins run plainly.  Tests
written as coroutine functions or async generator functions (run by
pytest-asyncio, anyio, ``IsolatedAsyncioTestCase``…) run plainly and are
reported as not overdubbed, as are items that are not Python test functions
(doctests, other plugins' items).

Hypothesis's time limits (its ``deadline`` and the ``too_slow`` health
check) are off in an overdubbed session: overdubbing is slower, and a limit
of speed is not something the test does.

With ``--cassette-escapes``, each overdubbed call is watched by
:func:`cassette.count_escapes`; the summary gives the total, the tests with
most escapes and the code that escaped most often.

A bad ``--cassette`` value, or a context whose construction raises, is a
usage error (one line, exit status 4).  The guide is ``docs/testing.md``.
"""

from __future__ import annotations

import collections
import functools
import importlib
import inspect
import sys
from typing import Any, Callable

import pytest

#: The names ``--cassette`` accepts besides ``MODULE:NAME``, with the module
#: attribute that holds each one's context class.
BUILTIN_CONTEXTS = {"noop": "Noop", "count": "Count"}

#: The name under which the active session's plugin object is registered.
SESSION_PLUGIN_NAME = "cassette-overdubbing"

# Attributes unittest reads from the test method object itself.
_UNITTEST_MARKS = (
    "__unittest_skip__", "__unittest_skip_why__", "__unittest_expecting_failure__",
)

#: How many tests and escaping code objects the escape summary names.
_WORST_SHOWN = 5


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cassette", "cassette: run every test overdubbed by a context")
    group.addoption(
        "--cassette", metavar="CONTEXT", default=None,
        help="run every test inside cassette.overdub(CONTEXT, ...): a built-in context "
             f"({', '.join(BUILTIN_CONTEXTS)}) or MODULE:NAME naming a cassette.Context "
             "subclass, a factory returning a context, or a context instance")
    group.addoption(
        "--cassette-escapes", action="store_true", default=False,
        help="with --cassette: count escapes (frames of the tests that ran "
             "un-rewritten) per test and in total, with cassette.count_escapes")


def pytest_configure(config: pytest.Config) -> None:
    spec = config.getoption("cassette", None)
    if spec is None:
        if config.getoption("cassette_escapes", False):
            raise pytest.UsageError("--cassette-escapes needs --cassette CONTEXT")
        return
    ctx = make_context(spec)
    config.pluginmanager.register(
        OverdubbingSession(spec, ctx, config.getoption("cassette_escapes")),
        SESSION_PLUGIN_NAME)


def active_context(config: pytest.Config) -> Any:
    """The context every test of this session runs under, or None when
    ``--cassette`` was not given."""
    session = config.pluginmanager.get_plugin(SESSION_PLUGIN_NAME)
    return None if session is None else session.ctx


def make_context(spec: str) -> Any:
    """The context ``--cassette spec`` names (see the module documentation);
    :class:`pytest.UsageError` for anything else."""
    import cassette

    def usage(problem: str) -> pytest.UsageError:
        return pytest.UsageError(f"--cassette {spec}: {problem}")

    if spec in BUILTIN_CONTEXTS:
        target: Any = _builtin_classes()[BUILTIN_CONTEXTS[spec]]
        what = spec
    else:
        module_name, colon, attribute = spec.partition(":")
        if not (colon and module_name and attribute):
            raise usage(
                f"expected a built-in context ({', '.join(BUILTIN_CONTEXTS)}) or MODULE:NAME")
        try:
            target = importlib.import_module(module_name)
        except Exception as error:
            raise usage(f"cannot import {module_name}: {type(error).__name__}: {error}") from None
        for part in attribute.split("."):
            try:
                target = getattr(target, part)
            except AttributeError:
                raise usage(f"{module_name} has no attribute {attribute}") from None
        what = attribute
    if isinstance(target, cassette.Context):
        return target
    if not callable(target):
        raise usage(f"{what} ({type(target).__name__}) is not a cassette.Context "
                    "subclass, a factory or a context")
    try:
        ctx = target()
    except Exception as error:
        raise usage(f"{what}() raised {type(error).__name__}: {error}") from None
    if not isinstance(ctx, cassette.Context):
        raise usage(f"{what}() returned {type(ctx).__name__}, not a cassette.Context")
    return ctx


def _is_async(function: Any) -> bool:
    """True for a coroutine or async generator function, also behind the
    ``__wrapped__`` chain of a synchronous wrapper a plugin put around it."""
    seen = 0
    while function is not None and seen < 100:
        if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
            return True
        function = getattr(function, "__wrapped__", None)
        seen += 1
    return False


def _unittest_case(item: pytest.Item) -> Any:
    """The ``unittest.TestCase`` instance of a unittest item, else None."""
    from _pytest.unittest import TestCaseFunction
    if not isinstance(item, TestCaseFunction):
        return None
    return getattr(item, "_testcase", None) or getattr(item, "instance", None)


class OverdubbingSession:
    """The plugin object registered while ``--cassette`` is active: it runs
    the tests overdubbed and keeps what the summary reports."""

    def __init__(self, spec: str, ctx: Any, count_escapes: bool) -> None:
        self.spec = spec
        self.ctx = ctx
        self.count_escapes = count_escapes
        self.overdubbed: dict[str, None] = {}     # node ids of tests whose code ran
        self.not_overdubbed: dict[str, str] = {}              # node id -> why
        self.escapes_per_test: collections.Counter[str] = collections.Counter()
        self.escaping_code: collections.Counter[str] = collections.Counter()
        self._async_items: set[str] = set()

    # -- running the tests -------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Hypothesis limits the time of each example (its ``deadline``,
        200 ms by default) and fails a test whose data takes long to make
        (the ``too_slow`` health check): limits of speed, which
        overdubbing's slowdown breaks though nothing the test does changed.
        Once every conftest has loaded its profile, a profile of the same
        settings without both is loaded; a test's own ``@settings`` still
        rule it.  Hypothesis's own pytest plugin does not import it: when
        the plugin is loaded and no conftest imported Hypothesis, it is
        imported here, so that the test modules' ``@given`` (which takes the
        profile in force when it decorates) see the profile (python-dateutil's
        suite)."""
        hypothesis = sys.modules.get("hypothesis")
        if hypothesis is None and session.config.pluginmanager.has_plugin("hypothesispytest"):
            import hypothesis
        if hypothesis is not None:
            _load_profile_without_time_limits(hypothesis)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item):
        """Classify the item before any plugin's ``runtest`` wraps its
        function, and overdub a unittest test's ``setUp``, method and
        ``tearDown`` (``TestCaseFunction.runtest`` installs ``item.obj`` on
        the instance as the test method)."""
        if not isinstance(item, pytest.Function):
            self.not_overdubbed[item.nodeid] = f"not a test function ({type(item).__name__})"
            yield
            return
        if _is_async(item.obj):
            self._async_items.add(item.nodeid)
            self.not_overdubbed[item.nodeid] = "async (runs plainly)"
            yield
            return
        testcase = _unittest_case(item)
        if testcase is None:
            yield          # pytest_pyfunc_call below overdubs the call
            return
        method = item.obj
        installed = {}
        for name in ("setUp", "tearDown"):
            installed[name] = self._overdubbing(item.nodeid, getattr(testcase, name))
            setattr(testcase, name, installed[name])
        item.obj = self._overdubbing(item.nodeid, method)
        try:
            yield
        finally:
            item.obj = method
            for name, wrapper in installed.items():
                if vars(testcase).get(name) is wrapper:
                    delattr(testcase, name)

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function):
        """Have pytest call the test function through ``overdub``: the
        innermost wrapper, so that ``item.obj`` is what will be called."""
        if pyfuncitem.nodeid in self._async_items:
            yield
            return
        function = pyfuncitem.obj
        pyfuncitem.obj = self._overdubbing(pyfuncitem.nodeid, function)
        try:
            yield
        finally:
            pyfuncitem.obj = function

    def _overdubbing(self, nodeid: str, function: Callable[..., Any]) -> Callable[..., Any]:
        """A stand-in for ``function`` that runs it overdubbed, carrying
        unittest's skip and expected-failure marks."""
        import cassette
        ctx = self.ctx
        ran = self.overdubbed

        if self.count_escapes:
            def run_overdubbed(*args, **kwargs):
                __tracebackhide__ = True
                ran[nodeid] = None
                with cassette.count_escapes() as escapes:
                    try:
                        return cassette.overdub(ctx, function, *args, **kwargs)
                    finally:
                        self._note_escapes(nodeid, escapes)
        else:
            def run_overdubbed(*args, **kwargs):
                __tracebackhide__ = True
                ran[nodeid] = None
                return cassette.overdub(ctx, function, *args, **kwargs)

        for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
            try:
                setattr(run_overdubbed, attribute, getattr(function, attribute))
            except (AttributeError, TypeError):
                pass
        for mark in _UNITTEST_MARKS:
            if hasattr(function, mark):
                setattr(run_overdubbed, mark, getattr(function, mark))
        return run_overdubbed

    def _note_escapes(self, nodeid: str, escapes: Any) -> None:
        if escapes.total:
            self.escapes_per_test[nodeid] += escapes.total
            self.escaping_code.update(escapes.frames)

    # -- reporting -----------------------------------------------------------

    def summary_lines(self) -> list[str]:
        """What the terminal summary prints (also useful to a test)."""
        ran = len(self.overdubbed)
        line = f"{ran} test{'s' if ran != 1 else ''} ran overdubbed by {self.spec}"
        operations = getattr(self.ctx.metadata, "operations", None)
        if isinstance(self.ctx, _builtin_classes()["Count"]) and operations is not None:
            line += f" ({operations} operations counted)"
        if self.not_overdubbed:
            reasons = collections.Counter(self.not_overdubbed.values())
            line += (f"; {len(self.not_overdubbed)} not overdubbed: "
                     + ", ".join(f"{count} {why}" for why, count in sorted(reasons.items())))
        lines = [line]
        if self.count_escapes:
            total = sum(self.escapes_per_test.values())
            line = f"{total} escape{'s' if total != 1 else ''}"
            if total:
                worst = self.escapes_per_test.most_common(_WORST_SHOWN)
                tests = len(self.escapes_per_test)
                line += (f" in {tests} test{'s' if tests != 1 else ''}; most in "
                         + ", ".join(f"{nodeid} ({count})" for nodeid, count in worst))
            lines.append(line)
            for where, count in self.escaping_code.most_common(_WORST_SHOWN):
                lines.append(f"  x{count}: {where}")
        return lines

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_sep("-", "cassette")
        for line in self.summary_lines():
            terminalreporter.write_line(f"cassette: {line}" if not line.startswith(" ") else line)


#: The Hypothesis profile an overdubbed session loads.
HYPOTHESIS_PROFILE = "cassette-overdubbed"


def _load_profile_without_time_limits(hypothesis: Any) -> None:
    settings, too_slow = hypothesis.settings, hypothesis.HealthCheck.too_slow
    current = settings.default
    suppressed = tuple(current.suppress_health_check)
    settings.register_profile(HYPOTHESIS_PROFILE, settings(
        current, deadline=None,
        suppress_health_check=suppressed + ((too_slow,) if too_slow not in suppressed else ())))
    settings.load_profile(HYPOTHESIS_PROFILE)


# -- the built-in contexts, made when first asked for (importing this module
# must not import cassette: the plugin is loaded by every pytest run)

class _Tally:
    """The metadata of :class:`Count`: ``operations`` seen so far."""

    __slots__ = ("operations",)

    def __init__(self) -> None:
        self.operations = 0

    def __repr__(self) -> str:
        return f"Tally(operations={self.operations})"


@functools.cache
def _builtin_classes() -> dict[str, Any]:
    import cassette

    class Noop(cassette.Context):
        """A context that defines nothing: overdubbing must change nothing."""

        __qualname__ = "Noop"

    class Count(cassette.Context):
        """A catch-all ``prehook`` counting every operation in
        ``metadata.operations``; made with no arguments, it makes its own
        :class:`Tally`."""

        __qualname__ = "Count"

        def __init__(self, *, metadata: Any = None, **kwargs: Any) -> None:
            super().__init__(metadata=_Tally() if metadata is None else metadata, **kwargs)

        def prehook(self, f, /, *args, **kwargs):
            self.metadata.operations += 1

    return {"Noop": Noop, "Count": Count, "Tally": _Tally}


def __getattr__(name: str) -> Any:
    """``Noop``, ``Count`` and ``Tally``, made on first use (they need cassette)."""
    if name in ("Noop", "Count", "Tally"):
        return _builtin_classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
