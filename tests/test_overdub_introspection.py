"""Cassette's own introspection never runs the program's code.

Deciding what a callee is, whether an operation has a body, what to route
and how to name a wrapper, cassette looks at the program's objects and
classes only statically (``type(x)``, class ``__dict__``s along the MRO,
C-level attributes).  Program code that runs when an object is looked at —
a ``__class__`` property (``unittest.mock`` specs), ``__getattribute__`` or
``__getattr__``, a metaclass ``__getattribute__`` (``typing``'s deprecated
aliases warn in theirs), ``__instancecheck__``/``__subclasscheck__`` — runs
exactly as often overdubbed as plainly: the counts below are compared with
the plain run's.
"""

import collections
import sys
import warnings
from unittest import mock

import pytest

import cassette
from cassette import count_escapes, overdub
from cassette.entry import IMPLEMENTATION

LOOKS = collections.Counter()


class Watched(type):
    """A metaclass whose every hook counts the times it runs."""

    def __getattribute__(cls, name):
        LOOKS["meta getattribute " + name] += 1
        return type.__getattribute__(cls, name)

    def __instancecheck__(cls, obj):
        LOOKS["instancecheck"] += 1
        return type.__instancecheck__(cls, obj)

    def __subclasscheck__(cls, sub):
        LOOKS["subclasscheck"] += 1
        return type.__subclasscheck__(cls, sub)


class Spy(metaclass=Watched):
    """An object that counts every look at it."""

    def __init__(self, value):
        object.__setattr__(self, "value", value)

    @property
    def __class__(self):
        LOOKS["__class__"] += 1
        return int

    def __getattribute__(self, name):
        LOOKS["getattribute " + name] += 1
        return object.__getattribute__(self, name)

    def __getattr__(self, name):
        LOOKS["getattr " + name] += 1
        raise AttributeError(name)

    def __call__(self, x):
        return x + object.__getattribute__(self, "value")

    def __add__(self, other):
        return object.__getattribute__(self, "value") + other

    def __len__(self):
        return 3


def program(spy, magic):
    out = [spy(1), spy + 2, len(spy), sorted([3, 1], key=spy), spy.value]
    out.append(isinstance(spy, int))
    magic.method(1)
    magic(2)
    out.append(magic.method.call_count + magic.call_count)

    class Made(metaclass=Watched):
        attribute = 1

    out.append(Made.attribute + Made().attribute)
    return out


class Nothing(cassette.Context):
    pass


class Touching(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        self.metadata[0] += 1


def looks_of(run):
    LOOKS.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run(Spy(10), mock.MagicMock())
    return result, dict(LOOKS), [str(w.message) for w in caught]


@pytest.mark.parametrize("make", [Nothing, lambda: Touching(metadata=[0])],
                         ids=["nothing", "touching"])
def test_looking_at_the_programs_objects_runs_none_of_their_code(make):
    plain = looks_of(program)
    dubbed = looks_of(lambda *args: overdub(make(), program, *args))
    assert dubbed == plain


def deprecated_alias():
    import typing
    return typing.List[int], typing.Callable


@pytest.mark.parametrize("make", [Nothing, lambda: Touching(metadata=[0])],
                         ids=["nothing", "touching"])
def test_no_warning_appears_because_cassette_looked(make):
    def warnings_of(run):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = run()
        return result, [(w.category, str(w.message)) for w in caught]

    assert warnings_of(lambda: overdub(make(), deprecated_alias)) == warnings_of(deprecated_alias)


@pytest.mark.skipif(IMPLEMENTATION != "cython",
                    reason="the pure-Python runtime has no routing: C-made calls escape")
def test_looking_runs_no_frame_the_escape_counter_would_see():
    with count_escapes() as escapes:
        overdub(Touching(metadata=[0]), program, Spy(10), mock.MagicMock())
    assert escapes.total == 0, escapes.report()
