"""The tagging API of reference §6: tags, metadata and its conversion rules,
tagged types, errors, and how a tagged value behaves outside its context.
(Propagation through overdubbed code is tested separately.)"""

import copy
import math
import operator
import pickle

import pytest

import cassette
from cassette import (Meta, NoMetaData, NoMetaMeta, Tagged, TaggingError, enabletagging,
                      hasmetadata, hasmetameta, hastagging, istagged, istaggedtype, metadata,
                      metameta, tag, untag, untagtype)


class Numbers(cassette.Context):
    """Numbers carry float metadata; nothing else may carry any."""

    @classmethod
    def metadatatype(cls, T):
        return float if issubclass(T, (int, float)) and T is not bool else None


class Plain(cassette.Context):
    pass


def program(x):
    return x


def numbers():
    return enabletagging(Numbers(), program)


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def norm1(self):
        return abs(self.x) + abs(self.y)


# -- enabling ------------------------------------------------------------------

def test_enabletagging_makes_a_new_context_with_a_fresh_tag_and_bindings_cache():
    base = Numbers(metadata="m")
    first, second = enabletagging(base, program), enabletagging(base, program)
    assert not hastagging(base) and base.tag is None
    assert hastagging(first) and hastagging(second)
    assert type(first) is Numbers and first.metadata == "m"
    assert first.tag is not second.tag
    assert len(first.bindingscache) == 0 and first.bindingscache is not second.bindingscache


@pytest.mark.parametrize("call, error", [
    (lambda: enabletagging("not a context", program), TypeError),
    (lambda: enabletagging(Numbers(), 42), TypeError),
    (lambda: hastagging(object()), TypeError),
    (lambda: tag(1.0, Numbers(), 1.0), TaggingError),
    (lambda: untag(1.0, Plain()), TaggingError),
    (lambda: metadata(1.0, Plain()), TaggingError),
    (lambda: metameta(1.0, Plain()), TaggingError),
    (lambda: tag(1.0, "ctx"), TypeError),
])
def test_misuse_names_the_problem(call, error):
    with pytest.raises(error) as info:
        call()
    assert str(info.value)


def test_predicates_answer_false_without_tagging():
    assert istagged(1.0, Plain()) is False
    assert istaggedtype(float, Plain()) is False


# -- tag, untag, metadata ------------------------------------------------------

def test_tag_untag_and_metadata_round_trip():
    ctx = numbers()
    x = tag(3.0, ctx, 1.5)
    assert istagged(x, ctx) and not istagged(3.0, ctx)
    assert untag(x, ctx) == 3.0 and type(untag(x, ctx)) is float
    assert metadata(x, ctx) == 1.5 and hasmetadata(x, ctx)
    assert metameta(x, ctx) is NoMetaMeta and not hasmetameta(x, ctx)
    plain = tag(3.0, ctx)
    assert metadata(plain, ctx) is NoMetaData and not hasmetadata(plain, ctx)
    # Untagged values: themselves, no metadata.
    assert untag(7, ctx) == 7
    assert metadata(7, ctx) is NoMetaData and metameta(7, ctx) is NoMetaMeta


def test_metadata_is_converted_by_calling_the_metadata_type():
    ctx = numbers()
    x = tag(1, ctx, 2)
    assert metadata(x, ctx) == 2.0 and type(metadata(x, ctx)) is float
    kept = 2.5
    assert metadata(tag(1, ctx, kept), ctx) is kept       # already a float: stored as is


@pytest.mark.parametrize("value, data, fragment", [
    ("text", 1.0, "allows no metadata"),                   # metadatatype(str) is None
    (True, 1.0, "allows no metadata"),
    (1.0, "not a number", "cannot convert metadata 'not a number' to float"),
    (1.0, object(), "cannot convert metadata"),
])
def test_metadata_that_is_not_allowed_or_not_convertible_is_a_type_error(value, data, fragment):
    ctx = numbers()
    with pytest.raises(TypeError) as info:
        tag(value, ctx, data)
    assert fragment in str(info.value)
    if fragment == "cannot convert metadata":
        assert info.value.__cause__ is not None


