"""Contexts nobody uses any more are collected, and what is still running
keeps working.

Rewritten code refers to its runtime from its constants, which the garbage
collector cannot see; a runtime that kept its rewritten bodies forever would
keep its context (and the context's metadata) alive forever.  Top-level
runtimes keep their caches while they are among the ``entry.RUNTIMES_KEPT``
most recently entered; nested runs release theirs when they end.
"""

import gc
import weakref

import cassette
from cassette import entry


class Probe(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        self.metadata.append(f)


class Payload(list):
    """Metadata that can be weakly referenced."""


def leaf(x):
    return x + 1


def program(x):
    return leaf(x) * 2


def test_contexts_beyond_the_recent_ones_are_collected():
    refs = []
    for i in range(3 * entry.RUNTIMES_KEPT):
        payload = Payload()
        ctx = Probe(metadata=payload)
        assert cassette.overdub(ctx, program, i) == program(i)
        assert len(payload) == 3
        refs.append(weakref.ref(payload))
        del ctx, payload
    gc.collect()
    alive = [r() is not None for r in refs]
    assert sum(alive) <= entry.RUNTIMES_KEPT
    assert not any(alive[: 2 * entry.RUNTIMES_KEPT])


def test_contexts_of_nested_runs_are_collected():
    refs = []

    def nested(x):
        payload = Payload()
        refs.append(weakref.ref(payload))
        return cassette.overdub(Probe(metadata=payload), program, x)

    outer = Probe(metadata=Payload())
    for i in range(10):
        assert cassette.overdub(outer, nested, i) == program(i)
    gc.collect()
    assert len(refs) == 10 and all(r() is None for r in refs)


def test_a_generator_outlives_its_context_and_its_released_runtime():
    def numbers(n):
        for i in range(n):
            yield leaf(i)

    payload = Payload()
    generator = cassette.overdub(Probe(metadata=payload), numbers, 4)
    assert next(generator) == 1
    for i in range(2 * entry.RUNTIMES_KEPT):
        # Push its runtime out: contexts of other classes (a context of
        # Probe would adopt one runtime again and again; see test_adoption).
        other = type(f"Other{i}", (Probe,), {})
        cassette.overdub(other(metadata=Payload()), program, i)
    gc.collect()
    assert list(generator) == [2, 3, 4]
    assert payload.count(leaf) == 4               # still seen by its context
    ref = weakref.ref(payload)
    del generator, payload
    gc.collect()
    assert ref() is None
