"""reference §3.4 beside other tools: with a ``sys.monitoring`` tool or a
``sys.settrace`` function active (a ``sys.setprofile`` function is the
escape counter, beside the oracles' runs already), and under
``coverage run``,
the CPython oracle's modules and the real-library workloads give the same
results overdubbed as plainly — and nothing crashes.  Each set of tools
runs in a fresh interpreter (see ``tests/beside_tools.py``)."""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "beside_tools.py")

#: The set runs in an interpreter of its own: a tracer (which turns 3.11's
#: specializing interpreter off and makes it build line arrays) and, where
#: there is one, a monitoring tool (which leaves it on and instruments the
#: code instead), both at once, as a debugger beside a coverage tool would
#: be.  (One interpreter for both: each run replays the whole oracle, and ten
#: test runs share CI's half hour.)  A profiler is beside every overdubbed
#: run of the real-library oracle and (with the Cython core) of the CPython
#: oracle's nothing context already: ``count_escapes`` is a
#: ``sys.setprofile`` function.
TOOL_SETS = [["settrace", "monitoring"] if hasattr(sys, "monitoring") else ["settrace"]]


def run_beside(command):
    done = subprocess.run(command, capture_output=True, text=True, cwd=HERE, timeout=1800)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("tools", TOOL_SETS, ids="+".join)
def test_oracles_beside_tools(tools):
    report = run_beside([sys.executable, SCRIPT, *tools])
    assert report["lost"] == {}
    assert report["events"] > 0, "the tools saw nothing"


def test_oracles_under_coverage_run(tmp_path):
    report = run_beside([sys.executable, "-m", "coverage", "run",
                         f"--data-file={tmp_path / '.coverage'}", SCRIPT, "none"])
    assert report["lost"] == {}
