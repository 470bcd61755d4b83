"""Language features of the newer releases run overdubbed as they run
plainly, and hooks see the operations inside them.  The programs are
compiled from source text so that this file parses on every release; a
feature a release does not have is skipped there, with the release named."""

import sys

import pytest

import cassette
from overdub_support import name_of

needs_314 = pytest.mark.skipif(sys.version_info < (3, 14),
                               reason="new in CPython 3.14")


class Recorder(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        self.metadata.append((name_of(f), tuple(repr(a) for a in args)))


def compiled(source):
    namespace = {}
    exec(compile(source, "<new syntax>", "exec"), namespace)
    return namespace


def test_any_all_and_tuple_of_a_generator_are_calls_on_every_release():
    # 3.14 inlines these calls when the names are the builtins; overdubbed,
    # they are calls as on every other release.
    program = compiled(
        "def uses(xs):\n"
        "    return any(x > 1 for x in xs), all(x for x in xs), tuple(x * 2 for x in xs)\n"
    )["uses"]
    recorder = Recorder(metadata=[])
    assert cassette.overdub(recorder, program, [1, 2]) == program([1, 2]) == (True, True, (2, 4))
    names = [name for name, _ in recorder.metadata]
    assert (names.count("any"), names.count("all"), names.count("tuple")) == (1, 1, 1)
    assert ("operator.gt", ("2", "1")) in recorder.metadata
    assert ("operator.mul", ("2", "2")) in recorder.metadata


@needs_314
def test_template_strings_build_the_same_template_and_their_expressions_are_operations():
    render = compiled(
        "def render(a, b, width):\n"
        "    return t'{a + b!r:>{width}} and {a * b} {a!s} {b!a:^3}'\n"
    )["render"]
    plain = render(2, 3, 6)
    recorder = Recorder(metadata=[])
    dubbed = cassette.overdub(recorder, render, 2, 3, 6)

    def parts(template):
        return (type(template), template.strings,
                [(i.value, i.expression, i.conversion, i.format_spec)
                 for i in template.interpolations])

    assert parts(dubbed) == parts(plain)
    assert parts(plain)[2][0] == (5, "a + b", "r", ">6")
    assert ("operator.add", ("2", "3")) in recorder.metadata
    assert ("operator.mul", ("2", "3")) in recorder.metadata


@needs_314
def test_except_without_parentheses_catches_each_listed_class():
    classify = compiled(
        "def classify(error):\n"
        "    try:\n"
        "        raise error\n"
        "    except KeyError, IndexError:\n"
        "        return 'lookup'\n"
        "    except ValueError:\n"
        "        return 'value'\n"
    )["classify"]
    for error in (KeyError("k"), IndexError(1), ValueError(2)):
        assert cassette.overdub(Recorder(metadata=[]), classify, error) == classify(error)
