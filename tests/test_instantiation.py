"""Instantiating a class while overdubbed: ``__new__`` and ``__init__`` are
each an operation (reference §3.1), and a class that keeps ``object``'s
``__new__`` is made as ``type.__call__`` makes it, without calling
``object.__new__`` through its Python-level wrapper when nobody hooks it.
Every error and every hook must stay what it is plainly: these tests run
each case plainly and overdubbed and compare."""

import abc

import pytest

import cassette


class Plain(cassette.Context):
    pass


class Calls(cassette.Context):
    """Logs the name of every callee (metadata: a list)."""

    def prehook(self, f, *args, **kwargs):
        self.metadata.append(getattr(f, "__name__", repr(f)))


def outcome(f, *args):
    """``f(*args)``'s value, or its exception's type and message."""
    try:
        return "value", f(*args)
    except Exception as exc:        # noqa: BLE001 - compared, not handled
        return "raised", type(exc), str(exc)


def both(f, *args):
    plain = outcome(f, *args)
    overdubbed = outcome(lambda *a: cassette.overdub(Plain(), f, *a), *args)
    return plain, overdubbed


class WithInit:
    def __init__(self, x, y=2):
        self.total = x + y


class NoInit:
    pass


class OwnNew:
    def __new__(cls, *args):
        obj = super().__new__(cls)
        obj.args = args
        return obj


class NewOnly:
    def __new__(cls, x):
        return object.__new__(cls)


class Abstract(abc.ABC):
    @abc.abstractmethod
    def need(self):
        raise NotImplementedError


class Meta(type):
    def __call__(cls, *args):
        return ("made by the metaclass", args)


class WithMeta(metaclass=Meta):
    pass


class ReturnsOther:
    def __new__(cls, x):
        return x            # not an instance: __init__ is not called

    def __init__(self, x):
        raise AssertionError("__init__ of a foreign object")


class InitReturns:
    def __init__(self):
        return 3


class Slotted:
    __slots__ = ("a",)

    def __init__(self, a):
        self.a = a


def make(cls, *args):
    obj = cls(*args)
    return type(obj).__name__, getattr(obj, "total", None), getattr(obj, "args", None), \
        getattr(obj, "a", None)


@pytest.mark.parametrize("cls, args", [
    (WithInit, (1,)), (WithInit, (1, 5)), (WithInit, ()), (WithInit, (1, 2, 3)),
    (NoInit, ()), (NoInit, (1,)),
    (OwnNew, ()), (OwnNew, (1, 2)),
    (NewOnly, (1,)), (NewOnly, ()),
    (Abstract, ()),
    (Slotted, (4,)), (Slotted, ()),
    (InitReturns, ()),
])
def test_instantiation_succeeds_and_fails_as_plainly(cls, args):
    plain, overdubbed = both(make, cls, *args)
    assert overdubbed == plain


def test_a_metaclass_call_and_a_foreign_object_from_new():
    assert both(WithMeta, 1, 2)[1] == both(WithMeta, 1, 2)[0] == \
        ("value", ("made by the metaclass", (1, 2)))
    plain, overdubbed = both(ReturnsOther, 7)
    assert overdubbed == plain == ("value", 7)


def test_a_new_assigned_after_the_class_was_made():
    class Late:
        def __init__(self, x):
            self.x = x

    def late_new(cls, x):
        obj = object.__new__(cls)
        obj.by_late_new = True
        return obj

    def run(x):
        obj = Late(x)
        return obj.x, getattr(obj, "by_late_new", False)

    assert cassette.overdub(Plain(), run, 3) == run(3) == (3, False)
    Late.__new__ = late_new
    assert cassette.overdub(Plain(), run, 4) == run(4) == (4, True)


def test_hooks_see_new_and_init_of_every_instantiation():
    def run():
        return sum(WithInit(i).total for i in range(3)) + len([NoInit() for _ in range(2)])

    ctx = Calls(metadata=[])
    assert cassette.overdub(ctx, run) == run() == 11
    assert ctx.metadata.count("WithInit") == 3
    assert ctx.metadata.count("__new__") == 3
    assert ctx.metadata.count("__init__") == 3
    # A class with neither of its own is made by one primitive call.
    assert ctx.metadata.count("NoInit") == 2


def test_a_handler_for_object_new_still_runs():
    class Counting(cassette.Context):
        pass

    made = []

    @cassette.prehook.register(Counting, object.__new__)
    def count(ctx, f, cls, *args, **kwargs):
        made.append(cls.__name__)

    try:
        def run():
            return WithInit(2).total, type(NoInit()).__name__
        assert cassette.overdub(Counting(), run) == run()
        assert made == ["WithInit"]        # NoInit() is one primitive call
    finally:
        cassette.prehook.unregister(count)
