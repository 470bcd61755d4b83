"""The pytest plugin (``cassette/pytest_plugin.py``, docs/testing.md).

A small suite of every kind of test pytest runs — functions, methods,
parametrized tests, fixtures, ``pytest.raises``, a strict xfail, a failing
test, a skip, ``unittest.TestCase`` tests with ``setUp``/``tearDown``,
``unittest.skip``, ``expectedFailure`` and a failing subtest, an async test,
a pickle round trip — runs in a subprocess plainly and with ``--cassette``;
every test's outcome must be the plain run's, the summary must count what
ran overdubbed, a context's prehook must have seen the operations of the
tests' code (and not of the fixtures), and the operation and escape counts
must equal what ``cassette.overdub`` and ``cassette.count_escapes`` report
for the same test functions in this process.
"""

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

import cassette
import cassette.pytest_plugin as plugin
from cassette.entry import IMPLEMENTATION

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from library_suites import read_junit  # noqa: E402

SAMPLE_TESTS = '''
import pickle
import unittest

import pytest


def helper(x):
    return 2 * x


@pytest.fixture
def numbers():
    helper(100)                  # a fixture runs plainly: no prehook sees this
    return [3, 1, 2]


def test_function(numbers):
    assert sorted(numbers) == [1, 2, 3]


@pytest.mark.parametrize("n, expected", [(1, 2), (2, 4), (3, 7)])
def test_parametrized(n, expected):
    assert helper(n) == expected


class TestMethods:
    def test_method(self):
        assert helper(5) == 10

    def test_raises(self):
        with pytest.raises(ZeroDivisionError):
            helper(1) / 0


@pytest.mark.xfail(reason="helper doubles", strict=True)
def test_xfail():
    assert helper(7) == 15


def test_fails():
    assert helper(8) == 17


@pytest.mark.skip(reason="never runs")
def test_skipped():
    helper(1000)


async def test_async():
    helper(2000)


def test_arith():
    if helper(3) + 1 != 7:       # no assert: pytest rewrites none here
        raise AssertionError


class Case(unittest.TestCase):
    def setUp(self):
        self.value = helper(21)

    def tearDown(self):
        helper(22)

    def test_value(self):
        self.assertEqual(self.value, 42)

    @unittest.skip("never runs")
    def test_skip(self):
        helper(3000)

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(helper(9), 19)

    def test_subtests(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(helper(i), 4)


def remake(x):
    return Thing(x)


class Thing:
    def __init__(self, x):
        self.x = x

    def __reduce__(self):
        return (remake, (self.x,))


def test_pickle():
    if pickle.loads(pickle.dumps(Thing(3))).x != 3:
        raise AssertionError
'''

SAMPLE_CONTEXTS = '''
import cassette

SEEN = []


class Recording(cassette.Context):
    """Records the argument of every call of a function named helper."""

    def prehook(self, f, /, *args, **kwargs):
        if getattr(f, "__name__", None) == "helper":
            SEEN.append(args[0])


def make_recording():
    return Recording()


class Broken(cassette.Context):
    def __init__(self):
        raise RuntimeError("no way")


NOT_A_CONTEXT = 3
'''

SAMPLE_CONFTEST = '''
import json
import os
import sys


def pytest_sessionfinish(session):
    contexts = sys.modules.get("sample_contexts")
    path = os.environ.get("SAMPLE_RECORD")
    if contexts is not None and path:
        with open(path, "w") as out:
            json.dump(contexts.SEEN, out)
'''

#: The arguments of helper() in the tests' own code that runs (the skipped
#: and async tests' and the fixture's excluded; setUp and tearDown included).
HELPER_CALLS_OVERDUBBED = sorted(
    [1, 2, 3, 5, 1, 7, 8, 3]                # functions and methods
    + [21, 22] * 3                          # setUp/tearDown of the 3 TestCase tests run
    + [9, 0, 1, 2])                         # expected failure, subtests

#: Tests whose code runs overdubbed: the 16 but the two skipped ones and the
#: async one (unittest's skip is decided before setUp runs).
RAN_OVERDUBBED = 13


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    root = tmp_path_factory.mktemp("plugin-sample")
    (root / "test_sample.py").write_text(SAMPLE_TESTS)
    (root / "sample_contexts.py").write_text(SAMPLE_CONTEXTS)
    (root / "conftest.py").write_text(SAMPLE_CONFTEST)
    (root / "pytest.ini").write_text("[pytest]\n")
    return root


