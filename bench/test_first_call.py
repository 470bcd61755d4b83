"""The first overdubbed call, cold and with the disk cache (see
``bench/first_call_workload.py`` for the workloads and what is measured).

One benchmark per (workload, mode), grouped by workload; modes ``plain``
(no cassette), ``cold`` (empty cache directory) and ``warm`` (a cache a
previous process populated).  Each round is a fresh interpreter; the time
recorded is the first call's time *as measured inside that process* (the
interpreter's start-up and imports are not part of it): a round advances a
virtual clock that pytest-benchmark reads, by the child's reported time.
Each mode's result must equal the plain one.  ``extra_info`` holds the
medians of the child reports: code objects rewritten, rewrite cost per code
object and per instruction, the plain ``bytecode`` round-trip per instruction
on the same code objects, the cost of a disk load, and the breakdown of the
first call.  ``python bench/report.py RUN.json`` prints them as a table.
"""

import pytest

import first_call_workload as fc

ROUNDS = 3


@pytest.fixture(scope="module")
def session():
    session = fc.Session()
    yield session
    session.close()


@pytest.fixture(scope="module")
def plain_digests():
    return {}


def virtual_clock():
    """A timer for pytest-benchmark that moves only when told to."""
    now = [0.0]

    def first_call_clock():
        return now[0]

    def advance(seconds):
        now[0] += seconds

    return first_call_clock, advance


@pytest.mark.parametrize("workload,mode", [
    pytest.param(w, m, id=f"{w}:{m}") for w in fc.WORKLOADS for m in fc.MODES
])
def test_first_call(benchmark, session, plain_digests, workload, mode):
    benchmark.group = f"first call: {workload}"
    benchmark.extra_info.update(first_call_workload=workload, first_call_mode=mode)
    reports = []
    clock, advance = virtual_clock()

    def one_process():
        report = session.measure(workload, mode)
        reports.append(report)
        advance(report["first_call_s"])

    if hasattr(benchmark, "_timer"):
        # pytest-benchmark times the target with this attribute; without it
        # (another version) the rounds time the whole child process.
        benchmark._timer = clock
    benchmark.pedantic(one_process, rounds=ROUNDS, iterations=1)

    if workload not in plain_digests:
        plain = reports[0] if mode == "plain" else session.measure(workload, "plain")
        plain_digests[workload] = plain["result_digest"]
    for report in reports:
        assert report["result_digest"] == plain_digests[workload], (
            f"{workload} [{mode}] computed something other than the plain call")
    if mode == "warm":
        for report in reports:
            assert report["disk"]["hits"] > 0, "a warm process found nothing in the disk cache"

    summary = fc.summarize(reports)[workload][mode]
    benchmark.extra_info.update({k: v for k, v in summary.items() if k != "runs"})
    benchmark.extra_info["disk"] = reports[-1].get("disk")
