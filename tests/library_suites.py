"""Third-party libraries' own test suites, plain and overdubbed (reference §3.4).

A context that defines nothing must change nothing, and so must one whose
hooks only observe: a test of a library's own suite that passes plainly must
pass with every test overdubbed.  This module runs a library's tests (none
of their code is ours) through pytest in a subprocess, once plainly and once
per context through the project's pytest plugin (``--cassette noop``,
``--cassette count``, see ``cassette/pytest_plugin.py``), reads each run's
JUnit XML and lists, test by test, what passed plainly and not overdubbed.

Two sources of tests:

* libraries whose wheels ship their tests (networkx, sympy, toolz,
  simplejson, mpmath, pyflakes: the ``test`` extra installs them), run with
  ``--pyargs``; :data:`LIBRARIES` gives each a default subset (the pytest
  suite's, a few seconds plainly) and a longer one;
* libraries whose wheels do not (more-itertools, attrs, jinja2, pyparsing,
  python-dateutil), whose tests come from their source distribution for the
  installed version, fetched with ``pip download --no-binary :all:`` into
  :func:`sdist_cache` — only for the command line's ``--nine`` (the nine
  libraries of issue 35), never in the pytest suite.

From the command line (the on-demand runs; not part of the test command)::

    python tests/library_suites.py                 # the default subsets
    python tests/library_suites.py --full          # the longer subsets
    python tests/library_suites.py --nine          # issue 35's nine libraries, and
                                                   # a third context (NINE_CONTEXTS)
    python tests/library_suites.py --escapes -v toolz networkx

prints, per library and context, the tests run, passed plainly, lost, the
escapes (with ``--escapes``) and the times, and every lost test's id with
the first lines of its failure; the exit status is 1 when a test was lost
that :data:`KNOWN_DIFFERENCES` does not name.  ``CASSETTE_PURE_PYTHON=1``
selects the pure-Python runtime, as everywhere.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import os
import re
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class Library:
    """A library's own tests: ``default`` and ``full`` are pytest arguments
    (``--pyargs`` module names, or paths below the source distribution's
    root with ``sdist``); ``needs`` are the distributions its tests import."""

    name: str                      # the distribution's name on PyPI
    default: tuple[str, ...]
    full: tuple[str, ...]
    sdist: bool = False            # tests come from the source distribution
    needs: tuple[str, ...] = ()
    options: tuple[str, ...] = ()  # more pytest options (deselections…)


LIBRARIES = {
    library.name: library for library in (
        Library("toolz",
                default=("toolz.tests.test_itertoolz", "toolz.tests.test_dicttoolz"),
                full=("toolz",)),
        Library("simplejson",
                default=("simplejson.tests.test_decode", "simplejson.tests.test_dump",
                         "simplejson.tests.test_namedtuple", "simplejson.tests.test_subclass"),
                full=("simplejson",)),
        Library("networkx",
                default=("networkx.algorithms.tests.test_dag",),
                full=("networkx.classes", "networkx.algorithms.tests",
                      "networkx.algorithms.shortest_paths", "networkx.generators",
                      "networkx.utils")),
        Library("sympy",
                default=("sympy.core.tests.test_basic",),
                full=("sympy.core", "sympy.sets", "sympy.logic", "sympy.utilities.tests",
                      "sympy.ntheory", "sympy.polys.tests.test_polytools"),
                # Wester's problems are a list of what a CAS should solve, not
                # tests of sympy's: most are expected failures, some run for
                # minutes, and their reports exhaust 14 GB plainly on 3.14+.
                options=("-k", "not test_wester")),
        Library("mpmath",
                default=("mpmath.tests.test_power", "mpmath.tests.test_division"),
                full=("mpmath",)),
        Library("pyflakes",
                default=("pyflakes.test.test_dict", "pyflakes.test.test_imports"),
                full=("pyflakes",)),
        # Their wheels ship no tests: the --nine run only.
        Library("more-itertools", default=("tests",), full=("tests",), sdist=True),
        Library("attrs", default=("tests",), full=("tests",), sdist=True,
                needs=("hypothesis", "pympler", "cloudpickle")),
        Library("jinja2", default=("tests",), full=("tests",), sdist=True,
                needs=("markupsafe", "trio")),
        Library("pyparsing", default=("tests",), full=("tests",), sdist=True,
                needs=("railroad-diagrams", "jinja2")),
        Library("python-dateutil", default=("tests",), full=("tests",), sdist=True,
                needs=("hypothesis", "freezegun", "pytest-cov")),
    )
}

#: The libraries the pytest suite runs (their wheels ship their tests).
WHEEL_LIBRARIES = tuple(name for name, library in LIBRARIES.items() if not library.sdist)

#: Issue 35's nine libraries.
NINE = ("networkx", "sympy", "toolz", "simplejson", "more-itertools", "attrs", "jinja2",
        "pyparsing", "python-dateutil")

#: The built-in contexts of the plugin the oracle runs under.
CONTEXTS = ("noop", "count")

#: The contexts of issue 35's nine-library run: those, and one with a single
#: ``execute`` override (``tests/suite_contexts/one_override.py``).
NINE_CONTEXTS = CONTEXTS + ("one_override:OneOverride",)

#: Where the contexts named ``MODULE:NAME`` above are importable from.
SUITE_CONTEXTS = Path(__file__).resolve().parent / "suite_contexts"

#: Tests that pass plainly and not overdubbed, and why that is a true limit
#: of overdubbing rather than a bug: ``{(library, test id): reason}``.  A
#: test id is the JUnit XML's ``classname::name``.
KNOWN_DIFFERENCES: dict[tuple[str, str], str] = {
    ("jinja2", "tests.test_debug.TestDebug::test_runtime_error"):
        "code identity (docs/testing.md): jinja2 hides its own frames from a "
        "traceback by comparing tb_frame.f_code with its functions' __code__; "
        "overdubbed, the frames run rewritten copies of that code, so it keeps them",
}


@dataclasses.dataclass
class Run:
    """One pytest run: per test id, ``"passed"``, ``"failed"`` or
    ``"skipped"`` (xfail included), the first lines of each failure, and
    what the plugin's summary said."""

    outcomes: dict[str, str]
    failures: dict[str, str]
    seconds: float
    cpu_seconds: float
    returncode: int
    output: str
    overdubbed: int | None = None     # tests the plugin reports as overdubbed
    escapes: int | None = None

    @property
    def passed(self) -> set[str]:
        return {test for test, outcome in self.outcomes.items() if outcome == "passed"}


