"""reference §6: a tagging context's ``metadata_loss`` — what a run does when
a primitive without a handler receives tagged arguments and its result,
of a type that may carry metadata, comes back carrying none: nothing
(``"drop"``, the default), a ``MetadataLossWarning`` (``"warn"``) or a
``MetadataLossError`` naming the callee and the argument types
(``"raise"``).  Both runtimes run these tests."""

import math
import operator
import warnings

import pytest

import cassette
from cassette import MetadataLossError, MetadataLossWarning, metadata, tag, untag


class Slope(cassette.Context):
    """Floats and ints carry a float slope; a handler for ``math.sin`` and
    for ``*`` by a plain number keeps it."""

    @classmethod
    def metadatatype(cls, T):
        return float if T in (int, float) else None


class Dropping(Slope):
    pass


class Warning_(Slope):
    metadata_loss = "warn"


class Strict(Slope):
    metadata_loss = "raise"


for _context in (Dropping, Warning_, Strict):
    @cassette.execute.register(_context, math.sin, cassette.Tagged)
    def _sin(ctx, f, x, /):
        value = untag(x, ctx)
        return tag(math.sin(value), ctx, math.cos(value) * metadata(x, ctx))

    @cassette.execute.register(_context, operator.mul, cassette.Tagged, object)
    def _mul(ctx, f, a, b, /):
        return tag(untag(a, ctx) * b, ctx, metadata(a, ctx) * b)


def overdub_tagged(context_type, program, value, slope=1.0):
    """``program(x)`` overdubbed, ``x`` = ``value`` tagged with ``slope``;
    the run's context and the result."""
    run = cassette.enabletagging(context_type(), program)
    return run, cassette.overdub(run, program, tag(value, run, slope))


def hypot_of(x):
    return math.hypot(x, 1.0)


def sum_of(x):
    return x + 0.5


def divided(x):
    return divmod(x, 0.75)


@pytest.mark.parametrize("program, shown", [
    (hypot_of, "math.hypot(Tagged[float], float)"),
    (sum_of, "operator.add(Tagged[float], float)"),
    (divided, "divmod(Tagged[float], float)"),
])
def test_raise_names_the_callee_the_argument_types_and_the_context(program, shown):
    with pytest.raises(MetadataLossError) as raised:
        overdub_tagged(Strict, program, 2.0)
    message = str(raised.value)
    assert message.startswith(shown + " has no handler under Strict"), message
    assert "Strict.metadata_loss = 'drop'" in message
    assert isinstance(raised.value, cassette.CassetteError)


@pytest.mark.parametrize("program", [hypot_of, sum_of, divided])
def test_drop_returns_the_plain_result_silently(program):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run, out = overdub_tagged(Dropping, program, 2.0)
    assert out == program(2.0)
    assert not cassette.istagged(out, run)


def test_warn_warns_and_returns_the_plain_result():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run, out = overdub_tagged(Warning_, hypot_of, 2.0)
    assert out == math.hypot(2.0, 1.0) and not cassette.istagged(out, run)
    assert [w.category for w in caught] == [MetadataLossWarning]
    assert str(caught[0].message).startswith(
        "math.hypot(Tagged[float], float) has no handler under Warning_")


def uses_handlers(x):
    return math.sin(x * 3.0)


def test_handlers_keep_metadata_and_nothing_is_raised():
    run, out = overdub_tagged(Strict, uses_handlers, 0.25)
    assert untag(out, run) == math.sin(0.25 * 3.0)
    assert metadata(out, run) == math.cos(0.25 * 3.0) * 3.0


def about_its_arguments(x):
    # Identity, type, size, hash, order, truth and text: no metadata to carry.
    values = [x]
    return (x < 3.0, x == 2.0, x != 1.0, x >= 2.0, len(values), isinstance(x, float),
            type(x) is float, bool(x), not x, x is values[0], hash(x) == hash(2.0),
            str(x), repr(x), f"{x:.1f}", x in values)


def test_what_only_says_something_of_its_arguments_loses_nothing():
    plain = about_its_arguments(2.0)
    for context_type in (Strict, Warning_):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _, out = overdub_tagged(context_type, about_its_arguments, 2.0)
        assert out == plain


def test_conversions_keep_metadata_and_are_not_losses():
    for conversion, value in ((float, 2.0), (int, 2)):
        run, out = overdub_tagged(Strict, conversion, 2.0, slope=0.5)
        assert (untag(out, run), metadata(out, run)) == (value, 0.5)
        assert type(untag(out, run)) is conversion


def test_arguments_without_metadata_and_untyped_results_lose_nothing():
    # A tagged value carrying NoMetaData has nothing to lose; a str result
    # (metadatatype(str) is None) may carry nothing.
    run = cassette.enabletagging(Strict(), hypot_of)
    bare = tag(2.0, run)
    assert cassette.overdub(run, hypot_of, bare) == math.hypot(2.0, 1.0)
    assert overdub_tagged(Strict, lambda x: "%.2f" % x, 2.0)[1] == "2.00"


def test_the_policy_is_checked_when_the_class_is_made_and_when_it_is_set():
    with pytest.raises(TypeError, match=r"Loud\.metadata_loss must be one of 'drop', "
                                        r"'warn', 'raise', got 'loud'"):
        class Loud(Slope):
            metadata_loss = "loud"

    class Changing(Slope):
        pass

    with pytest.raises(TypeError, match="Changing.metadata_loss must be one of"):
        Changing.metadata_loss = True
    assert Changing.metadata_loss == "drop"


def test_a_changed_policy_applies_to_the_next_run():
    class Changing(Slope):
        pass

    assert overdub_tagged(Changing, sum_of, 2.0)[1] == 2.5
    Changing.metadata_loss = "raise"
    with pytest.raises(MetadataLossError):
        overdub_tagged(Changing, sum_of, 2.0)
    Changing.metadata_loss = "drop"
    assert overdub_tagged(Changing, sum_of, 2.0)[1] == 2.5


def test_without_tagging_the_policy_changes_nothing():
    assert cassette.overdub(Strict(), hypot_of, 2.0) == math.hypot(2.0, 1.0)


def fsum_of_a_list(x):
    return math.fsum([x, 1.0])


def fsum_of_nested(x):
    return math.fsum([v for pair in [(1.0, x)] for v in pair]) + math.fsum({"a": [x]}["a"])


def element_without_metadata(x):
    values = [x, 1.5]
    return values[1] * 2.0 + len(values), sorted(values)[0]


def test_a_container_holding_metadata_hands_it_to_the_primitive():
    """``math.fsum([x, 1.0])``: the list holds ``x``'s metadata, and fsum,
    without a handler, drops it."""
    for program in (fsum_of_a_list, fsum_of_nested):
        with pytest.raises(MetadataLossError) as raised:
            overdub_tagged(Strict, program, 2.0)
        assert str(raised.value).startswith("math.fsum(list holding Tagged) has no handler")
        run, out = overdub_tagged(Dropping, program, 2.0)
        assert out == program(2.0)


def test_reading_a_component_without_metadata_is_no_loss():
    # The list's propagator reads values[1] (no metadata) and sorts the list
    # (x keeps its own): the results are what they are.
    run, (scaled, smallest) = overdub_tagged(Strict, element_without_metadata, 2.0, slope=0.5)
    assert scaled == 5.0 and not cassette.istagged(scaled, run)
    assert untag(smallest, run) == 1.5
