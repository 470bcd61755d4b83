"""SPEC §3.4 beside other tools: with a ``sys.monitoring`` tool active,
under ``sys.settrace`` and ``sys.setprofile``, and under ``coverage run``,
the CPython oracle's modules and the real-library workloads give the same
results overdubbed as plainly — and nothing crashes.  Each tool runs in a
fresh interpreter (see ``tests/beside_tools.py``)."""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "beside_tools.py")

TOOLS = ["settrace", "setprofile"] + (["monitoring"] if hasattr(sys, "monitoring") else [])


def run_beside(command):
    done = subprocess.run(command, capture_output=True, text=True, cwd=HERE, timeout=1800)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("tool", TOOLS)
def test_oracles_beside_a_tool(tool):
    report = run_beside([sys.executable, SCRIPT, tool])
    assert report["lost"] == {}
    assert report["events"] > 0, "the tool saw nothing"


def test_oracles_under_coverage_run():
    pytest.importorskip("coverage")
    data = os.path.join(HERE, ".coverage.beside")
    try:
        report = run_beside([sys.executable, "-m", "coverage", "run", f"--data-file={data}",
                             SCRIPT, "none"])
    finally:
        if os.path.exists(data):
            os.remove(data)
    assert report["lost"] == {}
