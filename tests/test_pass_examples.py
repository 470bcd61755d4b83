"""The pass examples of ``examples/`` (println slicing, line breakpoints,
loop counting) against what the same programs do plainly."""

import collections
import contextlib
import io
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))

import breakpoints  # noqa: E402
import loopcount  # noqa: E402
import sliceprint  # noqa: E402


def printed(f, *args, **kwargs):
    """``(result, stdout text)`` of a plain call."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = f(*args, **kwargs)
    return result, out.getvalue()


# -- println slicing --------------------------------------------------------------

class Report:
    def __init__(self, title):
        self.title = title

    def show(self, rows):
        print("==", self.title, "==")
        for row in rows:
            self.line(*row)
        return len(rows)

    def line(self, name, value):
        print(f"{name:>6}", value, sep=" | ", end=" ;\n")
        print(*[name] * 2, flush=True)


def reporting(rows):
    total = Report("totals").show(rows)
    squares = [value * value for _, value in rows]
    print("squares:", *squares)
    return total, sum(squares)


def test_slicing_takes_every_print_out_and_replays_them_in_order():
    rows = [("a", 1), ("bb", 2), ("ccc", 3)]
    plain_result, plain_out = printed(reporting, rows)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result, replay = sliceprint.sliceprints(reporting, rows)
    assert out.getvalue() == ""                 # nothing printed while running
    assert result == plain_result == (3, 14)
    replayed = io.StringIO()
    with contextlib.redirect_stdout(replayed):
        replay()
    assert replayed.getvalue() == plain_out
    assert plain_out.count("\n") == 1 + 2 * 3 + 1


def test_slicing_leaves_a_function_named_print_alone():
    namespace = {}
    exec("def print(*args):\n    return ('mine', args)\n"
         "def program():\n    return print(1, 2)\n", namespace)
    plain = namespace["program"]()
    result, replay = sliceprint.sliceprints(namespace["program"])
    assert result == plain == ("mine", (1, 2))


# -- line breakpoints -----------------------------------------------------------------

def running_mean(values):
    total = 0.0
    means = ()
    for count, value in enumerate(values, start=1):
        total += value
        means += (total / count,)
    return means


def test_breakpoints_stop_before_their_lines_with_the_frames_locals():
    code = running_mean.__code__
    first = code.co_firstlineno
    table = breakpoints.Breakpoints()
    table.add(code.co_filename, first + 4, condition=lambda local: local["count"] % 2 == 0)
    table.add(code.co_filename, first + 6)
    values = [4.0, 8.0, 6.0, 2.0]
    assert breakpoints.debug(table, running_mean, values) == running_mean(values)

    # The locals at each stop (before ``total += value`` on even counts, and
    # before the return), computed plainly.
    expected = []
    total, means = 0.0, ()
    for count, value in enumerate(values, start=1):
        if count % 2 == 0:
            expected.append((first + 4, dict(values=values, total=total, means=means,
                                             count=count, value=value)))
        total += value
        means += (total / count,)
    expected.append((first + 6, dict(values=values, total=total, means=means,
                                     count=len(values), value=values[-1])))
    got = [(hit.line, hit.locals) for hit in table.hits]
    assert got == expected
    assert {hit.function for hit in table.hits} == {"running_mean"}


def test_a_breakpoint_in_a_callee_and_the_on_hit_callback():
    seen = []
    table = breakpoints.Breakpoints(on_hit=lambda hit: seen.append((hit.function, hit.line)))
    first = running_mean.__code__.co_firstlineno
    table.add(running_mean.__code__.co_filename, first + 2)

    def caller():
        return [running_mean([1.0]), running_mean([2.0, 4.0])]

    assert breakpoints.debug(table, caller) == caller()
    assert seen == [("running_mean", first + 2)] * 2


# -- loop counting ---------------------------------------------------------------------

def back_edges_taken(f, *args):
    """``(result, Counter)``: the backward jumps each function's frames took,
    seen plainly by the interpreter's own opcode tracing."""
    counts = collections.Counter()
    last = {}

    def trace(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            before = last.get(frame)
            if before is not None and frame.f_lasti < before:
                counts[frame.f_code.co_qualname] += 1
            last[frame] = frame.f_lasti
        return trace

    # 3.12+ turn opcode events on for new frames only once some frame asked.
    sys._getframe().f_trace_opcodes = True
    sys.settrace(trace)
    try:
        result = f(*args)
    finally:
        sys.settrace(None)
    return result, counts


def nested_loops(n):
    found = []
    i = 0
    while i < n:
        i += 1
        if i == 2:
            continue
        for j in range(i):
            if j == 3:
                break
            found.append((i, j))
    return found


def collatz_total(limit):
    return sum(loopcount._collatz_steps(start) for start in range(1, limit))


@pytest.mark.parametrize("program, args", [
    (nested_loops, (7,)),
    (loopcount._longest_collatz, (40,)),
    (collatz_total, (25,)),
])
def test_loop_counts_match_the_interpreters_own_backward_jumps(program, args):
    result, counts = loopcount.count_loops(program, *args)
    plain_result, expected = back_edges_taken(program, *args)
    assert result == plain_result
    assert counts == expected
    assert sum(counts.values()) > 0


def test_loop_counts_for_simple_loops():
    def for_loop(n):
        for _ in range(n):
            pass

    def while_loop(n):
        while n:
            n -= 1

    assert loopcount.count_loops(for_loop, 5)[1] == {"test_loop_counts_for_simple_loops."
                                                     "<locals>.for_loop": 5}
    # Up to 3.13 a while loop is entered without taking its back edge (the
    # test is repeated at the bottom); 3.14 takes it after every iteration.
    while_edges = 5 if sys.version_info >= (3, 14) else 4
    assert loopcount.count_loops(while_loop, 5)[1] == {"test_loop_counts_for_simple_loops."
                                                       "<locals>.while_loop": while_edges}
