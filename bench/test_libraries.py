"""The cost of overdubbing code people run: real-library workloads
(bench/libraries.py — the standard library and numpy, called as their users
call them), plain and overdubbed.

One benchmark per (workload, variant); the benchmarks of a workload share a
pytest-benchmark group.  Variants, as in test_overhead.py (whose contexts and
helpers are reused):

``plain``            the workload called directly;
``recursion-only``   ``cassette.overdub`` with NeverCtx: full recursion into
                     every callee, no handler ever matches;
``counting-prehook`` ``cassette.overdub`` with a catch-all ``prehook`` that
                     counts operations (``events_per_call`` in extra_info).

Every variant's result (the observed return value and what the call printed)
must equal the plain result, in a warm-up call (timed once, recorded as
``first_call_ms``) and in the measured rounds.  ``extra_info`` carries
``workload``, ``variant`` and ``suite = "libraries"``, so that
bench/report.py prints this suite's ratio table on its own.  Nothing here
asserts on timings.
"""


import pytest

import libraries
from test_overhead import VARIANT_FACTORIES, measure, observed

VARIANTS = ("plain", "recursion-only", "counting-prehook")
SUITE = "libraries"


class LibraryTable(dict):
    """Workloads by name, each built on first use (one that cannot be built
    fails its own benchmarks only)."""

    def __missing__(self, name):
        workload = self[name] = libraries.BUILDERS[name]()
        return workload


@pytest.fixture(scope="session")
def library_table():
    return LibraryTable()


@pytest.fixture(scope="session")
def library_plain_results():
    """The reference result of each workload (its plain call), computed on
    first use and kept for the session."""
    return {}


def plain_result(work, results):
    if work.name not in results:
        run, _ = VARIANT_FACTORIES["plain"](work.func, work.args)
        results[work.name] = observed(run, work)
    return results[work.name]


@pytest.mark.parametrize("workload,variant", [
    pytest.param(w, v, id=f"{w}-{v}") for w in libraries.WORKLOAD_NAMES for v in VARIANTS
])
def test_library(benchmark, library_table, library_plain_results, workload, variant):
    benchmark.group = "library: " + workload
    benchmark.extra_info.update(workload=workload, variant=variant, suite=SUITE)

    work = library_table[workload]
    expected = plain_result(work, library_plain_results)
    measure(benchmark, work, variant, expected)
