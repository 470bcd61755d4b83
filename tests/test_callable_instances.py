"""Calling an instance of a Python class with a ``__call__``: the instance
is the callee hooks see and handlers name, and its class's ``__call__``
runs overdubbed.  The core keeps what each class's ``__call__`` is, not
each instance's target (instances are not stable); these tests change what
that depends on while call sites are hot."""

import cassette


class Logged(cassette.Context):
    """Logs each callee's name, or the instance itself (metadata: a list)."""

    def prehook(self, f, *args, **kwargs):
        self.metadata.append(f if isinstance(f, (Scale, Shift)) else getattr(f, "__name__", f))


class Plain(cassette.Context):
    pass


class Scale:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return self.k * x


class Shift:
    def __init__(self, d):
        self.d = d

    def __call__(self, x):
        return x + self.d


def apply_all(functions, x, rounds):
    total = 0
    for _ in range(rounds):
        for f in functions:
            total += f(x)
    return total


def test_callable_instances_run_overdubbed_and_are_the_callees_hooks_see():
    functions = [Scale(2), Shift(3), Scale(5)]
    expected = apply_all(functions, 7, 20)
    assert cassette.overdub(Plain(), apply_all, functions, 7, 20) == expected
    ctx = Logged(metadata=[])
    assert cassette.overdub(ctx, apply_all, functions, 7, 20) == expected
    for f in functions:
        assert sum(entry is f for entry in ctx.metadata) == 20
    # Their bodies ran overdubbed: the multiplication inside is an operation.
    assert ctx.metadata.count("mul") == 40


def test_a_handler_for_one_instance_applies_to_it_alone():
    class Doubling(cassette.Context):
        pass

    special, other = Scale(2), Scale(2)

    @cassette.execute.register(Doubling, special)
    def triple_instead(ctx, f, x):
        return 3 * x

    try:
        ctx = Doubling()
        assert cassette.overdub(ctx, apply_all, [other], 5, 10) == 100          # hot, unhooked
        assert cassette.overdub(ctx, apply_all, [special, other], 5, 10) == 250
    finally:
        cassette.execute.unregister(triple_instead)
    assert cassette.overdub(Doubling(), apply_all, [special, other], 5, 10) == 200


def test_the_class_call_replaced_or_its_code_changed_while_hot():
    class Adder:
        def __call__(self, x):
            return x + 1

    adder = Adder()
    ctx = Plain()
    assert cassette.overdub(ctx, apply_all, [adder], 1, 30) == 60

    def times_ten(self, x):
        return x * 10

    Adder.__call__ = times_ten
    assert cassette.overdub(ctx, apply_all, [adder], 1, 30) == apply_all([adder], 1, 30) == 300

    def minus_one(self, x):
        return x - 1

    times_ten.__code__ = minus_one.__code__
    assert cassette.overdub(ctx, apply_all, [adder], 1, 30) == apply_all([adder], 1, 30) == 0

    Adder.__call__ = staticmethod(lambda x: x * 100)
    assert cassette.overdub(ctx, apply_all, [adder], 1, 30) == apply_all([adder], 1, 30) == 3000


def test_an_instance_whose_class_lost_its_call():
    class Once:
        def __call__(self):
            return "called"

    once = Once()

    def call_twice(f):
        first = f()
        del type(f).__call__
        try:
            f()
        except TypeError as exc:
            return first, str(exc)
        return first, None

    assert cassette.overdub(Plain(), call_twice, once) == ("called", "'Once' object is not callable")