def run_pytest(root, *args, env=None):
    """Run pytest on the sample in a subprocess: (outcomes, output, status).
    A variable that *env* maps to None is left out of the child's environment."""
    junit = root / "junit.xml"
    if junit.exists():
        junit.unlink()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-c", str(root / "pytest.ini"),
         "--rootdir", str(root), "--junitxml", str(junit), *args],
        cwd=root, capture_output=True, text=True,
        env={key: value
             for key, value in {**os.environ, "PYTHONPATH": str(root), **(env or {})}.items()
             if value is not None})
    outcomes = read_junit(junit)[0] if junit.exists() else {}
    return outcomes, done.stdout + done.stderr, done.returncode


@pytest.fixture(scope="module")
def plain(sample):
    return run_pytest(sample, "test_sample.py")


def summary(output):
    lines = [line for line in output.splitlines() if line.startswith("cassette: ")]
    assert lines, output
    return lines


def test_the_plain_run_is_what_the_sample_says(plain):
    outcomes, output, status = plain
    assert status == 1, output
    assert outcomes == {
        "test_sample::test_function": "passed",
        "test_sample::test_parametrized[1-2]": "passed",
        "test_sample::test_parametrized[2-4]": "passed",
        "test_sample::test_parametrized[3-7]": "failed",
        "test_sample.TestMethods::test_method": "passed",
        "test_sample.TestMethods::test_raises": "passed",
        "test_sample::test_xfail": "skipped",
        "test_sample::test_fails": "failed",
        "test_sample::test_skipped": "skipped",
        "test_sample::test_async": "failed",        # pytest runs no coroutine by itself
        "test_sample::test_arith": "passed",
        "test_sample.Case::test_value": "passed",
        "test_sample.Case::test_skip": "skipped",
        "test_sample.Case::test_expected_failure": "skipped",
        "test_sample.Case::test_subtests": "failed",
        "test_sample::test_pickle": "passed",
    }
    assert not [line for line in output.splitlines() if line.startswith("cassette")], output


@pytest.mark.parametrize("context", ["noop", "count"])
def test_outcomes_and_summary_under_a_builtin_context(sample, plain, context):
    outcomes, output, status = run_pytest(sample, "--cassette", context, "test_sample.py")
    assert (outcomes, status) == (plain[0], plain[2]), output
    first = summary(output)[0]
    assert first.startswith(f"cassette: {RAN_OVERDUBBED} tests ran overdubbed by {context}"), first
    assert first.endswith("; 1 not overdubbed: 1 async (runs plainly)"), first
    assert ("operations counted" in first) == (context == "count"), first


@pytest.mark.parametrize("spec", ["sample_contexts:Recording", "sample_contexts:make_recording"])
def test_the_contexts_prehook_sees_the_tests_operations(sample, plain, spec, tmp_path):
    record = tmp_path / "seen.json"
    outcomes, output, status = run_pytest(sample, "--cassette", spec, "test_sample.py",
                                          env={"SAMPLE_RECORD": str(record)})
    assert (outcomes, status) == (plain[0], plain[2]), output
    assert sorted(json.loads(record.read_text())) == HELPER_CALLS_OVERDUBBED
    assert summary(output)[0].startswith(f"cassette: {RAN_OVERDUBBED} tests ran overdubbed by {spec}")


def load_sample_in_this_process(sample):
    spec = importlib.util.spec_from_file_location("test_sample", sample / "test_sample.py")
    module = importlib.util.module_from_spec(spec)
    saved = sys.modules.get("test_sample")
    sys.modules["test_sample"] = module      # pickle finds remake by this name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop("test_sample", None)
        raise
    return module, saved


