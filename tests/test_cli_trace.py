"""``python -m cassette trace``: the call tree against independent facts.

The number of calls traced per function is ``sys.setprofile``'s; results
are what the functions compute (checked against the plain function); the
text layout of a small run is written out by hand; reprs never run the
program's code; a long run streams (bounded memory).
"""

import json
import re
import sys

import pytest

from cli_support import run, setprofile_calls, write

FIB = """
    import sys

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    print(fib(int(sys.argv[1])))
"""


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def trace_events(tmp_path, *args):
    out = tmp_path / "trace.json"
    code, stdout, stderr = run(["-m", "cassette", "trace", "--format", "json", "-o", str(out),
                                *args], tmp_path)
    return code, stdout, stderr, json.loads(out.read_text())


def test_calls_and_results(tmp_path):
    script = write(tmp_path, "fib.py", FIB)
    expected = setprofile_calls(script, tmp_path, "12")
    code, stdout, stderr, events = trace_events(tmp_path, str(script), "12")
    assert (code, stdout, stderr) == (0, f"{fib(12)}\n", "")
    assert events[0] == {"event": "start"}
    calls = [e for e in events if e["event"] == "call" and e["name"] == "fib"]
    assert len(calls) == expected["fib"] == 465
    assert {(e["file"], e["line"]) for e in calls} == {(str(script), 4)}
    # Pair calls and returns with a stack: each fib(n) returned fib(n).
    stack = []
    for event in events[1:]:
        if event["event"] == "call":
            stack.append(event)
        else:
            call = stack.pop()
            assert event["event"] == "return" and event["depth"] == call["depth"]
            if call["name"] == "fib":
                assert event["value"] == str(fib(int(call["args"][0])))
    assert stack == []


def test_text_layout(tmp_path):
    """fib(3) written out by hand: a call whose callees are shown opens a
    line and closes with ``name → value``; a call without shows on one line."""
    script = write(tmp_path, "fib.py", FIB)
    out = tmp_path / "trace.txt"
    code, stdout, _ = run(["-m", "cassette", "trace", "-o", str(out), "--include", "fib",
                           str(script), "3"], tmp_path)
    assert (code, stdout) == (0, "2\n")
    assert out.read_text() == (
        "fib(3)\n"
        "  fib(2)\n"
        "    fib(1) → 1\n"
        "    fib(0) → 0\n"
        "  fib → 1\n"
        "  fib(1) → 1\n"
        "fib → 2\n")


def test_depth_and_exclude(tmp_path):
    script = write(tmp_path, "fib.py", FIB)
    out = tmp_path / "trace.txt"
    run(["-m", "cassette", "trace", "-o", str(out), "--depth", "2", str(script), "4"], tmp_path)
    text = out.read_text().splitlines()
    assert text == ["int('4') → 4", "fib(4)", "  fib(3) → 2", "  fib(2) → 1", "fib → 3",
                    "print(3) → None"]
    run(["-m", "cassette", "trace", "-o", str(out), "--exclude", "fib", "--exclude", "builtins",
         str(script), "4"], tmp_path)
    assert out.read_text() == ""


def test_ops_and_exceptions(tmp_path):
    script = write(tmp_path, "ops.py", """
        class Box:
            def __init__(self, v):
                self.v = v

        def parse(text):
            try:
                return int(text)
            except ValueError:
                return -1

        b = Box(2)
        total = b.v * 3 + parse("x")
    """)
    out = tmp_path / "trace.txt"
    code, _, _ = run(["-m", "cassette", "trace", "--ops", "-o", str(out), str(script)], tmp_path)
    assert code == 0
    lines = out.read_text().splitlines()
    assert "getattr(<Box object>, 'v') → 2" in lines
    assert "operator.mul(2, 3) → 6" in lines
    assert "operator.add(6, -1) → 5" in lines
    assert "    setattr(<Box object>, 'v', 2) → None" in lines
    # parse("x"): int raised; parse itself returned normally after that.
    start = lines.index("parse('x')")
    raised = "  int('x') raised ValueError" if sys.version_info >= (3, 12) else "  int('x') raised"
    assert lines[start + 1:start + 3] == [raised, "parse → -1"]


def test_reprs_run_no_user_code(tmp_path):
    script = write(tmp_path, "loud.py", """
        class Loud:
            def __repr__(self):
                print("repr ran")
                return "Loud!"
            def __eq__(self, other):
                print("eq ran")
                return True
            __hash__ = object.__hash__
            def __len__(self):
                print("len ran")
                return 1
            @property
            def __class__(self):
                print("__class__ ran")
                return Loud
            def __call__(self, x):
                return x

        def take(x, *rest, **named):
            return [x, rest, named]

        take(Loud(), Loud(), key=Loud())
        take("s" * 500, list(range(100)), {1: (2, 3)})
        Loud()(Loud())
    """)
    out = tmp_path / "trace.txt"
    code, stdout, _ = run(["-m", "cassette", "trace", "--ops", "-o", str(out), str(script)],
                          tmp_path)
    assert (code, stdout) == (0, "")
    text = out.read_text()
    assert "take(<Loud>, <Loud>, key=<Loud>) → [<Loud>, (<Loud>,), {'key': <Loud>}]" in text
    assert "[0, 1, 2, 3, … 96 more]" in text
    assert all(len(line) < 250 for line in text.splitlines())


