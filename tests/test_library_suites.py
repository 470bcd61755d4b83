"""reference §3.4 on other libraries' own test suites, test by test.

For each library whose wheel ships its tests (networkx, sympy, toolz,
simplejson, mpmath, pyflakes; the ``test`` extra installs them), a subset of
its suite runs through pytest in a subprocess plainly, then with every test
overdubbed by the project's pytest plugin under ``--cassette noop`` (a
context that defines nothing) and ``--cassette count`` (a catch-all
prehook): every test that passes plainly must pass overdubbed, except those
``library_suites.KNOWN_DIFFERENCES`` names with the reason.  The harness is
``tests/library_suites.py`` (also a command line: a table per library and
context, the nine libraries of issue 35, escapes).

The default subsets take a few seconds each plainly;
``CASSETTE_LIBRARY_SUITES=full`` runs the longer ones (minutes).
"""

import importlib.util
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import library_suites as suites  # noqa: E402

FULL = os.environ.get("CASSETTE_LIBRARY_SUITES", "") == "full"

#: A run taking longer than this is a hang, not a slow test.
TIMEOUT = 3600 if FULL else 600


def targets(name):
    library = suites.LIBRARIES[name]
    return library.full if FULL else library.default


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("library-suites")


_plain_runs = {}


def plain_run(name, scratch):
    """The plain run of ``name``'s subset, once per session: the oracle."""
    if name not in _plain_runs:
        module = name.replace("-", "_")
        assert importlib.util.find_spec(module) is not None, (
            f"{name} is not installed: the test extra installs it")
        workdir = scratch / name
        workdir.mkdir(exist_ok=True)
        run = suites.run_pytest(targets(name), cwd=workdir, label="plain", timeout=TIMEOUT,
                                options=suites.LIBRARIES[name].options)
        assert run.passed, f"{name}: no test passed plainly:\n{run.output[-3000:]}"
        _plain_runs[name] = run
    return _plain_runs[name]


@pytest.mark.parametrize("context", suites.CONTEXTS)
@pytest.mark.parametrize("name", suites.WHEEL_LIBRARIES)
def test_what_passes_plainly_passes_overdubbed(name, context, scratch):
    plain = plain_run(name, scratch)
    workdir = scratch / name
    dubbed = suites.run_pytest(targets(name), context=context, cwd=workdir, label=context,
                               timeout=TIMEOUT, options=suites.LIBRARIES[name].options)
    lost = suites.unexplained(name, suites.lost_tests(plain, dubbed))
    assert not lost, (
        f"{len(lost)} test(s) of {name} pass plainly but not overdubbed by {context}:\n"
        + "\n".join(f"--- {test}\n{text}" for test, text in lost.items()))
    # The run was overdubbed: the plugin says every test whose code ran did.
    assert dubbed.overdubbed is not None, dubbed.output[-3000:]
    ran = {test for test, outcome in dubbed.outcomes.items() if outcome != "skipped"}
    assert dubbed.overdubbed >= len(ran & plain.passed) > 0, dubbed.output[-3000:]


def test_known_differences_name_real_tests():
    """Each documented exception names a library of the harness and says why."""
    for (name, test), reason in suites.KNOWN_DIFFERENCES.items():
        assert name in suites.LIBRARIES, name
        assert "::" in test and len(reason) > 40, (test, reason)


def test_the_junit_reader(tmp_path):
    report = tmp_path / "junit.xml"
    report.write_text(
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">'
        '<testcase classname="pkg.mod" name="test_ok" time="0.1"/>'
        '<testcase classname="pkg.mod.Case" name="test_bad" time="0.1">'
        '<failure message="assert 1 == 2">trace line</failure></testcase>'
        '<testcase classname="pkg.mod" name="test_skip"><skipped message="no"/></testcase>'
        '<testcase classname="pkg.mod" name="test_teardown"/>'
        '<testcase classname="pkg.mod" name="test_teardown"><error message="boom"/></testcase>'
        '</testsuite></testsuites>')
    outcomes, failures = suites.read_junit(report)
    assert outcomes == {"pkg.mod::test_ok": "passed", "pkg.mod.Case::test_bad": "failed",
                        "pkg.mod::test_skip": "skipped", "pkg.mod::test_teardown": "failed"}
    assert failures == {"pkg.mod.Case::test_bad": "assert 1 == 2\ntrace line",
                        "pkg.mod::test_teardown": "boom"}
    plain = suites.Run(dict(outcomes, **{"pkg.mod::test_bad2": "passed"}), {}, 0, 0, 0, "")
    plain.outcomes["pkg.mod.Case::test_bad"] = "passed"
    lost = suites.lost_tests(plain, suites.Run(outcomes, failures, 0, 0, 0, ""))
    assert lost == {"pkg.mod.Case::test_bad": "assert 1 == 2\ntrace line",
                    "pkg.mod::test_bad2": "not reported"}
