"""reference §3.4 and §7: recursion depth, threads, errors, tracebacks, and
programs that look at their own frame or rely on objects being freed."""

import contextlib
import gc
import inspect
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings

import pytest

import cassette
import cassette.dispatch
import cassette.entry
import cassette.rewrite
from overdub_support import Recorder, callees, record


class Nothing(cassette.Context):
    pass


class CatchAll(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        self.metadata[0] += 1


# -- recursion ---------------------------------------------------------------------

def depth(n):
    if n == 0:
        return 0
    return depth(n - 1) + 1


def test_depth_900_is_reachable_plainly():
    assert sys.getrecursionlimit() == 1000
    assert depth(900) == 900


def test_recursion_to_depth_900_with_a_context_that_defines_nothing():
    assert sys.getrecursionlimit() == 1000
    assert cassette.overdub(Nothing(), depth, 900) == 900


def test_recursion_to_depth_900_with_a_catch_all_prehook():
    assert sys.getrecursionlimit() == 1000
    ctx = CatchAll(metadata=[0])
    assert cassette.overdub(ctx, depth, 900) == 900
    # per level: ==, and for n > 0 the call, the -, the +
    assert ctx.metadata[0] == 901 + 900 * 3


class Labels(cassette.Context):
    @classmethod
    def metadatatype(cls, T):
        return str


def busy_depth(n, items):
    """Recursion whose every level calls primitives and reads a global."""
    if n == 0:
        return len(items)
    items.append(abs(n))
    return busy_depth(n - 1, items) + min(1, len(items))


def test_recursion_to_depth_900_with_a_tagging_context():
    """The tagging fallback and the propagation slots cost the program no
    recursion levels (the core calls primitives without a frame or a
    recursion check of its own)."""
    assert sys.getrecursionlimit() == 1000
    ctx = cassette.enabletagging(Labels(), busy_depth)
    assert cassette.overdub(ctx, busy_depth, 900, []) == busy_depth(900, []) == 1800
    tagged = cassette.tag(900, ctx, "n")
    assert cassette.overdub(ctx, busy_depth, tagged, []) == 1800


def test_recursion_to_depth_900_through_methods_and_posthooks():
    class Both(cassette.Context):
        def prehook(self, f, *args, **kwargs):
            self.metadata.append(1)

        def posthook(self, out, f, *args, **kwargs):
            self.metadata.append(2)

    class Walker:
        def down(self, n):
            return 0 if n == 0 else self.down(n - 1) + 1

    ctx = Both(metadata=[])
    assert cassette.overdub(ctx, Walker().down, 900) == 900
    assert ctx.metadata.count(1) == ctx.metadata.count(2) > 900 * 3


def test_infinite_recursion_raises_recursion_error_and_the_context_recovers():
    def forever(n):
        return forever(n + 1)

    ctx = CatchAll(metadata=[0])
    with pytest.raises(RecursionError):
        cassette.overdub(ctx, forever, 0)
    assert cassette.overdub(ctx, depth, 50) == 50


RUNAWAY = r"""
import contextlib, functools, json, sys
import cassette

class Nothing(cassette.Context):
    pass

class Counting(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        self.metadata[0] += 1

class Reentering(cassette.Context):
    # Each level of the program passes through a handler of its own.
    def execute(self, f, *args, **kwargs):
        return cassette.overdub(self, f, *args, **kwargs)

class Manager:
    def __init__(self, n):
        self.n = n
    def __enter__(self):
        return through_with(self.n + 1)
    def __exit__(self, *exc):
        return False

class Built:
    def __init__(self, n):
        through_init(n + 1)

class Added:
    def __init__(self, n):
        self.n = n
    def __add__(self, other):
        return through_operator(self.n + 1)

@contextlib.contextmanager
def managed(n):
    through_generator_manager(n + 1)
    yield

@functools.lru_cache(maxsize=None)
def through_lru(n):
    return through_lru(n + 1)

def through_call(n): return through_call(n + 1)
def through_with(n):
    with Manager(n):
        pass
def through_init(n): Built(n)
def through_operator(n): return Added(n) + 1
def through_generator_manager(n):
    with managed(n):
        pass
def through_sort_key(n): return sorted([2, 1], key=lambda x: through_sort_key(n + 1))
def through_loop(n):
    for _ in (through_loop(n + 1) for _ in [1]):
        pass
def through_except(n):
    try:
        1 / 0
    except ZeroDivisionError:
        through_except(n + 1)

PROGRAMS = [through_call, through_with, through_init, through_operator, through_lru,
            through_generator_manager, through_sort_key, through_loop, through_except]

def depth_reached(program):
    getattr(program, "cache_clear", lambda: None)()
    code = getattr(program, "__wrapped__", program).__code__
    try:
        program(0)
    except RecursionError as error:
        tb, levels = error.__traceback__, 0
        while tb is not None:
            levels += tb.tb_frame.f_code.co_name == code.co_name
            tb = tb.tb_next
        return levels
    raise AssertionError(f"{program.__name__} returned")

def all_depths():
    return [depth_reached(program) for program in PROGRAMS]

sys.setrecursionlimit(int(sys.argv[1]))
plain = all_depths()
for ctx in (Nothing(), Counting(metadata=[0]), cassette.enabletagging(Nothing(), all_depths),
            Reentering()):
    print("ROW", json.dumps([plain, cassette.overdub(ctx, all_depths)]), flush=True)
    assert cassette.overdub(ctx, sum, [3, 4]) == 7       # the context recovers
"""


def test_runaway_recursion_raises_recursion_error_through_every_construct(tmp_path):
    """Runaway recursion through each construct that makes cassette call
    code from C (a hooked call, ``with``, instantiation, an operator, a C
    wrapper, a generator, a sort key, a loop, an except clause), also when
    every level passes through a handler, raises
    RecursionError overdubbed as plainly, in a fresh interpreter (a crash
    here is a C stack overflow: a recursion level that cost nothing), and
    reaches the depth it reaches plainly."""
    import json
    import subprocess
    script = tmp_path / "runaway.py"
    script.write_text(RUNAWAY)
    done = subprocess.run([sys.executable, str(script), "1000"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr[-2000:])
    rows = [json.loads(line[4:]) for line in done.stdout.splitlines() if line.startswith("ROW ")]
    assert len(rows) == 4, done.stdout
    for number, row in enumerate(rows):
        plain, dubbed = row
        assert all(level > 0 for level in plain + dubbed), row
        if number == 3:
            continue        # a handler and an overdub per level: its own frames
        # Through every construct, the program's own depth, give or take
        # the frames cassette's entry uses, under each context.  (The
        # pure-Python runtime's own frames count against the recursion
        # limit: docs/overdub.md.)
        if cassette.entry.IMPLEMENTATION == "cython":
            for index in range(len(plain)):
                assert dubbed[index] >= plain[index] - 10, (index, row)


def recursion_depth():
    """The interpreter's recursion depth where this is called, as
    ``sys.setrecursionlimit`` sees it: the lowest limit it accepts (the way
    CPython's own tests find it).  Leaves the limit as it was."""
    limit = sys.getrecursionlimit()
    depth = 1
    while True:
        try:
            sys.setrecursionlimit(depth)
        except RecursionError:
            depth += 1
        else:
            break
    sys.setrecursionlimit(limit)
    return depth


class _Compared:
    def __init__(self, tag, seen):
        self.tag, self.seen = tag, seen

    def __lt__(self, other):
        self.seen[self.tag] = recursion_depth()
        return False


class _Protocols:
    def __init__(self, seen):
        self.seen = seen

    def __len__(self):
        self.seen["len(x)"] = recursion_depth()
        return 1

    def __abs__(self):
        self.seen["abs(x)"] = recursion_depth()
        return 1

    def __next__(self):
        self.seen["next(x)"] = recursion_depth()
        return 1

    def __hash__(self):
        self.seen["d.get(x)"] = recursion_depth()
        return 1

    def __enter__(self):
        self.seen["with: __enter__"] = recursion_depth()
        return self

    def __exit__(self, *exc):
        self.seen["with: __exit__"] = recursion_depth()


class _Missing(dict):
    def __init__(self, seen):
        self.seen = seen

    def __missing__(self, key):
        self.seen["d[k]: __missing__"] = recursion_depth()
        return 1


def _called_back(seen):
    """Python code the interpreter or a builtin calls for the program, each
    noting its depth relative to the program's frame."""
    seen["program"] = recursion_depth()

    def key(x):
        seen["sorted(xs, key=f)"] = recursion_depth()
        return x

    def items():
        seen["list(generator)"] = recursion_depth()
        yield 1

    @contextlib.contextmanager
    def managed():
        seen["with: contextmanager"] = recursion_depth()
        yield

    def handler():
        try:
            1 / 0
        except ZeroDivisionError:
            seen["except: handler"] = recursion_depth()

    sorted([2, 1], key=key)
    list(items())
    x = _Protocols(seen)
    len(x), abs(x), next(x), {}.get(x)
    with x:
        pass
    with managed():
        pass
    handler()
    [_Compared("xs.sort()", seen), _Compared("xs.sort()", seen)].sort()
    [_Compared("sorted(xs)", seen), _Compared("sorted(xs)", seen)].sort(reverse=True)
    max(_Compared("max(a, b)", seen), _Compared("max(a, b)", seen))
    _Missing(seen)[0]
    return {name: depth - seen["program"] for name, depth in seen.items()}


class _PassingHook(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        pass


@pytest.mark.skipif(cassette.entry.IMPLEMENTATION != "cython",
                    reason="the pure-Python runtime's own frames count against the "
                           "recursion limit (docs/overdub.md, Recursion depth)")
def test_code_called_for_the_program_runs_at_the_depth_it_runs_at_plainly():
    """Each construct that has Python code called for the program — by a
    builtin (a sort key, a generator consumed by list, __len__ behind
    len, __hash__ behind dict.get, __lt__ behind sort and max), by the
    interpreter (with, an except clause, __missing__) — reaches that code at
    the same depth above the program's frame overdubbed as plainly, under a
    context that defines nothing and one whose hook runs: a program that
    sets its recursion limit just above where it is (as CPython's tests do)
    behaves the same.  Compared once the interpreter has specialized the
    code, as it does for any code that runs more than a few times."""
    for _ in range(20):
        plain = _called_back({})
        nothing = cassette.overdub(cassette.Context(), _called_back, {})
        hooked = cassette.overdub(_PassingHook(), _called_back, {})
    assert len(plain) == 15
    assert nothing == plain
    assert hooked == plain


def _chain(levels):
    return 1 if levels == 0 else _chain(levels - 1)


class _Managed:
    def __enter__(self):
        return _chain(3)

    def __exit__(self, *exc):
        return False


@contextlib.contextmanager
def _managed():
    yield _chain(1)


def _with_block():
    with _Managed() as one:
        return one


def _with_contextmanager():
    with _managed() as one:
        return one


def _except_clause():
    try:
        1 / 0
    except ZeroDivisionError:
        return _chain(4)


def _sort_key():
    return sorted([2, 1], key=lambda x: _chain(5) * x)[0]


def _near_the_limit(headroom, fresh):
    """Set the recursion limit ``headroom`` levels above the depth here, then
    run constructs that take the program a few levels deeper, each its own
    number of levels — among them the first call of ``fresh``, a function
    no run has called — and say which of them ran."""
    limit = sys.getrecursionlimit()
    outcomes = []
    try:
        sys.setrecursionlimit(recursion_depth() + headroom)
    except RecursionError:
        return "limit refused"
    try:
        for construct in (fresh, _with_block, _with_contextmanager, _except_clause, _sort_key):
            try:
                outcomes.append(construct())
            except RecursionError:
                outcomes.append(None)
        return outcomes
    finally:
        sys.setrecursionlimit(limit)


def _fresh_function():
    namespace = {"_chain": _chain}
    exec("def fresh():\n    return _chain(6)\n", namespace)
    return namespace["fresh"]


@pytest.mark.skipif(cassette.entry.IMPLEMENTATION != "cython",
                    reason="the pure-Python runtime's own frames count against the "
                           "recursion limit (docs/overdub.md, Recursion depth)")
@pytest.mark.parametrize("context", [cassette.Context, _PassingHook],
                         ids=["nothing", "hook"])
def test_a_program_at_its_recursion_limit_behaves_as_plainly(context):
    """A program a few levels below its recursion limit — where cassette
    rewrites a function for the first time, looks up ``__enter__``, tidies
    a caught exception, calls a hook — succeeds or meets RecursionError at
    the same headroom overdubbed as plainly (cassette lends frames to its
    own work, which cannot fail when they are given back)."""
    for _ in range(10):     # the interpreter specializes code that runs often
        plain = [_near_the_limit(headroom, _fresh_function()) for headroom in range(1, 12)]
        dubbed = [cassette.overdub(context(), _near_the_limit, headroom, _fresh_function())
                  for headroom in range(1, 12)]
    assert plain[-1] == [1] * 5 and any(None in outcome for outcome in plain)
    assert dubbed == plain


# (recursion_depth is this module's, its source copied in.)
COLD_NEAR_THE_LIMIT = """
import contextlib, json, sys
import cassette

""" + inspect.getsource(recursion_depth) + """

def chain(levels):
    return 1 if levels == 0 else chain(levels - 1)

@contextlib.contextmanager
def managed():
    yield chain(1)

def enter(headroom):
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(recursion_depth() + headroom)
    try:
        with managed() as one:
            return one
    except RecursionError:
        return None
    finally:
        sys.setrecursionlimit(limit)

class Passing(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        pass

plain = [enter(h) for h in range(1, 12)]
dubbed = [cassette.overdub(Passing(), enter, h) for h in range(1, 12)]
print(json.dumps([plain, dubbed]))
"""


@pytest.mark.skipif(cassette.entry.IMPLEMENTATION != "cython",
                    reason="the pure-Python runtime's own frames count against the "
                           "recursion limit (docs/overdub.md, Recursion depth)")
def test_cold_caches_near_the_recursion_limit_cost_the_program_no_level(tmp_path):
    """In a fresh interpreter, with an empty rewrite cache, each call under
    a new context: every decision cassette makes about a callee (whether it
    may be cached, a contextlib class of another metaclass than ``type``
    among them) is made for the first time, at the program's recursion
    limit — as its own work, with frames lent.  The program meets
    RecursionError at the headroom it meets it plainly, or later (a first
    decision cost it a level on 3.12, three on 3.11; a test suite run
    overdubbed under a fresh context per test is all first decisions)."""
    script = tmp_path / "cold.py"
    script.write_text(COLD_NEAR_THE_LIMIT)
    env = dict(os.environ, CASSETTE_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    plain, dubbed = json.loads(done.stdout)
    assert plain[-1] == 1 and None in plain
    assert [d if p == 1 else 1 for p, d in zip(plain, dubbed)] == [1] * len(plain), (
        plain, dubbed)


class _Made:
    """A class a run calls: its runtime then asks about it at collections."""


def _collect_at_the_limit():
    _Made()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(recursion_depth() + 1)
    try:
        gc.collect()        # (a C call: no frame needed)
    finally:
        sys.setrecursionlimit(limit)
    return "collected"


@pytest.mark.skipif(cassette.entry.IMPLEMENTATION != "cython",
                    reason="the pure-Python runtime's own frames count against the "
                           "recursion limit (docs/overdub.md, Recursion depth)")
def test_a_collection_at_the_recursion_limit_raises_nothing():
    # Cassette's hook at the start of a collection asks Python code about
    # the classes a runtime holds: it must not fail where the program is
    # at its recursion limit (it did, as an unraisable RecursionError).
    unraisable = []
    saved, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        plain = _collect_at_the_limit()
        dubbed = [cassette.overdub(cassette.Context(), _collect_at_the_limit)
                  for _ in range(3)]
    finally:
        sys.unraisablehook = saved
    assert (plain, dubbed, [u.exc_value for u in unraisable]) == (
        "collected", ["collected"] * 3, [])


# -- threads ---------------------------------------------------------------------------

def _held_by_another_thread(held_locks):
    """Start a thread that holds ``held_locks`` until the returned event is
    set; returns (the event, the thread)."""
    holding, release = threading.Event(), threading.Event()

    def hold():
        for held in held_locks:
            held.acquire()
        holding.set()
        release.wait()
        for held in reversed(held_locks):
            held.release()
    thread = threading.Thread(target=hold)
    thread.start()
    holding.wait()
    return release, thread


def _exit_status_of(pid, seconds):
    """The child's exit status, or None (it was killed) if it did not end
    within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here")
@pytest.mark.parametrize("who", ["another thread", "nobody"])
def test_a_fork_leaves_cassettes_locks_sound_in_both_processes(who):
    """A thread of the program overdubbing at the moment another forks
    (a ProcessPoolExecutor's thread, under the command line) holds
    cassette's locks: the child, which has no such thread, must not wait
    on them for ever (it did: a multiprocessing child under ``profile``
    hung), and the parent's locks go on working."""
    held_locks = [cassette.entry._recent_lock, cassette.dispatch._lock,
                  cassette.rewrite.recursion_limit_lock]
    release, thread = (_held_by_another_thread(held_locks) if who == "another thread"
                       else (None, None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)     # (fork with threads)
        pid = os.fork()
    if pid == 0:                                # the child: overdub, and say how it went
        ok = False
        try:
            ok = cassette.overdub(cassette.Context(), work, 3, 50) == work(3, 50)
            cassette.rewrite.lend_frames(0)
        finally:
            os._exit(0 if ok else 1)
    if release is not None:
        release.set()
        thread.join()
    status = _exit_status_of(pid, 60)
    for held in held_locks:                     # free again in the parent
        assert held.acquire(timeout=5)
        held.release()
    assert (status, cassette.overdub(cassette.Context(), work, 3, 50)) == (0, work(3, 50))


# Forks inside an overdub, in a fresh process (so every template is still to
# make): the interpreter then runs the at-fork hooks logging and threading
# registered — routed, so overdubbed — while cassette holds its locks, in
# the parent before the fork and in the child before cassette's own hook.
FORK_INSIDE_AN_OVERDUB = """
import logging, os, sys, threading
import cassette

def work(seed, n):
    total = 0
    for i in range(n):
        total = total + (seed * i) % 7
    return total

def fork_and_work():
    pid = os.fork()
    if pid == 0:
        os._exit(work(3, 50) % 256)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), work(5, 60)

print(fork_and_work() if sys.argv[1] == "plain"
      else cassette.overdub(cassette.Context(), fork_and_work))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here")
def test_a_fork_inside_an_overdub_runs_the_at_fork_hooks_in_both_processes(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(FORK_INSIDE_AN_OVERDUB)
    env = dict(os.environ, CASSETTE_CACHE_DIR=str(tmp_path / "cache"))
    outputs = []
    for how in ("plain", "overdub"):
        process = subprocess.Popen([sys.executable, str(script), how], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env=env,
                                   start_new_session=True)
        try:
            stdout, stderr = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:       # (the child hung, on 3.12: kill them all)
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            stdout = "still running after 120 s"
        outputs.append((stdout, stderr))
    assert outputs[1] == outputs[0] == (f"{(work(3, 50) % 256, work(5, 60))}\n", "")


def work(seed, n):
    total = 0
    for i in range(n):
        total = total + (seed * i) % 7
    return total


def _run_threads(target, count=8):
    results = [None] * count
    errors = []
    barrier = threading.Barrier(count)

    def runner(i):
        try:
            barrier.wait()
            results[i] = target(i)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=runner, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    return results


def test_eight_threads_each_with_its_own_context():
    def one(i):
        ctx = Recorder(metadata=[])
        out = cassette.overdub(ctx, work, i + 1, 200)
        return out, len(ctx.metadata)

    results = _run_threads(one)
    for i, (out, ops) in enumerate(results):
        assert out == work(i + 1, 200)
        # range(n), iter, 201 nexts (the last one fails), per step: mul, mod, add
        assert ops == 1 + 1 + 201 + 200 * 3


def test_eight_threads_sharing_one_context():
    class Shared(cassette.Context):
        def posthook(self, out, f, *args, **kwargs):
            with self.metadata["lock"]:
                self.metadata["count"] += 1

    ctx = Shared(metadata={"lock": threading.Lock(), "count": 0})
    results = _run_threads(lambda i: cassette.overdub(ctx, work, i + 1, 200))
    assert results == [work(i + 1, 200) for i in range(8)]
    # per run: range(n), iter, 200 nexts (the failing last one has no
    # posthook), and 600 arithmetic operations
    assert ctx.metadata["count"] == 8 * (1 + 1 + 200 + 600)


def test_threads_with_different_contexts_do_not_see_each_other():
    class Tag(cassette.Context):
        def execute(self, f, *args, **kwargs):
            if f is work_leaf:
                return self.metadata
            return cassette.OverdubInstead

    def work_leaf():
        return "plain"

    def prog():
        values = []
        for _ in range(50):
            values.append(work_leaf())
        return values

    results = _run_threads(lambda i: cassette.overdub(Tag(metadata=i), prog))
    assert results == [[i] * 50 for i in range(8)]


# -- errors (reference §7) ---------------------------------------------------------------

def test_overdub_of_a_non_context_is_a_type_error_naming_it():
    with pytest.raises(TypeError) as info:
        cassette.overdub(42, depth, 1)
    assert "Context" in str(info.value) and "int" in str(info.value)

    with pytest.raises(TypeError) as info:
        cassette.overdub(Nothing, depth, 1)   # the class, not an instance
    assert "Context" in str(info.value)


def test_overdub_of_a_non_callable_is_a_type_error():
    with pytest.raises(TypeError) as info:
        cassette.overdub(Nothing(), 42)
    assert "int" in str(info.value) and "callable" in str(info.value)


def test_call_of_a_non_callable_inside_overdub_raises_like_plain():
    def prog():
        x = 3
        return x()

    with pytest.raises(TypeError) as plain:
        prog()
    with pytest.raises(TypeError) as dubbed:
        record(prog)
    assert str(dubbed.value) == str(plain.value)


def test_a_raising_hook_propagates_and_the_context_still_works():
    class Boom(cassette.Context):
        def prehook(self, f, *args, **kwargs):
            if self.metadata["armed"] and f is depth:
                raise LookupError("from the hook")

    ctx = Boom(metadata={"armed": True})
    with pytest.raises(LookupError, match="from the hook"):
        cassette.overdub(ctx, lambda: depth(3))
    ctx.metadata["armed"] = False
    assert cassette.overdub(ctx, lambda: depth(3)) == 3


def test_a_raising_execute_and_posthook_propagate():
    class Boom(cassette.Context):
        def execute(self, f, *args, **kwargs):
            if f is len:
                raise KeyError("execute")
            return cassette.OverdubInstead

        def posthook(self, out, f, *args, **kwargs):
            if f is abs:
                raise IndexError("posthook")

    with pytest.raises(KeyError):
        cassette.overdub(Boom(), lambda: len([]))
    with pytest.raises(IndexError):
        cassette.overdub(Boom(), lambda: abs(-1))
    assert cassette.overdub(Boom(), lambda: max(1, 2)) == 2


# -- tracebacks ------------------------------------------------------------------

def _fail_inner(x):
    y = x + 1
    raise ValueError(f"bad {y}")   # the line the traceback must point at


def _fail_outer(x):
    return _fail_inner(x * 2)       # and this one


_INNER_RAISE = _fail_inner.__code__.co_firstlineno + 2
_OUTER_CALL = _fail_outer.__code__.co_firstlineno + 1


@pytest.mark.parametrize("ctx_class", [Nothing, CatchAll])
def test_traceback_shows_user_files_functions_and_lines(ctx_class):
    ctx = ctx_class(metadata=[0])
    with pytest.raises(ValueError, match="bad 7") as info:
        cassette.overdub(ctx, _fail_outer, 3)
    frames = traceback.extract_tb(info.value.__traceback__)
    user = [fr for fr in frames if fr.filename == __file__]
    assert [(fr.name, fr.lineno) for fr in user[-2:]] == [
        ("_fail_outer", _OUTER_CALL),
        ("_fail_inner", _INNER_RAISE),
    ]
    # the innermost frame is the user's raise
    assert (frames[-1].filename, frames[-1].name, frames[-1].lineno) == (
        __file__, "_fail_inner", _INNER_RAISE)
    assert frames[-1].line == 'raise ValueError(f"bad {y}")   # the line the traceback must point at'


def test_exception_from_a_primitive_points_at_the_user_line():
    def prog(d):
        return d["missing"]

    line = prog.__code__.co_firstlineno + 1
    for ctx in (Nothing(), CatchAll(metadata=[0])):
        with pytest.raises(KeyError) as info:
            cassette.overdub(ctx, prog, {})
        user = [fr for fr in traceback.extract_tb(info.value.__traceback__)
                if fr.filename == __file__]
        assert (user[-1].name, user[-1].lineno) == ("prog", line)


def test_line_numbers_seen_by_the_running_code_are_the_users():
    def where():
        return sys._getframe().f_lineno

    line = where.__code__.co_firstlineno + 1
    assert where() == line
    assert cassette.overdub(Nothing(), where) == line
    assert cassette.overdub(CatchAll(metadata=[0]), where) == line


# -- frames and lifetimes ----------------------------------------------------------------

def test_exec_and_eval_use_the_callers_namespace():
    def prog():
        x = 5
        env = {}
        exec("y = x * 2", {"x": x}, env)
        return eval("x + 1"), env["y"], eval("len(locals())")

    expected = prog()
    assert expected == (6, 10, 2)
    assert cassette.overdub(Nothing(), prog) == expected
    assert record(prog)[0] == expected


def test_exec_without_namespaces_sees_the_functions_locals():
    def prog(self_like):
        exec("self_like.append(len(self_like))")
        return self_like

    assert cassette.overdub(CatchAll(metadata=[0]), prog, [7]) == [7, 1]


def test_getframe_and_locals_see_the_user_frame():
    def prog(a):
        b = a + 1
        return sys._getframe().f_code.co_name, sorted(locals())

    assert cassette.overdub(CatchAll(metadata=[0]), prog, 1) == ("prog", ["a", "b"])


def test_objects_held_by_closures_are_freed():
    """Runtime caches must not keep closures (and what they hold) alive:
    CPython's test_scope.testLeaks."""
    class Foo:
        count = 0

        def __init__(self):
            Foo.count += 1

        def __del__(self):
            Foo.count -= 1

    def f1():
        x = Foo()

        def f2():
            return x
        f2()

    def prog():
        for _ in range(100):
            f1()
        gc.collect()
        return Foo.count

    assert prog() == 0
    for ctx in (Nothing(), CatchAll(metadata=[0])):
        assert cassette.overdub(ctx, prog) == 0


def test_objects_held_by_partials_and_bound_methods_are_freed():
    import functools
    import weakref

    class Payload:
        def method(self):
            return 1

    def use(p):
        return 1

    def prog(p):
        part = functools.partial(use, p)
        holder = type("Holder", (), {})()
        holder.m = p.method
        return part() + holder.m()

    ctx = CatchAll(metadata=[0])
    p = Payload()
    ref = weakref.ref(p)
    assert cassette.overdub(ctx, prog, p) == 2
    del p
    gc.collect()
    assert ref() is None


# -- messages that name the callable ------------------------------------------

def _star_of_a_function(callee):
    def h(j=1):
        return j

    try:
        callee(*h)
    except TypeError as error:
        return str(error)


@pytest.mark.parametrize("callee", [None, len, _star_of_a_function],
                         ids=["None", "builtin", "function"])
@pytest.mark.parametrize("make", [Nothing, lambda: CatchAll(metadata=[0])],
                         ids=["nothing", "catch-all"])
def test_a_message_naming_the_callee_names_it_as_plainly(callee, make):
    """``f(*not_iterable)`` names ``f`` by its module and qualified name,
    or by ``str(f)`` when it has none (test_extcall's ``nothing(*h)``):
    the same words overdubbed, whatever stands in for ``f``.  (3.15 names
    the value's type instead: the same words again.)"""
    expected = _star_of_a_function(callee)
    assert "after * must be an iterable" in expected
    assert cassette.overdub(make(), _star_of_a_function, callee) == expected


WARNING_MODULE = """
import warnings
warnings.warn("this module is deprecated", DeprecationWarning, stacklevel=2)
"""


def _warnings_with_stacklevels(module_name):
    """Warnings whose ``stacklevel`` reaches past a module body, an ``eval``
    and ``exec``: where each is attributed."""
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        __import__(module_name)
        del sys.modules[module_name]
        eval("__import__('warnings').warn('in eval', UserWarning, stacklevel=2)")
        exec("__import__('warnings').warn('in exec', UserWarning, stacklevel=1)", {})
    return [(str(w.message), w.filename, w.lineno) for w in caught]


@pytest.mark.skipif(cassette.entry.IMPLEMENTATION == "python",
                    reason="the pure-Python runtime's bodies are Python frames, which "
                           "stack walkers see (docs/overdub.md)")
@pytest.mark.parametrize("make", [Nothing, lambda: CatchAll(metadata=[0])], ids=["nothing", "catch-all"])
def test_a_warnings_stacklevel_names_the_frame_it_names_plainly(tmp_path, monkeypatch, make):
    """``stacklevel`` counts frames: a deprecated module's warning names its
    importer (python-dateutil's ``test_imports``), an ``eval``'s names the
    code calling ``eval``; no frame of cassette's is counted."""
    (tmp_path / "deprecated_here.py").write_text(WARNING_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    expected = _warnings_with_stacklevels("deprecated_here")
    assert [w[1] for w in expected][:2] == [__file__, __file__]
    assert cassette.overdub(make(), _warnings_with_stacklevels, "deprecated_here") == expected