@pytest.mark.skipif(sys.platform != "linux", reason="reads the peak RSS from getrusage (Linux KB)")
def test_long_run_streams(tmp_path):
    """fib(25) is 242785 calls; the trace of all of them is written as they
    happen, so the process stays under 100 MB of resident memory."""
    script = write(tmp_path, "fib.py", FIB)
    out = tmp_path / "trace.json"
    measure = ("import resource, subprocess, sys; "
               "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    code, stdout, stderr = run(["-c", measure, sys.executable, "-m", "cassette", "trace",
                                "--format", "json", "-o", str(out), str(script), "25"], tmp_path)
    assert code == 0, stderr
    peak_kb = int(stdout)
    assert peak_kb < 100 * 1024, peak_kb
    with open(out) as lines:
        calls = sum(1 for line in lines if line.startswith('{"event": "call"'))
    assert calls == 242785 + 2          # fib's calls, int and print


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
@pytest.mark.parametrize("no_color, coloured", [(None, True), ("1", False)])
def test_colour_only_on_a_terminal(tmp_path, no_color, coloured):
    """On a terminal (a pseudo-terminal here) the names are bold cyan, unless
    NO_COLOR is set; through a pipe (every other test) there is no colour."""
    import os
    import pty
    import subprocess
    script = write(tmp_path, "fib.py", FIB)
    try:
        controller, terminal = pty.openpty()
    except OSError as error:            # a chroot without /dev/pts
        pytest.skip(f"no pseudo-terminal can be opened here: {error}")
    environment = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    if no_color:
        environment["NO_COLOR"] = no_color
    process = subprocess.Popen([sys.executable, "-m", "cassette", "trace", "--include", "fib",
                                str(script), "2"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                               stderr=terminal, env=environment)
    os.close(terminal)
    output = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    os.close(controller)
    assert process.wait(timeout=300) == 0
    text = output.decode().replace("\r\n", "\n")
    plain = "fib(2)\n  fib(1) → 1\n  fib(0) → 0\nfib → 1\n"
    if coloured:
        assert "\x1b[1m\x1b[36mfib\x1b[0m(\x1b[2m2\x1b[0m)\n" in text
        assert text.replace("\x1b[1m", "").replace("\x1b[36m", "").replace(
            "\x1b[2m", "").replace("\x1b[0m", "") == plain
    else:
        assert text == plain


WRAPPED = """
    import functools

    def logged(f):
        @functools.wraps(f)
        def wrapper(*args):
            return f(*args)
        return wrapper

    @logged
    def beta(x):
        return x + 1

    @logged
    def alpha(x):
        return beta(x) * 2

    print(alpha(3))
"""


def test_rows_are_named_from_their_code_not_from_a_wrapper_copy(tmp_path):
    """functools.wraps copies __qualname__ and __module__ onto the wrapper:
    the trace names each call from its code, as cProfile does — the two
    wrappers (one code) as ``logged.<locals>.wrapper``, then alpha and beta,
    each once (sys.setprofile's counts; before, the second wrapper was
    named alpha)."""
    script = write(tmp_path, "wrapped.py", WRAPPED)
    expected = setprofile_calls(script, tmp_path)
    code, stdout, stderr, events = trace_events(tmp_path, str(script))
    assert (code, stdout, stderr) == (0, "8\n", "")
    calls = [e["name"] for e in events if e["event"] == "call" and e.get("file") == str(script)]
    assert calls == ["logged", "logged",            # the decorations
                     "logged.<locals>.wrapper", "alpha", "logged.<locals>.wrapper", "beta"]
    assert {name: calls.count(name) for name in set(calls)} == {
        name: count for name, count in expected.items() if name in set(calls)}
    assert expected["logged"] == 2


THREADS = """
    import sys
    import threading

    sys.setswitchinterval(1e-6)     # threads switch in the middle of writes

    def leaf(i):
        return i * 2

    def work(n):
        total = 0
        for i in range(n):
            total += leaf(i)
        return total

    threads = [threading.Thread(target=work, args=(3000,)) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(work(10))
"""


@pytest.mark.parametrize("format", ["json", "text"])
def test_threads_never_corrupt_the_output_file(tmp_path, format):
    """Six threads tracing into one file: every line whole, none lost (each
    thread calls leaf 3,000 times, the main thread 10)."""
    script = write(tmp_path, "threads.py", THREADS)
    out = tmp_path / f"trace.{format}"
    code, stdout, stderr = run(["-m", "cassette", "trace", "--format", format, "-o", str(out),
                                str(script)], tmp_path)
    assert (code, stdout, stderr) == (0, "90\n", "")
    text = out.read_text()
    assert "\0" not in text
    if format == "json":
        names = [e["name"] for e in json.loads(text) if e["event"] == "call"]
    else:       # a call's line: [thread] name(arguments) …
        calls = (re.match(r"(?:\[[^\]]*\] )?\s*([\w.<>]+)\(", line) for line in text.splitlines())
        names = [match.group(1) for match in calls if match]
    assert names.count("leaf") == 6 * 3000 + 10
    assert names.count("work") == 7
