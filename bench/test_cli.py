"""What the command line costs: the bench workloads run as scripts.

Each workload of ``bench/workloads.py`` becomes a script that builds it,
calls it once (warm-up: imports, first-call rewriting), then calls it
``REPEAT`` times (once), timing that itself with ``time.perf_counter``.  The
script runs in a fresh process under each variant:

``plain``                   ``python script.py``
``cProfile``                ``python -m cProfile -o FILE script.py``
``pyinstrument``            ``python -m pyinstrument -o FILE script.py`` (sampling; when installed)
``cassette-profile``        ``python -m cassette profile -o FILE script.py`` (with the operation mix)
``cassette-profile-no-ops`` ``python -m cassette profile --no-ops -o FILE script.py``
``trace-trackcalls``        ``python -m trace --trackcalls script.py`` (report to /dev/null)
``cassette-trace-json``     ``python -m cassette trace --format json -o FILE script.py``

pytest-benchmark times the whole process (what a user waits for, start-up
included); the script's own timing of the ``REPEAT`` calls — the overhead
once everything is warm — is recorded in ``extra_info`` as
``inner_median``/``inner_min`` over the rounds, and ``bench/report.py``
reads those for this suite ("The command line").  Every variant's observed
result must equal the plain run's.
"""

import importlib.util
import json
import os
import statistics
import subprocess
import sys
import textwrap

import pytest

from workloads import WORKLOAD_NAMES

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPEAT = 1
ROUNDS = 2

VARIANTS = {
    "plain": [],
    "cProfile": ["-m", "cProfile", "-o", "{report}"],
    "pyinstrument": ["-m", "pyinstrument", "-o", "{report}"],
    "cassette-profile": ["-m", "cassette", "profile", "-o", "{report}"],
    "cassette-profile-no-ops": ["-m", "cassette", "profile", "--no-ops", "-o", "{report}"],
    "trace-trackcalls": ["-m", "trace", "--trackcalls"],
    "cassette-trace-json": ["-m", "cassette", "trace", "--format", "json", "-o", "{report}"],
}

SCRIPT = """
    import sys, time
    sys.path.insert(0, {bench_dir!r})
    import workloads

    workload = workloads.BUILDERS[{name!r}]()
    result = workload.func(*workload.args)
    start = time.perf_counter()
    for _ in range({repeat}):
        result = workload.func(*workload.args)
    elapsed = time.perf_counter() - start
    with open({outcome!r}, "w") as file:
        file.write(repr((elapsed, repr(workload.observe(result)))))
"""


def run_script(tmp_path, name, variant):
    """Run the workload's script under ``variant``; returns (inner seconds,
    observed result)."""
    outcome = tmp_path / f"{name}-{variant}.outcome"
    script = tmp_path / f"bench_{name}.py"
    script.write_text(textwrap.dedent(SCRIPT.format(
        bench_dir=BENCH_DIR, name=name, repeat=REPEAT, outcome=str(outcome))))
    report = tmp_path / f"{name}-{variant}.report"
    args = [a.format(report=report) for a in VARIANTS[variant]]
    subprocess.run([sys.executable, *args, str(script)], cwd=tmp_path, check=True,
                   stdout=subprocess.DEVNULL, env=dict(os.environ))
    elapsed, observed = eval(outcome.read_text())      # written by the script above
    return elapsed, observed


@pytest.fixture(scope="module")
def plain_outcomes():
    return {}


@pytest.mark.parametrize("workload,variant", [
    pytest.param(w, v, id=f"{w}-{v}") for w in WORKLOAD_NAMES for v in VARIANTS])
def test_cli(benchmark, tmp_path, plain_outcomes, workload, variant):
    if variant == "pyinstrument" and importlib.util.find_spec("pyinstrument") is None:
        pytest.skip("pyinstrument is not installed (the bench extra has it)")
    benchmark.group = f"cli: {workload}"
    benchmark.extra_info.update(workload=workload, variant=variant, suite="cli")
    if workload not in plain_outcomes:
        plain_outcomes[workload] = run_script(tmp_path, workload, "plain")[1]
    inner = []

    def once():
        elapsed, observed = run_script(tmp_path, workload, variant)
        assert observed == plain_outcomes[workload], (
            f"{workload} [{variant}] observed something other than the plain run")
        inner.append(elapsed)

    benchmark.pedantic(once, rounds=ROUNDS, iterations=1)
    benchmark.extra_info.update(inner_median=statistics.median(inner), inner_min=min(inner),
                                inner_mean=statistics.fmean(inner), repeat=REPEAT)


def test_variants_named_in_report():
    """bench/report.py titles this suite's table."""
    import report
    assert "cli" in report.SUITE_TITLES
    json.dumps(VARIANTS)
