"""The per-release layer: which interpreters cassette runs on, and the
spellings of bytecode each release needs (cassette/versions/)."""

import importlib
import os
import subprocess
import sys
import textwrap

import pytest

import cassette
from cassette import versions


def test_an_unsupported_release_is_an_import_error_naming_the_supported_ones():
    with pytest.raises(ImportError) as info:
        versions.layer_module("cpython", (3, 16))
    message = str(info.value)
    assert "cpython 3.16" in message
    for major, minor in versions.SUPPORTED:
        assert f"{major}.{minor}" in message
    with pytest.raises(ImportError, match="pypy 3.12"):
        versions.layer_module("pypy", (3, 12))


def test_every_supported_release_has_a_layer_module_and_class():
    for major, minor in versions.SUPPORTED:
        name = versions.layer_module("cpython", (major, minor))
        module = importlib.import_module(name)
        layer_class = getattr(module, f"Layer{major}{minor}")
        assert layer_class.version == (major, minor)
    assert versions.LAYER.version == sys.version_info[:2]


def test_import_cassette_on_an_unsupported_release_fails_cleanly(tmp_path):
    # The release is faked at the one place that decides, in a fresh
    # interpreter: importing cassette raises the ImportError and leaves
    # nothing half-imported behind.
    script = textwrap.dedent("""
        import sys
        real = sys.version_info
        class Faked(tuple):
            major, minor, micro = 3, 16, 0
        sys.version_info = Faked((3, 16, 0, "final", 0))
        try:
            import cassette
        except ImportError as error:
            print("ImportError:", error)
        else:
            print("imported")
        sys.version_info = real
        print(sorted(n for n in sys.modules if n.startswith("cassette.versions.py")))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(cassette.__file__)))
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first.startswith("ImportError: cassette supports CPython 3.11")
    assert "this is cpython 3.16" in first
    assert second == "[]"


@pytest.mark.skipif(not versions.LAYER.property_loads_skip_routing,
                    reason="this release's property loads call a routed getter's entry")
def test_the_attribute_loads_a_layer_finds_are_those_dis_shows():
    # Far enough into the names that some loads need EXTENDED_ARG.
    names = [f"attribute_{i}" for i in range(300)]
    source = "def reads(o):\n    return [" + ", ".join(
        f"o.{name}" if i % 7 else f"o.{name}()" for i, name in enumerate(names)) + "]\n"
    namespace = {}
    exec(compile(source, "<attribute loads>", "exec"), namespace)
    code = namespace["reads"].__code__
    import dis
    expected = tuple((instr.offset // 2, instr.argval) for instr in dis.get_instructions(code)
                     if instr.opname == "LOAD_ATTR" and not instr.arg & 1)
    assert len(expected) == 300 - len(range(0, 300, 7))
    assert any(instr.opname == "EXTENDED_ARG" for instr in dis.get_instructions(code))
    assert versions.LAYER.plain_attribute_loads(code) == expected


def _stores_or_deletes_by_dis(code, name):
    """``rebinds_local``'s answer read from ``dis``: an instruction storing
    or deleting a fast local names it (a store fused with a load, 3.13+,
    names its stored local first)."""
    import dis
    for instruction in dis.get_instructions(code):
        if instruction.opname.startswith(("STORE_FAST", "DELETE_FAST", "LOAD_FAST_AND_CLEAR")):
            names = instruction.argval
            if instruction.opname == "STORE_FAST_LOAD_FAST":
                names = names[0]
            if name == names or (type(names) is tuple and name in names):
                return True
    return False


def _code_objects(code):
    yield code
    for constant in code.co_consts:
        if isinstance(constant, type(code)):
            yield from _code_objects(constant)


def test_rebinds_local_answers_as_dis_reads_the_instructions():
    """The version layer reads stores from the raw instructions (the
    constructor path asks it of every new ``__init__``): for every local of
    every function of a few standard modules — fused stores and loads,
    comprehensions, ``del``, ``EXTENDED_ARG`` — it answers as ``dis`` does."""
    many = "def many(a):\n" + "".join(f"    v{i} = a\n" for i in range(300)) + \
        "    a = v299\n    return [x + 1 for x in a]\n"
    namespace = {}
    exec(compile(many, "<many locals>", "exec"), namespace)
    codes = list(_code_objects(namespace["many"].__code__))
    for module in ("dataclasses", "email.message", "argparse", "pydoc"):
        path = importlib.import_module(module).__file__
        with open(path, encoding="utf-8") as file:
            codes += _code_objects(compile(file.read(), path, "exec"))
    asked = rebound = 0
    for code in codes:
        for name in code.co_varnames + ("not_a_local",):
            expected = _stores_or_deletes_by_dis(code, name)
            assert versions.LAYER.rebinds_local(code, name) == expected, (code, name)
            asked += 1
            rebound += expected
    assert asked > 2000 and 0 < rebound < asked
    assert versions.LAYER.rebinds_local(namespace["many"].__code__, "a")       # past EXTENDED_ARG
    assert not versions.LAYER.rebinds_local((lambda a, b: [a + x for x in b]).__code__, "b")
