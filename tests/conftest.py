"""Session setup of the test suite.

The disk cache of rewritten code (``cassette/diskcache.py``) goes to a
temporary directory for the whole session — and for every process the tests
start, which inherit the environment — never to the user's home directory;
it is deleted at the end.  ``tests/test_diskcache.py`` tests the default
location logic on its own.

On an interpreter built with ``Py_DEBUG`` (``python3.14d``: it has
``sys.gettotalrefcount``), numpy, scipy and pandas are not installed:
they publish binary wheels for release builds only (``tools/dev.py`` leaves
them out of a debug build's venv).  The tests needing them skip as they do
wherever those are missing (``pytest.importorskip``); here their skip
reason says why they are missing.
"""

import os
import shutil
import sys
import tempfile

import pytest

_CACHE_DIR = tempfile.mkdtemp(prefix="cassette-test-cache-")
os.environ["CASSETTE_CACHE_DIR"] = _CACHE_DIR
if "cassette.diskcache" in sys.modules:     # imported by a plugin already
    sys.modules["cassette.diskcache"].configure()

DEBUG_BUILD = hasattr(sys, "gettotalrefcount")
NO_DEBUG_WHEELS = ("numpy", "scipy", "pandas", "pydantic")
NO_DEBUG_WHEELS_REASON = (
    " (a Py_DEBUG interpreter: numpy, scipy, pandas and pydantic publish no wheels for "
    "its ABI, so they are not installed)")


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE_DIR, ignore_errors=True)


def pytest_report_header(config):
    if DEBUG_BUILD:
        return ["Py_DEBUG interpreter: sys.gettotalrefcount() = %d; tests needing %s skip"
                % (sys.gettotalrefcount(), ", ".join(NO_DEBUG_WHEELS))]
    return []


def _explain_missing_wheels(report):
    """Append why a library is missing to the reason of a skip for it."""
    if not (DEBUG_BUILD and report.skipped and isinstance(report.longrepr, tuple)):
        return
    path, line, reason = report.longrepr
    if any("'%s" % name in reason for name in NO_DEBUG_WHEELS):
        report.longrepr = (path, line, reason + NO_DEBUG_WHEELS_REASON)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _explain_missing_wheels(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _explain_missing_wheels(outcome.get_result())
