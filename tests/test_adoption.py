"""A context made per call — as ``enabletagging`` makes one for each
derivative — takes over the runtime of an earlier context of its class that
is done with it (``Runtime.adopt``, Cython core only), keeping the rewritten
code and warmed-up sites.  That must never change what runs: each run sees
its own context, and whatever can still run code of the earlier context (a
run in progress, a suspended generator, code handed out) keeps it."""

import sys
import threading

import cassette
from cassette import entry, enabletagging, istagged, metadata, tag


class Log(cassette.Context):
    """Logs the callee of every operation in its metadata (a list)."""

    def prehook(self, f, *args, **kwargs):
        self.metadata.append(f)


def leaf(x):
    return x + 1


def program(x):
    return leaf(x) * 2


def numbers(n):
    for i in range(n):
        yield leaf(i)


ADOPTS = entry.IMPLEMENTATION == "cython"


def test_a_fresh_context_takes_over_the_runtime_of_one_that_is_done():
    first = Log(metadata=[])
    assert cassette.overdub(first, program, 1) == program(1)
    runtime = first._runtime
    second = Log(metadata=[])
    assert cassette.overdub(second, program, 2) == program(2)
    if ADOPTS:
        assert second._runtime is runtime and first._runtime is None
    else:       # the pure-Python runtime binds its context into code
        assert second._runtime is not runtime and first._runtime is runtime
    # The first context runs again (with a runtime of its own again).
    assert cassette.overdub(first, program, 3) == program(3)
    assert first.metadata.count(leaf) == 2
    assert second.metadata.count(leaf) == 1
    assert len(first.metadata) == 2 * len(second.metadata)


def test_each_context_made_per_call_sees_exactly_its_own_run():
    logs = []
    for i in range(20):
        log = []
        assert cassette.overdub(Log(metadata=log), program, i) == program(i)
        logs.append(log)
    assert logs[0].count(leaf) == 1 and len(logs[0]) >= 3
    assert all(log == logs[0] for log in logs)


def test_a_suspended_generator_keeps_its_context():
    mine = Log(metadata=[])
    generator = cassette.overdub(mine, numbers, 3)
    assert next(generator) == 1
    runtime = mine._runtime
    other = Log(metadata=[])
    assert cassette.overdub(other, program, 5) == program(5)
    assert other._runtime is not runtime and mine._runtime is runtime
    assert list(generator) == [2, 3]
    assert mine.metadata.count(leaf) == 3
    assert other.metadata.count(leaf) == 1


def test_a_run_in_progress_keeps_its_context():
    outer_log, inner_logs = [], []

    class Reentrant(Log):
        def prehook(self, f, *args, **kwargs):
            self.metadata.append(f)
            if self.metadata is outer_log and f is leaf:
                # A handler (not overdubbed) runs a context of the same class.
                log = []
                inner_logs.append(log)
                assert cassette.overdub(Reentrant(metadata=log), program, 10) == program(10)

    def twice(x):
        return program(x) + program(x + 1)

    assert cassette.overdub(Reentrant(metadata=outer_log), twice, 1) == twice(1)
    assert outer_log.count(leaf) == 2 and outer_log.count(program) == 2
    assert len(inner_logs) == 2
    assert all(log.count(leaf) == 1 and program not in log for log in inner_logs)


def test_code_handed_out_keeps_its_runtime():
    first = Log(metadata=[])
    code = cassette.ir.rewritten_code(first, program)
    runtime = first._runtime
    assert cassette.overdub(Log(metadata=[]), program, 1) == program(1)
    assert first._runtime is runtime
    assert code.co_name == "program"


class Tangent(cassette.Context):
    @classmethod
    def metadatatype(cls, T):
        return float if T is float else None


STASH = []


def store(x):
    STASH.append(x)
    return x


def load():
    return STASH[-1]


def test_an_adopting_context_never_sees_the_metadata_of_the_one_before():
    STASH.clear()
    first = enabletagging(Tangent(), store)
    cassette.overdub(first, store, tag(3.0, first, 1.0))
    assert STASH == [3.0]                         # primal values in the program's data
    assert metadata(cassette.overdub(first, load), first) == 1.0
    second = enabletagging(Tangent(), load)
    out = cassette.overdub(second, load)
    assert out == 3.0 and not istagged(out, second) and not istagged(out, first)
    # The first context still finds what it recorded.
    assert metadata(cassette.overdub(first, load), first) == 1.0


def test_contexts_made_per_call_in_several_threads():
    failures = []

    def work(k):
        for i in range(150):
            log = []
            try:
                out = cassette.overdub(Log(metadata=log), program, k * 1000 + i)
            except Exception as exception:      # noqa: BLE001 (reported below)
                failures.append((k, i, exception))
                continue
            if out != program(k * 1000 + i) or log.count(leaf) != 1:
                failures.append((k, i, out, log))

    limit = sys.getrecursionlimit()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert failures == []
    assert sys.getrecursionlimit() == limit     # what cassette lends, it gives back


def test_derivatives_made_one_after_another_and_nested():
    def derivative(f, x):
        ctx = enabletagging(Tangent(), f)
        out = cassette.overdub(ctx, lambda v: f(v), tag(x, ctx, 1.0))
        data = metadata(out, ctx)
        return 0.0 if data is cassette.NoMetaData else data

    def rule(ctx, f, x):                 # leaf is x + 1: its tangent is x's
        dx = metadata(x, ctx)
        if dx is cassette.NoMetaData:
            return cassette.OverdubInstead
        return tag(f(cassette.untag(x, ctx)), ctx, dx)

    cassette.execute.register(Tangent, leaf, cassette.Tagged)(rule)
    try:
        for _ in range(3):
            assert derivative(leaf, 2.0) == 1.0
            assert derivative(lambda x: leaf(leaf(x)), 2.0) == 1.0
            assert derivative(lambda x: 3.0, 2.0) == 0.0
            # A derivative inside a derivative: the inner context is made
            # while the outer one runs (its runtime is not idle).
            assert derivative(lambda x: leaf(x) if derivative(leaf, x) == 1.0 else 3.0,
                              2.0) == 1.0
    finally:
        cassette.execute.unregister(rule)
