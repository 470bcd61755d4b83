"""The typed public API (docs/reference.md, "Typing").

Every public name of ``cassette`` and ``cassette.ir`` is annotated, the
package says so with a ``py.typed`` marker, and a type checker run the way a
downstream author runs it (``mypy --strict`` on their own code, cassette
followed but its internals not reported) finds no error in
``examples/typed_tool.py`` — while it does report the mistakes a precise
signature must catch, so the annotations cannot silently decay to ``Any``.
The example itself runs and prints values checked here independently.
"""

import ast
import math
import os
import pathlib
import re
import subprocess
import sys
import tomllib

import pytest

import cassette
import cassette.ir

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "cassette"
EXAMPLE = ROOT / "examples" / "typed_tool.py"

# The modules defining the public names, and the names each defines.
PUBLIC_MODULES = ["context", "dispatch", "entry", "tagging", "escapes", "passes", "ir"]


def _public_definitions():
    """(module, qualified name, ast node) of each public function and method
    of the modules above whose name is exported by ``cassette`` or
    ``cassette.ir``."""
    exported = set(cassette.__all__) | set(cassette.ir.__all__) | {"register", "unregister",
                                                                   "registrations"}
    for module in PUBLIC_MODULES:
        tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name in exported:
                yield module, node.name, node
            elif isinstance(node, ast.ClassDef) and (node.name in exported
                                                     or node.name == "GenericHook"):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and (
                            not item.name.startswith("_") or item.name in (
                                "__init__", "__call__", "__enter__", "__exit__")):
                        yield module, f"{node.name}.{item.name}", item


def test_every_public_function_and_method_is_annotated():
    missing = []
    seen = 0
    for module, name, node in _public_definitions():
        seen += 1
        arguments = node.args
        parameters = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                      *filter(None, [arguments.vararg, arguments.kwarg])]
        for parameter in parameters:
            if parameter.arg not in ("self", "cls", "mcls") and parameter.annotation is None:
                missing.append(f"{module}.{name}: parameter {parameter.arg}")
        if node.returns is None:
            missing.append(f"{module}.{name}: return")
    assert seen >= 40, seen         # the walk found the API, not an empty set
    assert not missing, "\n".join(missing)


def test_the_package_is_marked_typed():
    assert (PACKAGE / "py.typed").is_file()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["cassette"]


# What mypy must report in the snippet below, by line: a precise API.
MISTAKES = '''\
import cassette

def f(x: int) -> str:
    return str(x)

ctx = cassette.Context()
reveal_type(cassette.overdub(ctx, f, 3))
cassette.overdub(ctx, f, "three")
cassette.overdub(f, 3)
cassette.Context(3)
cassette.istagged(1, ctx) + "x"
reveal_type(cassette.ir.call_sites)
'''


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory):
    pytest.importorskip("mypy", reason="mypy is in the test extra; install cassette[test]")
    work = tmp_path_factory.mktemp("mypy")
    mistakes = work / "mistakes.py"
    mistakes.write_text(MISTAKES, encoding="utf-8")
    # No MYPYPATH: mypy finds cassette as installed (tools/dev.py installs
    # it editable in the mode mypy can follow), as a downstream author's does.
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--no-incremental", "--no-error-summary", "--hide-error-context",
         "--cache-dir", str(work / "cache"), str(EXAMPLE), str(mistakes)],
        capture_output=True, text=True, env=env, cwd=work, timeout=600)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return done.stdout


def test_mypy_strict_finds_nothing_wrong_in_the_downstream_example(mypy_output):
    about_example = [line for line in mypy_output.splitlines() if "typed_tool.py" in line]
    assert about_example == []


def test_mypy_sees_the_real_signatures(mypy_output):
    found = {}
    for line in mypy_output.splitlines():
        match = re.match(r".*mistakes\.py:(\d+): (error|note): (.*)", line)
        if match:
            found.setdefault(int(match[1]), []).append(match[3])
    assert found[7] == ['Revealed type is "str"']
    assert any('incompatible type "str"; expected "int"' in m for m in found[8])
    assert any('expected "Context"' in m for m in found[9])
    assert any('expected "Never"' in m for m in found[10])
    assert any('Unsupported operand types for + ("bool" and "str")' in m for m in found[11])
    assert found[12] == ['Revealed type is '
                         '"def (code: typing.Iterable[Any]) -> list[cassette.ir.CallSite]"']
    assert sorted(found) == [7, 8, 9, 10, 11, 12]


def test_the_example_runs_and_computes_what_it_should():
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    # polynomial(x) = x*x*x + 2.0*x: three multiplications, one addition.
    assert ast.literal_eval(lines["operations of polynomial(3.0)"]) == {"add": 1, "mul": 3}
    # d/dx (x**3 + 2x) = 3x**2 + 2; d/dx sin(x*x) = cos(x*x) * 2x.
    assert float(lines["d/dx polynomial at 2.0"]) == 3 * 2.0 ** 2 + 2
    assert math.isclose(float(lines["d/dx wave at 0.5"]), math.cos(0.25) * 2 * 0.5,
                        rel_tol=1e-15)
    value, seen = lines["distance(-4.0)"].split(" abs saw: ")
    assert float(value) == abs(-4.0) * 2.0 + 1.0
    assert ast.literal_eval(seen) == [(-4.0,)]
    assert lines["escapes"] == "0"


def test_overdub_has_a_signature_and_a_readable_help():
    """Issue 38, item 7: the entry is a C function; its docstring gives
    inspect its signature, and help() shows prose, not escapes."""
    import inspect
    import pydoc

    signature = inspect.signature(cassette.overdub)
    assert str(signature) == "(ctx, f, /, *args, **kwargs)"
    assert [p.kind for p in signature.parameters.values()] == [
        inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]
    text = pydoc.render_doc(cassette.overdub, renderer=pydoc.plaintext)
    assert "\\n" not in text and "--" not in text.splitlines()[2]
    assert "Run f(*args, **kwargs) with every operation in its body" in text
    assert cassette.overdub.__doc__.startswith("Run f(*args, **kwargs)")