def test_operation_and_escape_counts_are_overdubs(sample):
    """The count context's total and the escape counts the summary gives are
    what overdubbing the same two test functions here reports."""
    _, output, status = run_pytest(sample, "--cassette", "count", "--cassette-escapes",
                                   "test_sample.py", "-k", "test_arith or test_pickle")
    assert status == 0, output
    module, saved = load_sample_in_this_process(sample)
    try:
        ctx = plugin.Count()
        with cassette.count_escapes() as escapes:
            cassette.overdub(ctx, module.test_arith)
            cassette.overdub(ctx, module.test_pickle)
        per_test = {}
        for name in ("test_arith", "test_pickle"):
            with cassette.count_escapes() as one:
                cassette.overdub(plugin.Count(), getattr(module, name))
            per_test[name] = one.total
    finally:
        if saved is None:
            sys.modules.pop("test_sample", None)
        else:
            sys.modules["test_sample"] = saved
    assert ctx.metadata.operations > 0
    lines = summary(output)
    assert lines[0] == (f"cassette: 2 tests ran overdubbed by count "
                        f"({ctx.metadata.operations} operations counted)"), lines
    assert re.match(rf"cassette: {escapes.total} escapes?\b", lines[1]), (lines, escapes.report())
    for name, count in per_test.items():
        if count:
            assert f"test_sample.py::{name} ({count})" in lines[1], lines
    if IMPLEMENTATION == "python":
        # No routing: pickle calls remake from C, un-rewritten.
        assert escapes.total > 0


BAD_CONTEXTS = [
    ("nope", "--cassette nope: expected a built-in context (noop, count) or MODULE:NAME"),
    ("sample_contexts:", "--cassette sample_contexts:: expected a built-in context "
                         "(noop, count) or MODULE:NAME"),
    ("no_such_module:Context", "--cassette no_such_module:Context: cannot import "
                               "no_such_module: ModuleNotFoundError: No module named "
                               "'no_such_module'"),
    ("sample_contexts:Missing", "--cassette sample_contexts:Missing: sample_contexts has "
                                "no attribute Missing"),
    ("sample_contexts:Broken", "--cassette sample_contexts:Broken: Broken() raised "
                               "RuntimeError: no way"),
    ("sample_contexts:NOT_A_CONTEXT", "--cassette sample_contexts:NOT_A_CONTEXT: "
                                      "NOT_A_CONTEXT (int) is not a cassette.Context "
                                      "subclass, a factory or a context"),
    ("sample_contexts:SEEN.copy", "--cassette sample_contexts:SEEN.copy: SEEN.copy() "
                                  "returned list, not a cassette.Context"),
]


@pytest.mark.parametrize("spec, message", BAD_CONTEXTS, ids=[spec for spec, _ in BAD_CONTEXTS])
def test_a_bad_context_is_a_usage_error(sample, monkeypatch, spec, message):
    monkeypatch.syspath_prepend(str(sample))
    monkeypatch.delitem(sys.modules, "sample_contexts", raising=False)
    with pytest.raises(pytest.UsageError) as raised:
        plugin.make_context(spec)
    assert str(raised.value) == message


@pytest.mark.parametrize("spec, message", [BAD_CONTEXTS[2], BAD_CONTEXTS[4]],
                         ids=["import", "constructor"])
def test_pytest_reports_a_bad_context_in_one_line(sample, spec, message):
    _, output, status = run_pytest(sample, "--cassette", spec, "test_sample.py")
    assert status == pytest.ExitCode.USAGE_ERROR, output
    assert output.strip() == f"ERROR: {message}", output


def test_escapes_need_a_context(sample):
    _, output, status = run_pytest(sample, "--cassette-escapes", "test_sample.py")
    assert status == pytest.ExitCode.USAGE_ERROR, output
    assert output.strip() == "ERROR: --cassette-escapes needs --cassette CONTEXT", output


