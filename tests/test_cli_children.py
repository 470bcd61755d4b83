"""Child processes under ``python -m cassette trace|profile`` (children.py):
followed with every start method, their reports merged into the parent's,
counts against independent ones; ``--no-children`` runs them plainly; a
worker ended by ``terminate()`` keeps its exit status."""

import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from cassette.cli import children
from cli_support import run, write

# A child made by Process, two by a ProcessPoolExecutor, two by a Pool (its
# workers ended by terminate(), as `with Pool()` ends them).  Pool.map's
# calls come from C, which the pure-Python runtime does not route (reference
# §3.3): the Pool's work is given with apply_async.
PROGRAM = """
    import concurrent.futures, multiprocessing, sys

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def work(queue):
        queue.put(fib(12))

    if __name__ == "__main__":
        # Should a run hang (seen once, 3.11, forkserver), say where before
        # the test's timeout does: the stacks go to stderr, which the test shows.
        import faulthandler
        faulthandler.dump_traceback_later(240, exit=True)
        context = multiprocessing.get_context(sys.argv[1])
        queue = context.Queue()
        child = context.Process(target=work, args=(queue,))
        child.start()
        first = queue.get()
        child.join()
        with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as pool:
            second = list(pool.map(fib, [7, 8, 9]))
        with context.Pool(2) as pool:
            third = [r.get() for r in [pool.apply_async(fib, (n,)) for n in (5, 6)]]
        print(first, second, third, child.exitcode, fib(4))
"""


def calls_of_fib(n):
    """How many calls ``fib(n)`` makes, itself included (counted plainly)."""
    return 1 if n < 2 else 1 + calls_of_fib(n - 1) + calls_of_fib(n - 2)


IN_CHILDREN = calls_of_fib(12) + sum(map(calls_of_fib, [7, 8, 9, 5, 6]))
IN_PARENT = calls_of_fib(4)
METHODS = [m for m in ("fork", "spawn", "forkserver")
           if m in multiprocessing.get_all_start_methods()]


def plain_output(tmp_path, script, *args):
    code, stdout, stderr = run([str(script), *args], tmp_path)
    assert code == 0, stderr
    return stdout


def profile_json(tmp_path, script, *args, options=()):
    out = tmp_path / "profile.json"
    code, stdout, stderr = run(["-m", "cassette", "profile", "--no-ops", *options,
                                "--format", "json", "-o", str(out), str(script), *args],
                               tmp_path)
    assert code == 0, stderr
    return json.loads(out.read_text()), stdout, stderr


def lanes(report):
    return [child["name"] for child in report["tree"]["children"]
            if child["name"].startswith("<process ")]


def calls(report, name):
    return sum(row["calls"] for row in report["functions"] if row["name"] == name)


def subtree_calls(tree, name):
    return ((tree["calls"] if tree["name"] == name else 0)
            + sum(subtree_calls(child, name) for child in tree["children"]))


@pytest.mark.parametrize("method", METHODS)
def test_a_profile_follows_every_child(tmp_path, method):
    script = write(tmp_path, "program.py", PROGRAM)
    report, stdout, stderr = profile_json(tmp_path, script, method)
    assert stdout == plain_output(tmp_path, script, method)
    assert calls(report, "fib") == IN_CHILDREN + IN_PARENT
    assert calls(report, "work") == 1
    processes = {re.match(r"<process (\d+)", lane).group(1) for lane in lanes(report)}
    # Process, two Pool workers, and the executor's workers: two, or under
    # spawn and forkserver as many as it started on demand.
    assert 4 <= len(processes) <= 5
    children_calls = sum(subtree_calls(child, "fib") for child in report["tree"]["children"]
                         if child["name"].startswith("<process "))
    assert children_calls == IN_CHILDREN
    assert "Traceback" not in stderr


@pytest.mark.parametrize("method", METHODS)
def test_no_children_leaves_them_plain(tmp_path, method):
    script = write(tmp_path, "program.py", PROGRAM)
    report, stdout, _ = profile_json(tmp_path, script, method, options=("--no-children",))
    assert stdout == plain_output(tmp_path, script, method)
    assert lanes(report) == []
    assert calls(report, "fib") == IN_PARENT


@pytest.mark.parametrize("method", METHODS[:1] + METHODS[-1:])
def test_a_trace_has_each_childs_lines(tmp_path, method):
    script = write(tmp_path, "program.py", PROGRAM)
    out = tmp_path / "trace.txt"
    code, stdout, stderr = run(["-m", "cassette", "trace", "--include", "*fib", "-o", str(out),
                                str(script), method], tmp_path)
    assert code == 0, stderr
    assert stdout == plain_output(tmp_path, script, method)
    lines = out.read_text().splitlines()
    in_children = [line for line in lines if line.startswith("[process ")]
    assert sum("fib(" in line for line in in_children) == IN_CHILDREN
    assert sum("fib(" in line for line in lines if line not in in_children) == IN_PARENT