def test_a_conversion_raising_something_else_becomes_a_type_error():
    class Strict(cassette.Context):
        @classmethod
        def metadatatype(cls, T):
            return Checked

    class Checked:
        def __init__(self, value):
            raise ZeroDivisionError("no")

    ctx = enabletagging(Strict(), program)
    with pytest.raises(TypeError, match="ZeroDivisionError: no") as info:
        tag(1, ctx, 5)
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_the_default_metadatatype_allows_no_metadata_but_no_metadata_is_fine():
    ctx = enabletagging(Plain(), program)
    assert untag(tag(1.0, ctx), ctx) == 1.0
    with pytest.raises(TypeError, match="allows no metadata"):
        tag(1.0, ctx, 1.0)


def test_a_value_is_tagged_once_per_context():
    ctx = numbers()
    with pytest.raises(TaggingError, match="already tagged"):
        tag(tag(1.0, ctx), ctx)


# -- several contexts ----------------------------------------------------------

def test_values_of_one_context_are_opaque_to_another():
    outer, inner = numbers(), numbers()
    x = tag(2.0, outer, 1.0)
    assert not istagged(x, inner)
    assert untag(x, inner) is x
    assert metadata(x, inner) is NoMetaData


def test_nested_tags_keep_the_outer_tag_through_the_inner_api():
    outer, inner = numbers(), numbers()
    x = tag(2.0, outer, 1.0)
    # The inner context tags an outer-tagged value, with outer-tagged
    # metadata that needs converting (an int): both keep their outer tags.
    y = tag(x, inner, tag(3, outer, 4.0))
    assert untag(y, inner) is x
    data = metadata(y, inner)
    assert istagged(data, outer)
    assert untag(data, outer) == 3.0 and type(untag(data, outer)) is float
    assert metadata(data, outer) == 4.0
    assert untag(untag(y, inner), outer) == 2.0
    assert not istagged(y, outer)       # the inner tag is outermost


# -- tagged types --------------------------------------------------------------

def test_tagged_types_say_which_primal_type_they_wrap():
    ctx, other = numbers(), numbers()
    x = tag(3, ctx, 1.0)
    T = type(x)
    assert untagtype(T, ctx) is int
    assert istaggedtype(T, ctx) and istaggedtype(T, Numbers)
    assert not istaggedtype(T, other) and untagtype(T, other) is T
    assert not istaggedtype(T, Plain)
    assert untagtype(float, ctx) is float and not istaggedtype(float, ctx)
    assert type(tag(4, ctx)) is T                          # one type per tag and primal type
    assert isinstance(x, Tagged[int]) and isinstance(x, Tagged)
    assert Tagged[int] is Tagged[int] and not isinstance(x, Tagged[float])
    assert isinstance(tag(1, other), Tagged[int])          # any tag
    with pytest.raises(TypeError):
        Tagged(1)
    with pytest.raises(TypeError):
        Tagged["int"]


def test_a_new_tag_may_reuse_the_types_of_a_dead_one_and_they_answer_for_it():
    import gc
    import weakref
    from cassette import tagging
    gc.collect()
    tagging._spare_types.clear()         # white box: only the dead tag's types are spare
    dead = numbers()
    old_type = type(tag(1.5, dead))
    dead_tag = weakref.ref(dead.tag)
    del dead
    gc.collect()
    assert dead_tag() is None
    spares = tagging._spare_types.get(float, [])
    assert old_type in spares           # the dead tag's type is spare now
    # White box: a tag that died meanwhile (a context an earlier test left to
    # the collector) may have left spares of its own; keep only this one.
    spares[:] = [old_type]
    fresh, other = numbers(), numbers()
    x, y = tag(2.5, fresh, 1.0), tag(2.5, other, 2.0)
    assert type(x) is not type(y)
    for ctx, value, data in ((fresh, x, 1.0), (other, y, 2.0)):
        T = type(value)
        assert untagtype(T, ctx) is float and istaggedtype(T, ctx)
        assert T.__name__.endswith(f"@{ctx.tag.number}")
        assert istagged(value, ctx) and metadata(value, ctx) == data
    assert not istagged(x, other) and untagtype(type(x), other) is type(x)
    assert type(x) is old_type                     # the spare type was reused