@pytest.mark.parametrize("name", ["cassette", "cassette.pytest_plugin"])
def test_loaded_by_name_when_autoloading_is_off(sample, plain, name):
    outcomes, output, status = run_pytest(sample, "-p", name, "--cassette", "noop",
                                          "test_sample.py",
                                          env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert (outcomes, status) == (plain[0], plain[2]), output
    assert summary(output)[0].startswith(f"cassette: {RAN_OVERDUBBED} tests ran overdubbed")


HYPOTHESIS_CONFTEST = """
from datetime import timedelta
from hypothesis import settings

def pytest_configure(config):
    settings.register_profile("strict", deadline=timedelta(milliseconds=1), max_examples=3,
                              database=None)
    settings.load_profile("strict")
"""

HYPOTHESIS_TESTS = """
import time
from datetime import timedelta
from hypothesis import given, settings, strategies as st

@given(st.none())
def test_slower_than_the_profile_allows(n):   # one example: nothing to shrink
    time.sleep(0.005)

@settings(deadline=timedelta(milliseconds=1), max_examples=3, database=None)
@given(st.none())
def test_slower_than_its_own_settings_allow(n):
    time.sleep(0.005)
"""


HYPOTHESIS_TESTS_ALONE = """
import time
from hypothesis import given, settings, strategies as st

@settings(max_examples=2, database=None)
@given(st.none())
def test_slower_than_the_profile_allows(n):
    time.sleep(0.25)             # the default profile's deadline: 200 ms

@settings(deadline=200, max_examples=2, database=None)
@given(st.none())
def test_slower_than_its_own_settings_allow(n):
    time.sleep(0.25)
"""


def not_in_ci():
    """The environment without what makes Hypothesis load its ``ci``
    profile (no deadline) in place of the default one (200 ms)."""
    from hypothesis import _settings
    markers = getattr(_settings, "_CI_VARS", {"CI": None})
    return {key: None for key in markers if key in os.environ}


@pytest.mark.parametrize("where", ["conftest", "test module"])
def test_hypothesis_time_limits_are_off_but_a_tests_own_settings_rule(tmp_path, where):
    """Overdubbing is slower; a Hypothesis deadline (a conftest profile's
    1 ms, or the default profile's 200 ms when no conftest imports
    Hypothesis: python-dateutil's suite) is a limit of speed, not of what
    the test does."""
    pytest.importorskip("hypothesis")
    if where == "conftest":
        (tmp_path / "conftest.py").write_text(HYPOTHESIS_CONFTEST)
        (tmp_path / "test_timed.py").write_text(HYPOTHESIS_TESTS)
    else:
        (tmp_path / "test_timed.py").write_text(HYPOTHESIS_TESTS_ALONE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    slow, own = "test_timed::test_slower_than_the_profile_allows", \
        "test_timed::test_slower_than_its_own_settings_allow"
    outside_ci = not_in_ci()
    outcomes, output, _ = run_pytest(tmp_path, "test_timed.py", env=outside_ci)
    assert outcomes == {slow: "failed", own: "failed"}, output
    assert "DeadlineExceeded" in output, output
    outcomes, output, _ = run_pytest(tmp_path, "--cassette", "noop", "test_timed.py",
                                     env=outside_ci)
    assert outcomes == {slow: "passed", own: "failed"}, output


def test_without_the_option_the_plugin_does_nothing(pytestconfig, tmp_path):
    """This suite runs with the plugin loaded: it registered nothing else,
    and in a run without ``--cassette`` a test runs as it is."""
    assert pytestconfig.pluginmanager.get_plugin("cassette") is plugin
    assert pytestconfig.pluginmanager.get_plugin(plugin.SESSION_PLUGIN_NAME) is None
    assert plugin.active_context(pytestconfig) is None
    (tmp_path / "test_as_is.py").write_text(textwrap.dedent("""
        import sys

        def test_called_as_it_is(request):
            assert request.node.obj is test_called_as_it_is
            assert sys._getframe().f_code is test_called_as_it_is.__code__
            assert sys.getprofile() is None
    """))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    outcomes, output, status = run_pytest(tmp_path, "-p", "cassette", "test_as_is.py")
    assert (outcomes, status) == ({"test_as_is::test_called_as_it_is": "passed"}, 0), output
    assert "cassette.pytest_plugin" in output or "cassette-0.1.0" in output


def test_the_builtin_contexts():
    assert plugin.Noop.__module__ == "cassette.pytest_plugin"
    assert issubclass(plugin.Noop, cassette.Context) and issubclass(plugin.Count, cassette.Context)

    def program(xs):
        return sum(x * x for x in xs)

    ctx = plugin.Count()
    assert cassette.overdub(ctx, program, [1, 2, 3]) == program([1, 2, 3])
    assert ctx.metadata.operations > 0
    assert plugin.make_context("noop").__class__ is plugin.Noop
    with pytest.raises(pytest.UsageError, match="^--cassette x: expected"):
        plugin.make_context("x")
