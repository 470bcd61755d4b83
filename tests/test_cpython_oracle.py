"""reference §3.4: CPython's own regression tests pass overdubbed.

For each module of :data:`cpython_oracle.MODULES`, every test that passes
plainly (in this process) must also pass with every test method overdubbed,
by a context that defines nothing, by one whose catch-all prehook touches
every operation and by a context with tagging enabled.  See ``tests/cpython_oracle.py`` for the harness.
"""

import functools
import os
import sys

import pytest

from cassette.entry import IMPLEMENTATION

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpython_oracle as oracle  # noqa: E402


@functools.lru_cache(maxsize=None)
def plain_outcome(module_name):
    """The oracle: the module's tests run plainly, once per session."""
    return oracle.run_module(module_name)


@pytest.mark.parametrize("module_name", oracle.MODULES)
def test_plain_run_passes_something(module_name):
    plain = plain_outcome(module_name)
    assert plain.passing, f"no test of {module_name} passes plainly: {plain.problems}"


@pytest.mark.parametrize("module_name", oracle.MODULES)
def test_nothing_context(module_name):
    """Every test passes overdubbed and, with the Cython core, no frame of
    any test escapes (reference §3.3; the pure-Python runtime has no routing)."""
    plain = plain_outcome(module_name)
    # (Counting escapes makes a run several times slower: only where the
    # count is asserted.)
    dubbed = oracle.run_module(module_name, oracle.Nothing(),
                               count_escapes=IMPLEMENTATION == "cython")
    lost = oracle.regressions(plain, dubbed)
    assert not lost, oracle.describe(module_name, "Nothing", lost)
    if IMPLEMENTATION == "cython":
        assert dubbed.escapes.total == 0, dubbed.escapes.report()


@pytest.mark.parametrize("module_name", oracle.MODULES)
def test_touching_context(module_name):
    plain = plain_outcome(module_name)
    ctx = oracle.touching()
    dubbed = oracle.run_module(module_name, ctx)
    assert ctx.metadata.count > 0, "the catch-all prehook saw no operation"
    lost = oracle.regressions(plain, dubbed)
    assert not lost, oracle.describe(module_name, "Touching", lost)


@pytest.mark.parametrize("module_name", oracle.MODULES)
def test_tagging_context(module_name):
    """reference §6: tagging machinery (propagation sites, the tagging fallback)
    changes nothing a program does when nothing is tagged."""
    plain = plain_outcome(module_name)
    dubbed = oracle.run_module(module_name, oracle.tagging())
    lost = oracle.regressions(plain, dubbed)
    assert not lost, oracle.describe(module_name, "Tagging", lost)