def crash_report(output: str, count: int = 60) -> str:
    """What a run that ended without its summary printed: from the
    interpreter's ``Fatal Python error`` on (the failing thread's stack
    names the test), else the output's end."""
    start = output.find("Fatal Python error")
    if start < 0:
        return output[-3000:]
    return "\n".join(output[start:].splitlines()[:count])


def first_lines(text: str, count: int = 12) -> str:
    """The head and the last lines of a failure text: where it went wrong."""
    lines = text.rstrip().splitlines()
    if len(lines) <= count:
        return "\n".join(lines)
    return "\n".join(lines[:3] + ["    ..."] + lines[-(count - 3):])


def read_junit(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """``(outcomes, failures)`` from a pytest JUnit XML file.  A test
    reported more than once (a teardown error after its call) passed only if
    every report did."""
    outcomes: dict[str, str] = {}
    failures: dict[str, str] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        test = f"{case.get('classname', '')}::{case.get('name', '')}"
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            outcomes[test] = "failed"
            text = (problem.get("message") or "") + "\n" + (problem.text or "")
            failures.setdefault(test, first_lines(text))
        elif case.find("skipped") is not None:
            outcomes.setdefault(test, "skipped")
        else:
            outcomes.setdefault(test, "passed")
    return outcomes, failures


_OVERDUBBED = re.compile(r"^cassette: (\d+) tests? ran overdubbed", re.M)
_ESCAPES = re.compile(r"^cassette: (\d+) escapes?\b", re.M)


def run_pytest(targets, *, context=None, escapes=False, cwd, label, pyargs=True,
               options=(), timeout=3600, python=None, junit_dir=None) -> Run:
    """Run pytest on ``targets`` in a subprocess from ``cwd``, overdubbed by
    the plugin's ``context`` when given.  With ``pyargs`` (the targets are
    modules), ``cwd`` is a scratch directory given an empty ``pytest.ini``
    so that no configuration of ours applies; otherwise ``cwd`` is a source
    tree whose own configuration applies, and the JUnit XML goes to
    ``junit_dir``."""
    cwd = Path(cwd)
    junit = Path(junit_dir or cwd) / f"{label}.xml"
    command = [python or sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "--junitxml", str(junit), "-o", "junit_logging=no",
               "-o", "console_output_style=classic"]
    if context is not None:
        command += ["-p", "cassette", "--cassette", context]
        if escapes:
            command.append("--cassette-escapes")
    if pyargs:
        ini = cwd / "pytest.ini"
        if not ini.exists():
            ini.write_text("[pytest]\n")
        command += ["-c", str(ini), "--rootdir", str(cwd), "--pyargs"]
    command += [*options, *targets]
    environment = None
    if context is not None and ":" in context:
        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join(
            [str(SUITE_CONTEXTS)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=environment)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    output = done.stdout + done.stderr
    try:
        outcomes, failures = read_junit(junit)
    except (OSError, ET.ParseError):
        outcomes, failures = {}, {}
    run = Run(outcomes, failures, seconds, cpu, done.returncode, output)
    if (match := _OVERDUBBED.search(output)) is not None:
        run.overdubbed = int(match.group(1))
    if (match := _ESCAPES.search(output)) is not None:
        run.escapes = int(match.group(1))
    return run


def lost_tests(plain: Run, dubbed: Run) -> dict[str, str]:
    """``{test id: first lines of its failure}`` for the tests that passed
    plainly and not overdubbed (failed, or not reported at all)."""
    return {test: dubbed.failures.get(test, f"{dubbed.outcomes.get(test, 'not reported')}")
            for test in sorted(plain.passed - dubbed.passed)}


def unexplained(library: str, lost: dict[str, str]) -> dict[str, str]:
    """The lost tests that :data:`KNOWN_DIFFERENCES` does not name."""
    return {test: text for test, text in lost.items()
            if (library, test) not in KNOWN_DIFFERENCES}


# -- libraries whose tests come from their source distribution --------------

def sdist_cache() -> Path:
    """Where source distributions are downloaded and unpacked:
    ``CASSETTE_SDIST_CACHE``, else ``~/.cache/cassette-sdists``."""
    return Path(os.environ.get("CASSETTE_SDIST_CACHE")
                or Path.home() / ".cache" / "cassette-sdists")


def installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def unpacked_sdist(name: str, python=None) -> Path:
    """The unpacked source distribution of the installed version of
    ``name`` (downloaded with pip the first time)."""
    version = installed_version(name)
    if version is None:
        raise RuntimeError(f"{name} is not installed (python tests/library_suites.py "
                           f"--install installs what --nine needs)")
    root = sdist_cache() / f"{name}-{version}"
    marker = root / ".unpacked"
    if marker.exists():
        return Path(marker.read_text().strip())
    downloads = sdist_cache() / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    subprocess.run([python or sys.executable, "-m", "pip", "download", "-q",
                    "--disable-pip-version-check", "--no-binary", ":all:", "--no-deps",
                    "-d", str(downloads), f"{name}=={version}"], check=True)
    normalized = re.sub(r"[-_.]+", "[-_.]", re.escape(name).replace("\\", ""))
    archive = next(path for path in sorted(downloads.iterdir())
                   if re.match(rf"(?i){normalized}-{re.escape(version)}\.(tar\.gz|zip)$",
                               path.name))
    root.mkdir(parents=True, exist_ok=True)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as bundle:
            bundle.extractall(root)
    else:
        with tarfile.open(archive) as bundle:
            bundle.extractall(root, filter="data")
    (top,) = [path for path in root.iterdir() if path.is_dir()]
    marker.write_text(str(top))
    return top


def install_nine(python=None) -> None:
    """Install the nine libraries and what their tests import."""
    wanted = [name for name in NINE]
    for name in NINE:
        wanted += LIBRARIES[name].needs
    subprocess.run([python or sys.executable, "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", *wanted], check=True)


# -- the command line --------------------------------------------------------

def check_library(name, *, full=False, escapes=False, verbose=False, contexts=CONTEXTS,
                  out=print, timeout=3600) -> int:
    """Run one library plain and under ``contexts``; print a table row per
    context and return how many tests were lost unexplained."""
    library = LIBRARIES[name]
    targets = library.full if full else library.default
    with tempfile.TemporaryDirectory(prefix=f"cassette-suite-{name}-") as scratch:
        where = dict(cwd=scratch, pyargs=True, options=library.options, timeout=timeout)
        if library.sdist:
            # The source tree's own configuration and conftest apply.
            where = dict(cwd=unpacked_sdist(name), pyargs=False, junit_dir=scratch,
                         options=library.options, timeout=timeout)
        plain = run_pytest(targets, label="plain", **where)
        out(f"{name:16} plain: {len(plain.outcomes):5} tests, {len(plain.passed):5} passed "
            f"({plain.seconds:6.1f}s, cpu {plain.cpu_seconds:6.1f}s)")
        if not plain.outcomes:
            out(plain.output[-3000:])
            return 1
        bad = 0
        for context in contexts:
            dubbed = run_pytest(targets, context=context, escapes=escapes, label=context,
                                **where)
            lost = lost_tests(plain, dubbed)
            wrong = unexplained(name, lost)
            bad += len(wrong)
            extra = "" if dubbed.escapes is None else f", {dubbed.escapes} escapes"
            out(f"{'':16} {context.split(':')[-1]:11} {len(lost):4} lost ({len(wrong)} unexplained), "
                f"{dubbed.overdubbed} overdubbed{extra} "
                f"({dubbed.seconds:6.1f}s, cpu {dubbed.cpu_seconds:6.1f}s, "
                f"x{dubbed.cpu_seconds / max(plain.cpu_seconds, 1e-9):.1f})")
            if dubbed.overdubbed is None:
                out(crash_report(dubbed.output))
            for test, text in lost.items():
                reason = KNOWN_DIFFERENCES.get((name, test))
                out(f"    lost: {test}" + (f"  [known: {reason}]" if reason else ""))
                if verbose:
                    out("        " + text.replace("\n", "\n        "))
            if verbose and escapes:
                escape_lines = [line for line in dubbed.output.splitlines()
                                if line.startswith(("cassette: ", "  x"))]
                out("        " + "\n        ".join(escape_lines))
    return bad


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("libraries", nargs="*", help="library names (default: the "
                        "libraries whose wheels ship tests, or --nine's)")
    parser.add_argument("--full", action="store_true", help="the longer subsets")
    parser.add_argument("--nine", action="store_true", help="issue 35's nine libraries")
    parser.add_argument("--install", action="store_true",
                        help="first pip-install the nine libraries and their tests' needs")
    parser.add_argument("--escapes", action="store_true", help="count escapes too")
    parser.add_argument("--context", action="append", help="contexts: built-in names or "
                        "MODULE:NAME (default: noop, count; with --nine also "
                        "one_override:OneOverride)")
    parser.add_argument("-v", "--verbose", action="store_true", help="failures' first lines")
    parser.add_argument("--timeout", type=float, default=3600, metavar="SECONDS",
                        help="the longest one pytest run may take (default: 3600; sympy's "
                             "overdubbed runs need more on shared cores)")
    args = parser.parse_args(argv)
    if args.install:
        install_nine()
    names = args.libraries or (NINE if args.nine else WHEEL_LIBRARIES)
    runtime = "pure Python" if os.environ.get("CASSETTE_PURE_PYTHON") else "Cython core"
    print(f"Python {sys.version.split()[0]}, {runtime}", flush=True)
    bad = 0
    for name in names:
        bad += check_library(name, full=args.full or args.nine, escapes=args.escapes,
                             verbose=args.verbose, timeout=args.timeout,
                             contexts=tuple(args.context
                                            or (NINE_CONTEXTS if args.nine else CONTEXTS)),
                             out=lambda text: print(text, flush=True))
    print(f"{bad} unexplained lost test(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
