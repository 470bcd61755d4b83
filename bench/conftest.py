"""pytest configuration of the benchmark suite (see bench/README.md)."""

import importlib
import os
import sys

import pytest

import workloads


def cassette_implementation():
    """Which runtime cassette runs on: "cython" or "python" (as the library
    reports it), or a description of why that is unknown."""
    try:
        import cassette  # noqa: F401
    except Exception as exc:  # reported, never fatal here
        return f"unavailable ({type(exc).__name__}: {exc})"
    for name in ("cassette.entry", "cassette.overdub"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        implementation = getattr(module, "IMPLEMENTATION", None)
        if isinstance(implementation, str):
            return implementation
    return "unknown"


def pytest_benchmark_update_machine_info(config, machine_info):
    # Recorded in every --benchmark-json file, so that bench/report.py can
    # tell a Cython-core run from a pure-Python one.
    machine_info["cassette"] = {
        "implementation": cassette_implementation(),
        "CASSETTE_PURE_PYTHON": os.environ.get("CASSETTE_PURE_PYTHON", ""),
        "python": sys.version.split()[0],
    }


def pytest_report_header(config):
    return (f"cassette runtime: {cassette_implementation()} "
            f"(CASSETTE_PURE_PYTHON={os.environ.get('CASSETTE_PURE_PYTHON', '')!r})")


class WorkloadTable(dict):
    """Workloads by name, each built on first use (so that one workload that
    cannot be built fails its own benchmarks only)."""

    def __missing__(self, name):
        workload = self[name] = workloads.BUILDERS[name]()
        return workload


@pytest.fixture(scope="session")
def workload_table():
    return WorkloadTable()


@pytest.fixture(scope="session")
def plain_results():
    """The reference result of each workload (its plain call), computed on
    first use and kept for the session."""
    return {}