def test_a_json_trace_stays_one_document(tmp_path):
    script = write(tmp_path, "program.py", PROGRAM)
    out = tmp_path / "trace.json"
    code, _, stderr = run(["-m", "cassette", "trace", "--format", "json", "--include", "*fib",
                           "-o", str(out), str(script), METHODS[0]], tmp_path)
    assert code == 0, stderr
    events = json.loads(out.read_text())
    calls_by_process = {}
    for event in events:
        if event["event"] == "call" and event["name"] == "fib":
            key = event.get("process")
            calls_by_process[key] = calls_by_process.get(key, 0) + 1
    assert calls_by_process.pop(None) == IN_PARENT
    assert sum(calls_by_process.values()) == IN_CHILDREN


TERMINATED = """
    import multiprocessing, sys, time

    def wait():
        time.sleep(60)

    if __name__ == "__main__":
        child = multiprocessing.get_context(sys.argv[1]).Process(target=wait)
        child.start()
        time.sleep(1.0)
        child.terminate()
        child.join()
        print(child.exitcode)
"""


@pytest.mark.parametrize("method", METHODS[:1] + METHODS[-1:])
def test_a_terminated_child_keeps_its_exit_status_and_its_report(tmp_path, method):
    script = write(tmp_path, "terminated.py", TERMINATED)
    report, stdout, _ = profile_json(tmp_path, script, method)
    assert stdout == plain_output(tmp_path, script, method)     # "-15"
    assert len(lanes(report)) == 1
    child = next(c for c in report["tree"]["children"] if c["name"].startswith("<process "))
    assert subtree_calls(child, "wait") == 1


# A followed child's SIGTERM runs a Python handler (its report); one that
# lands just before the child blocks in a lock's wait is handled only when
# the wait ends (an idle Pool worker's never did: CI hung 600 s, about 1 run
# in 200).  The race cannot be made to happen on purpose: a child whose
# handler lets the first SIGTERM pass stands for one that missed it.
LETS_THE_FIRST_PASS = """
import signal, sys, time
seen = []
def handler(signum, frame):
    seen.append(signum)
    if len(seen) == 2:
        sys.exit(7)
signal.signal(signal.SIGTERM, handler)
print("ready", flush=True)
while True:
    time.sleep(1)
"""


@pytest.mark.parametrize("marker_stays", [True, False])
def test_a_sigterm_is_sent_again_while_the_childs_marker_says_unhandled(tmp_path,
                                                                         marker_stays):
    marker = tmp_path / "child.sigterm"
    marker.touch()
    child = subprocess.Popen([sys.executable, "-c", LETS_THE_FIRST_PASS], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline() == "ready\n"
        os.kill(child.pid, signal.SIGTERM)
        if not marker_stays:            # its handler ran: nothing more is sent
            marker.unlink()
        children.resignal(child.pid, str(marker), child)
        status = child.wait(timeout=30 if marker_stays else 2)
    except subprocess.TimeoutExpired:
        status = None
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    assert status == (7 if marker_stays else None)
    deadline = time.monotonic() + 10
    while children._resignalling and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not children._resignalling and children._unhandled == {}


# A followed child whose program handles SIGTERM itself gets the signals
# the program sends, no more: its handler counts them until it is killed.
OWN_HANDLER = """
    import multiprocessing, os, signal, sys, time

    def count_signals(path, ready):
        def handler(signum, frame):
            with open(path, "a") as file:
                file.write("x")
        signal.signal(signal.SIGTERM, handler)
        ready.set()
        while True:
            time.sleep(0.05)

    if __name__ == "__main__":
        context = multiprocessing.get_context(sys.argv[1])
        ready = context.Event()
        path = os.path.abspath("signals.txt")
        child = context.Process(target=count_signals, args=(path, ready))
        child.start()
        ready.wait()
        child.terminate()
        time.sleep(2.0)
        child.kill()
        child.join()
        with open(path) as file:
            print(len(file.read()), child.exitcode)
"""


@pytest.mark.parametrize("method", METHODS[:1] + METHODS[-1:])
def test_a_child_with_its_own_sigterm_handler_gets_one_signal(tmp_path, method):
    script = write(tmp_path, "own.py", OWN_HANDLER)
    expected = plain_output(tmp_path, script, method)
    assert expected == "1 -9\n"
    (tmp_path / "signals.txt").unlink()
    report, stdout, _ = profile_json(tmp_path, script, method)
    assert stdout == expected
    assert len(lanes(report)) == 0          # (killed: no report, as with any SIGKILL)


def test_a_bare_fork_writes_one_report(tmp_path):
    """A child of os.fork() outside multiprocessing is not followed: it
    runs on muted, and the report is the parent's alone."""
    script = write(tmp_path, "forks.py", """
        import os
        def f(n):
            return n + 1
        pid = os.fork()
        if pid == 0:
            f(1)
        else:
            os.waitpid(pid, 0)
            print(f(2))
    """)
    code, stdout, stderr = run(["-m", "cassette", "profile", "--no-ops", str(script)], tmp_path)
    assert code == 0, stderr
    assert stdout.count("function calls in") == 1
    assert stdout.startswith(plain_output(tmp_path, script))