def test_nested_tagged_types_untag_one_level():
    outer, inner = numbers(), numbers()
    y = tag(tag(2.0, outer), inner)
    assert untagtype(type(y), inner) is type(untag(y, inner))
    assert untagtype(untagtype(type(y), inner), outer) is float


# -- outside its context a tagged value acts as its primal ------------------------

def test_a_tagged_number_acts_as_its_primal_outside():
    ctx = numbers()
    x = tag(3, ctx, 1.0)
    cases = [
        (lambda v: v + 1, 4), (lambda v: 1 + v, 4), (lambda v: v * 2.5, 7.5),
        (lambda v: 10 - v, 7), (lambda v: v ** 2, 9), (lambda v: divmod(v, 2), (1, 1)),
        (lambda v: -v, -3), (lambda v: abs(-v), 3), (lambda v: v == 3, True),
        (lambda v: v < 4, True), (lambda v: hash(v), hash(3)), (lambda v: bool(v), True),
        (lambda v: float(v), 3.0), (lambda v: int(v), 3), (lambda v: math.sin(v), math.sin(3)),
        (lambda v: [10, 20, 30, 40][v], 40), (lambda v: round(v / 2), round(1.5)),
        (lambda v: f"{v:>3}", "  3"), (lambda v: str(v), "3"), (lambda v: repr(v), "3"),
        (lambda v: isinstance(v, int), True), (lambda v: operator.index(v), 3),
        (lambda v: sorted([5, v, 1]), [1, 3, 5]), (lambda v: {v: "k"}[3], "k"),
    ]
    for function, expected in cases:
        assert function(x) == expected
    result = x + 1
    assert type(result) is int                # the result is not tagged


def test_a_tagged_object_acts_as_its_primal_outside():
    ctx = enabletagging(Plain(), program)
    point = Point(3, -4)
    p = tag(point, ctx)
    assert p.x == 3 and p.norm1() == 7
    p.y = 10                                  # writes reach the object
    assert point.y == 10
    assert isinstance(p, Point)
    items = tag([3, 1, 2], ctx)
    assert len(items) == 3 and list(items) == [3, 1, 2] and 1 in items
    items[0] = 9
    items += [4]
    assert items == [9, 1, 2, 4]
    assert copy.copy(tag([1, 2], ctx)) == [1, 2] and type(copy.copy(tag([1, 2], ctx))) is list
    assert pickle.loads(pickle.dumps(tag({"a": 1}, ctx))) == {"a": 1}
    with tag(open(__file__), ctx) as handle:
        assert handle.readline().startswith('"""')


def test_tags_do_not_pickle_but_copy_as_themselves():
    ctx = numbers()
    assert copy.copy(ctx).tag is ctx.tag and copy.deepcopy(ctx).tag is ctx.tag
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(ctx)


def test_meta_holds_data_and_component_metadata():
    meta = Meta(1.0)
    assert meta.data == 1.0 and meta.meta is NoMetaMeta
    assert repr(Meta()) == "Meta(cassette.NoMetaData, cassette.NoMetaMeta)"


# -- primitives see primal values ------------------------------------------------

def test_fallback_calls_primitives_with_primal_values():
    seen = []

    def record(*args):
        seen.append(tuple(type(a) for a in args))
        return len(args)

    def run(x, y):
        return record(x, y, 5)

    ctx = numbers()
    x, y = tag(2.0, ctx, 1.0), tag(3, ctx)
    assert cassette.overdub(ctx, run, x, y) == 3
    assert seen == [(float, int, int)]
    # Another context's tags reach the primitive untouched.
    other = numbers()
    z = tag(1.0, other)
    seen.clear()
    cassette.overdub(ctx, run, x, z)
    assert seen[0][0] is float and isinstance(z, Tagged) and issubclass(seen[0][1], Tagged)


class Dispatching(Numbers):
    """A class of its own for the test below (its handler concerns no other
    test)."""


@pytest.mark.parametrize("argtype", [Tagged, Tagged[float]])
def test_tagged_argtypes_match_values_tagged_by_the_running_context_only(argtype):
    seen = []

    def rule(ctx, f, a, b):
        seen.append(metadata(a, ctx))
        return cassette.OverdubInstead

    def products(a, b):
        return a * 3.0, b * 3.0

    cassette.execute.register(Dispatching, operator.mul, argtype, object)(rule)
    try:
        other = enabletagging(Dispatching(), products)
        running = enabletagging(Dispatching(), products)
        foreign = tag(2.0, other, 1.0)
        own = tag(5.0, running, 7.0)
        # The same site sees a value of another context's tag, then its own.
        for _ in range(2):
            out = cassette.overdub(running, products, foreign, own)
            assert [untag(untag(v, running), other) for v in out] == [6.0, 15.0]
        assert seen == [7.0, 7.0]
        # And the other way round: for `other`, its own value is the first.
        seen.clear()
        cassette.overdub(other, products, foreign, own)
        assert seen == [1.0]
    finally:
        cassette.execute.unregister(rule)


class Doubling(cassette.Context):
    """Floats carry floats; ``*`` of two numbers the context tagged doubles
    the product's metadata, and one with a plain number keeps it."""

    @classmethod
    def metadatatype(cls, T):
        return float if T is float else None


@cassette.execute.register(Doubling, operator.mul, Tagged, Tagged)
def _both_tagged(ctx, f, a, b):
    return tag(untag(a, ctx) * untag(b, ctx), ctx, 2 * metadata(a, ctx))


@cassette.execute.register(Doubling, operator.mul, Tagged, object)
def _left_tagged(ctx, f, a, b):
    return tag(untag(a, ctx) * b, ctx, metadata(a, ctx))


def square(x):
    return x * x


def tripled(x):
    return x * 3.0


def test_a_handler_chosen_by_argument_types_is_chosen_once_for_every_tag():
    """Each run of a tool makes a tag, and with it new types for its tagged
    values; which handler their types select does not depend on the tag,
    and the selector's cache keys them by the values they wrap."""
    selector = cassette.dispatch.plan(Doubling, operator.mul).execute
    sizes = []
    for run in range(3):
        ctx = enabletagging(Doubling(), square)
        out = cassette.overdub(ctx, square, tag(2.0, ctx, 1.5))
        assert (untag(out, ctx), metadata(out, ctx)) == (4.0, 3.0)
        out = cassette.overdub(ctx, tripled, tag(2.0, ctx, 1.5))
        assert (untag(out, ctx), metadata(out, ctx)) == (6.0, 1.5)
        if selector.by_types is not None:
            sizes.append(len(selector.by_types))
    assert sizes == [] or sizes[0] == sizes[-1] > 0


def test_a_long_chain_of_tagged_values_is_freed_without_exhausting_the_stack():
    """Each tagged value carrying the previous one as its metadata: freeing
    the last frees them all (what the interpreter does for its own
    objects), and what they held is released."""
    import gc
    import weakref

    class Chained(cassette.Context):
        @classmethod
        def metadatatype(cls, T):
            return object

    class Payload:
        pass

    ctx = cassette.enabletagging(Chained(), len)
    payload = Payload()
    released = weakref.ref(payload)
    value = cassette.tag(1.0, ctx, payload)
    del payload
    for _ in range(200_000):
        value = cassette.tag(1.0, ctx, value)
    assert cassette.metadata(cassette.metadata(value, ctx), ctx) is not NoMetaData
    del value
    gc.collect()
    assert released() is None
