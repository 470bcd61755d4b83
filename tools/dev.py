#!/usr/bin/env python3
"""The single developer entry point for cassette (stdlib only, Python >= 3.8).

Usage (from anywhere; paths are relative to the repository root)::

    python3 tools/dev.py demo                  # build, then run examples/demo.py
    python3 tools/dev.py test [OPTIONS] [PYTEST ARGS...]
    python3 tools/dev.py bench [PYTEST ARGS...]

``demo``
    Uses the first supported interpreter found (3.11, then 3.12, then 3.13),
    creates or reuses ``.venv/<X.Y>``, installs cassette editable with the
    ``test`` extra, and runs ``python examples/demo.py`` in it.

``test``
    For each of Python 3.11, 3.12, 3.13, 3.14 and 3.15: creates or reuses
    ``.venv/<X.Y>``, installs cassette editable with the ``test`` extra, and
    runs ``python -m pytest tests/`` twice: once with the Cython core and once
    with ``CASSETTE_PURE_PYTHON=1`` (the pure-Python runtime) — on 3.14
    (``PURE_ON_REQUEST``) the Cython core's run alone, unless ``--python``
    names it: 3.15's layer is 3.14's with its own changes.  Then once
    more, with the Cython core, on ``python3.14d``: CPython 3.14 built with
    ``Py_DEBUG`` (Debian's ``python3.14-dbg``; its assertions and
    reference-count checks abort the interpreter where a release build goes
    on with a corrupt stack or a freed object), in ``.venv/3.14d``, row
    ``3.14.Nd cython`` of the table.  Its venv has cassette (the core built
    for it: ``_core.cpython-314d-*.so``) and the ``test`` extra less numpy,
    scipy, pandas and pydantic (``NO_DEBUG_WHEELS``: they publish wheels for release
    builds only; the tests needing them skip, saying so).  That run leaves
    out ``DEBUG_IGNORED`` (mypy on the typed API, the tests of this
    tool, the plugin's sample suites, the command line's programs and
    flame graphs, the version layer's reading of instructions, and the
    oracles replaying third-party code beside other tools or in
    subprocesses: minutes on a debug build, and made by the release
    builds).  ``3.15d`` runs the same way when
    named (``--python 3.15d``).  The third-party oracles (``ORACLE_FILES``: CPython's own tests and
    libraries' workloads and suites, overdubbed; minutes each) run in the
    runs ``ORACLE_RUNS`` names: all of them with the Cython core on 3.11 and
    3.15; CPython's own tests on every release (the core on 3.12, the debug
    run on 3.14); those and the libraries' suites with the pure-Python
    runtime on 3.13; the other runs leave them out (eleven runs of every
    oracle took an hour on two cores).  Which files a run leaves out is
    ``left_out(version, core)``; naming test files runs them wherever they
    are named.  The installs,
    then the runs, go one per core at a time (at most four; ``--jobs N`` sets
    it), each run's output printed whole under its header when it ends (with
    one job, live).
    At the end a table summarises the runs, and the last line printed
    is exactly ``N passed, M failed`` totalled over all runs (CI reads it).
    The exit status is non-zero if any run failed or any interpreter is
    missing.  A run that produced no test results (missing interpreter, failed
    install, pytest usage error) counts as one failure, so that line
    never reads ``0 failed`` for a failing command; a run killed by a signal
    (a crash, a debug build's abort) is failed whatever its report says
    (``crashed: SIGABRT`` in the table).  A run still going after
    ``RUN_TIMEOUT`` (40 minutes) is stuck: it is interrupted (pytest then
    reports what it got to), killed with what it started, and failed
    (``timed out`` in the table); a single test running ten minutes has its
    threads' stacks dumped first (pytest's ``faulthandler_timeout``).
    pytest's exit status 5 ("no tests collected") counts as a successful
    run with 0 passed.  The runs write bytecode files (``__pycache__``,
    ignored by git) even when ``PYTHONDONTWRITEBYTECODE`` is set.

    The soak test (tests/test_soak.py) makes 10**5 calls per context in
    3.14's Cython run (``SOAK_FULL_RUNS``; it reads ``CASSETTE_SOAK_CALLS``),
    its smaller default count in the others (in the debug run, checking the
    total reference count as well).

    Options (everything else, and everything after ``--``, goes to pytest;
    paths under tests/ among them replace the whole of tests/)::

        --python 3.12        restrict to these versions (repeat, or 3.12,3.13);
                             3.14d, 3.15d: the debug builds
        --jobs N, -j N       make N runs at a time

    Example: ``python3 tools/dev.py test --python 3.12 -k dispatch -x``.

    As root with apt-get, it first installs Debian's ``chromium`` where it
    is missing (on this machine, and in the Debian root below), for the
    tests that open the HTML flame graph in a browser; if that fails they
    skip, saying so.

    Where no CPython 3.14 or 3.15 is installed (pyenv here has 3.11-3.13),
    they come from Debian's unstable suite: the first use makes a Debian
    root file system with them in ``~/.cache/cassette-dev/debian-sid``
    (``CASSETTE_DEBIAN_ROOT`` overrides; debootstrap and apt, about a minute,
    as root), and every later run reuses it, installing there first any of
    ``DEBIAN_PACKAGES`` it lacks (a root made before that list grew).  The
    debug builds ``python3.14d`` and ``python3.15d`` come from there too
    (``python3.14-dbg``; add ``gdb`` there by hand to debug an abort).  Their
    venvs are ``.venv/3.14``, ``.venv/3.15``, ``.venv/3.14d`` and
    ``.venv/3.15d``; what runs in them runs in that root through
    chroot, with the checkout, /tmp, /dev and /proc bind-mounted at their own
    paths for the duration of the command (and unmounted after it, also on
    failure or Ctrl-C).

``bench``
    Runs ``python -m pytest bench/ --benchmark-only`` in ``.venv/3.12`` (or
    the version ``--python X.Y`` names), installed with the ``bench`` extra
    (added to whatever it already has).

Interpreter discovery, for each version X.Y (or X.Yd, a debug build: one
with ``sys.gettotalrefcount``):

1. ``CASSETTE_PYTHONS`` (comma-separated interpreter paths), if set, is the
   only source: each path is asked for its version;
2. otherwise every ``pythonX.Y`` on ``PATH`` that actually runs (a pyenv shim
   for a version that is not active does not);
3. otherwise ``pyenv prefix <latest installed X.Y.Z>``/bin/pythonX.Y.

Installs are cached: a stamp in each venv records a hash of ``pyproject.toml``,
``setup.py`` and the Cython sources under ``cassette/`` (.pyx/.pxd/.pxi/.h)
plus the installed extras.  The project is reinstalled (and its extension
rebuilt, with ``CASSETTE_FORCE_CYTHON=1`` so Cython never skips it) only when
that hash changes, the extras grow, or the built extension is missing.  Pure
Python changes need no reinstall: the install is editable.
"""

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENVS = ROOT / ".venv"
SUPPORTED = ("3.11", "3.12", "3.13", "3.14", "3.15")
# Interpreters built with Py_DEBUG (CPython's assertions and reference-count
# checks, sys.gettotalrefcount()), named by their version and "d" as their
# executables are (python3.14d).  They run the Cython core's suite only: the
# core is what they check, and the pure-Python runtime is plain Python.
DEBUG_PYTHONS = ("3.14d", "3.15d")
# Which of them `test` runs unless --python names versions.
DEFAULT_DEBUG = ("3.14d",)
DEFAULT_VERSIONS = SUPPORTED + DEFAULT_DEBUG
# Requirements of the `test` extra that publish binary wheels only for release
# builds (no debug ABI, cpython-314d) and would take an hour to compile: a
# debug venv goes without them, and the tests needing them skip, saying so.
NO_DEBUG_WHEELS = ("numpy", "scipy", "pandas", "pydantic")
# The soak test's calls per context (tests/test_soak.py) in the runs named
# here; every other run makes the test's smaller default count (the debug
# run among them, where the test also checks the total reference count).
SOAK_FULL_RUNS = {("3.14", "cython")}
SOAK_FULL_CALLS = "100000"
# The third-party oracles: CPython's and libraries' own code replayed
# plainly and overdubbed, in process or in subprocesses (minutes each).
# ORACLE_RUNS says which run makes which: all four in the Cython core's
# runs on 3.11 and 3.15 (3.15's layer is 3.14's with its own changes);
# CPython's own tests (the language, the version layer's business) on
# every release — with the core on 3.12, in the debug run on 3.14 —; and
# the pure-Python runtime, on 3.13, CPython's tests and the libraries'
# suites (it has no routing, so the oracles beside other tools and the
# escape counts of the real-library workloads say less of it).  Every other
# run makes the rest of the suite; runs making every oracle each took a
# quarter of an hour on two cores.
ORACLE_FILES = ("tests/test_beside_other_tools.py", "tests/test_cpython_oracle.py",
                "tests/test_library_suites.py", "tests/test_real_libraries.py")
CPYTHON_ORACLE = "tests/test_cpython_oracle.py"
ORACLE_RUNS = {
    ("3.11", "cython"): ORACLE_FILES,
    ("3.15", "cython"): ORACLE_FILES,
    ("3.12", "cython"): (CPYTHON_ORACLE,),
    ("3.13", "pure"): (CPYTHON_ORACLE, "tests/test_library_suites.py"),
}
# What a debug build's run leaves out: tests that do not run the core in
# their process and cost minutes there (mypy checking the typed API, pure
# Python on a debug build; the developer tool itself; the pytest plugin's
# sample suites and the command line's programs, each an interpreter of
# its own, and the flame graph's pages in a browser; the version layer's
# reading of instructions, pure Python), and the oracles that replay
# third-party code in subprocesses or need numpy, scipy and pandas (which
# it lacks); CPython's own tests it makes.
DEBUG_IGNORED = ("tests/test_typing.py", "tests/test_dev_tool.py",
                 "tests/test_pytest_plugin.py", "tests/test_cli_script.py",
                 "tests/test_cli_profile.py", "tests/test_cli_trace.py",
                 "tests/test_cli_docs.py", "tests/test_flamegraph.py",
                 "tests/test_versions.py") + tuple(
    path for path in ORACLE_FILES if path != CPYTHON_ORACLE)
# A run still going after this long is stuck: it is stopped (with whatever
# it started) and fails, its output printed as far as it got.  pytest's
# faulthandler_timeout (pyproject.toml) has dumped the stuck test's stack.
RUN_TIMEOUT = 40 * 60
# How long an interrupted run has to write its report before it is killed.
INTERRUPT_GRACE = 30
BENCH_VERSION = "3.12"
# Files whose change requires reinstalling (and so rebuilding) the project.
BUILD_INPUTS = ("pyproject.toml", "setup.py")
BUILD_INPUT_GLOBS = ("*.pyx", "*.pxd", "*.pxi", "*.h")
STAMP_NAME = "cassette-dev-stamp.json"
# Bump to force every venv to reinstall after a change to the install recipe.
RECIPE = 1

# CPython releases that pyenv cannot provide here come from Debian's unstable
# suite.  They need a newer C library than the host's, so they live in a
# Debian root file system of their own and run there through chroot, with the
# checkout, /tmp, /dev (with /dev/pts, a mount of its own, which a terminal
# needs) and /proc bind-mounted at the same paths.  Made once
# (about a minute: debootstrap, then apt) and kept; needs root.  Each run
# checks that the root has every one of DEBIAN_PACKAGES and installs what it
# lacks, so a root made before the list grew gets the new ones.
DEBIAN_PYTHONS = ("3.14", "3.15")
DEBIAN_ROOT = Path(os.environ.get("CASSETTE_DEBIAN_ROOT")
                   or Path.home() / ".cache" / "cassette-dev" / "debian-sid")
DEBIAN_PACKAGES = ["gcc", "libc6-dev", "ca-certificates"] + [
    name % version for version in DEBIAN_PYTHONS
    for name in ("python%s", "python%s-dev", "python%s-venv", "libpython%s-testsuite",
                 "python%s-dbg")]     # python3.14d, with its headers
DEBIAN_SHARED = (ROOT, Path("/tmp"), Path("/dev"), Path("/proc")) + tuple(
    path for path in (Path("/dev/pts"),) if path.is_dir())
# The browser tests/test_flamegraph.py opens the HTML flame graph in, on the
# host and in the Debian root (whose interpreters see only the root's files).
BROWSER_PACKAGE = "chromium"

# Asked of every candidate interpreter: version, real executable, and whether
# it can make a venv with pip in it.
PROBE = (
    "import sys, importlib.util as u;"
    "print('%d.%d' % sys.version_info[:2] + ('d' if hasattr(sys, 'gettotalrefcount') else ''));"
    "print(sys.version.split()[0] + ('d' if hasattr(sys, 'gettotalrefcount') else ''));"
    "print(sys.executable);"
    "print(int(bool(u.find_spec('venv') and u.find_spec('ensurepip'))))"
)


class DevError(Exception):
    """A failure with a message for the developer (no traceback)."""


def say(*parts):
    print(*parts, flush=True)


def banner(text, char="="):
    say("\n" + char * 78 + "\n" + text + "\n" + char * 78)


def run(cmd, timeout=None, **kwargs):
    """Run a command with inherited stdio; return its exit status, or None
    when it was still going after ``timeout`` seconds: it is then
    interrupted (SIGINT: pytest reports what it got to), and killed with
    whatever it started if it has not ended INTERRUPT_GRACE seconds later."""
    sys.stdout.flush()
    sys.stderr.flush()
    cmd = [str(c) for c in cmd]
    if timeout is None:
        return subprocess.call(cmd, **kwargs)
    process = subprocess.Popen(cmd, start_new_session=True, **kwargs)
    try:
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(INTERRUPT_GRACE)
            except subprocess.TimeoutExpired:
                pass
            return None
    finally:
        # Its own session, so that the kill reaches what it started: ended,
        # timed out or interrupted (Ctrl-C reaches only this process then).
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        process.wait()


def capture(cmd):
    """Run a short query command; return its stdout, or None if it could not
    run or exited non-zero."""
    try:
        out = subprocess.run(
            [str(c) for c in cmd], stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
            universal_newlines=True, timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


# --------------------------------------------------------------------------
# Interpreter discovery


class Interpreter:
    def __init__(self, version, full_version, executable, prefix=()):
        self.version = version            # "3.12" ("3.14d": a Py_DEBUG build)
        self.full_version = full_version  # "3.12.1" ("3.14.2d")
        self.executable = executable      # real path of the base interpreter
        self.prefix = list(prefix)        # what runs its programs (chroot), or nothing

    @property
    def debug(self):
        """Whether this is a Py_DEBUG build (python3.14d)."""
        return self.version.endswith("d")

    def command(self, program, *args):
        """The command line running ``program`` (this interpreter or one of
        its venvs) with ``args``."""
        return self.prefix + [program] + list(args)


def probe(exe, prefix=()):
    """Return an Interpreter for ``exe``, or None if it does not run or
    cannot create a venv."""
    lines = (capture(list(prefix) + [exe, "-c", PROBE]) or "").split()
    if len(lines) != 4 or lines[3] != "1":
        return None
    return Interpreter(lines[0], lines[1], lines[2], prefix)


def pyenv_command():
    found = shutil.which("pyenv")
    if found:
        return found
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidate = os.path.join(root, "bin", "pyenv")
    return candidate if os.access(candidate, os.X_OK) else None


def from_pyenv(version):
    pyenv = pyenv_command()
    if not pyenv:
        return None
    bare = (capture([pyenv, "versions", "--bare", "--skip-aliases"]) or "").split()
    pattern = re.compile(r"^%s\.(\d+)$" % re.escape(version))
    installed = [name for name in bare if pattern.match(name)]
    installed.sort(key=lambda name: int(pattern.match(name).group(1)), reverse=True)
    for name in installed:  # newest patch release first
        prefix = (capture([pyenv, "prefix", name]) or "").strip()
        if prefix:
            found = probe(Path(prefix) / "bin" / ("python" + version))
            if found and found.version == version:
                return found
    return None


def find_interpreter(version):
    """Return the Interpreter for ``version`` ("3.12"), or raise DevError."""
    override = os.environ.get("CASSETTE_PYTHONS")
    if override is not None:
        paths = [p.strip() for p in override.split(",") if p.strip()]
        for path in paths:
            found = probe(path)
            if found and found.version == version:
                return found
        raise DevError(
            "Python %s is missing: none of CASSETTE_PYTHONS=%r is a working "
            "Python %s with venv/ensurepip" % (version, override, version))

    name = "python" + version
    for directory in os.get_exec_path():
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            found = probe(candidate)
            if found and found.version == version:
                return found

    found = from_pyenv(version)
    if found:
        return found
    if version.rstrip("d") in DEBIAN_PYTHONS:
        return from_debian(version)
    raise DevError(
        "Python %s is missing: no working %s on PATH and no pyenv-installed "
        "%s.x (install one, e.g. `pyenv install %s`, or point CASSETTE_PYTHONS "
        "at it)" % (version, name, version, version))


# --------------------------------------------------------------------------
# Interpreters from Debian unstable, in a root file system of their own


def debian_prefix():
    """What runs a program inside the Debian root, in the caller's directory
    (the checkout is mounted at its own path there)."""
    return ["chroot", str(DEBIAN_ROOT), "env", "--chdir=%s" % ROOT]


def host_debian_mirror():
    """The Debian mirror the host's apt sources use (its package registry)."""
    for source in sorted(Path("/etc/apt").glob("sources.list*")) + sorted(
            Path("/etc/apt/sources.list.d").glob("*")):
        try:
            text = source.read_text()
        except OSError:
            continue
        for url in re.findall(r"(?:^URIs:|^deb)\s+(?:\[[^]]*\]\s+)?(\S+)", text, re.M):
            if "security" not in url and "debian" in url:
                return url
    return "http://deb.debian.org/debian"


def debian_packages_missing(root):
    """Those of DEBIAN_PACKAGES that dpkg in ``root`` does not list as
    installed (all of them if dpkg cannot tell)."""
    try:
        listed = subprocess.run(
            ["chroot", str(root), "dpkg-query", "-W", "-f", "${Package} ${db:Status-Abbrev}\n"]
            + DEBIAN_PACKAGES, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL, universal_newlines=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return list(DEBIAN_PACKAGES)
    installed = {line.split()[0] for line in listed.split("\n")
                 if len(line.split()) > 1 and line.split()[1] == "ii"}
    return [name for name in DEBIAN_PACKAGES if name not in installed]


def install_debian_packages(root, packages):
    """apt-get install ``packages`` in ``root`` (into which the caller has
    mounted /proc and /dev), refreshing stale package lists (Debian
    unstable's go stale within days) once if the first try fails."""
    apt = ["chroot", root, "apt-get", "-qq", "-o", "DPkg::Lock::Timeout=300"]
    quiet = dict(stdout=subprocess.DEVNULL, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    install = apt + ["install", "-y", "--no-install-recommends"] + list(packages)
    status = run(install, **quiet)
    if status != 0 and run(apt + ["update"], **quiet) == 0:
        status = run(install, **quiet)
    if status != 0:
        raise DevError("apt-get install of %s in the Debian root %s failed (exit %d)"
                       % (" ".join(packages), root, status))


def ensure_debian_root():
    """Make DEBIAN_ROOT hold Debian unstable with DEBIAN_PACKAGES (the
    DEBIAN_PYTHONS, their debug builds among them)."""
    if DEBIAN_ROOT.is_dir():
        missing = debian_packages_missing(DEBIAN_ROOT)
        if not missing:
            return
        if os.geteuid() != 0:
            raise DevError("the Debian root %s lacks %s, and installing them needs root"
                           % (DEBIAN_ROOT, " ".join(missing)))
        say("dev.py: installing %s in the Debian root %s" % (", ".join(missing), DEBIAN_ROOT))
        with mounted(DEBIAN_ROOT, [Path("/proc"), Path("/dev")]):
            install_debian_packages(DEBIAN_ROOT, missing)
        return
    if os.geteuid() != 0:
        raise DevError("Python %s come from Debian unstable in a chroot at %s, which "
                       "needs root to make (or point CASSETTE_PYTHONS at them)"
                       % (" and ".join(DEBIAN_PYTHONS), DEBIAN_ROOT))
    if not shutil.which("debootstrap"):
        say("dev.py: installing debootstrap")
        if run(["apt-get", "install", "-y", "-qq", "debootstrap"]) != 0:
            raise DevError("apt-get could not install debootstrap")
    partial = DEBIAN_ROOT.with_name(DEBIAN_ROOT.name + ".partial")
    unmount_all(partial)
    shutil.rmtree(str(partial), ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    mirror = host_debian_mirror()
    say("dev.py: making a Debian unstable root in %s from %s" % (partial, mirror))
    if run(["debootstrap", "--variant=minbase", "sid", partial, mirror],
           stdout=subprocess.DEVNULL) != 0:
        raise DevError("debootstrap of Debian unstable into %s failed" % partial)
    shutil.copy("/etc/resolv.conf", str(partial / "etc" / "resolv.conf"))
    bundle = os.environ.get("PIP_CERT") or "/etc/ssl/certs/ca-certificates.crt"
    say("dev.py: installing %s there" % ", ".join(DEBIAN_PACKAGES))
    with mounted(partial, [Path("/proc"), Path("/dev")]):
        install_debian_packages(partial, DEBIAN_PACKAGES)
    if os.path.exists(bundle):      # the host's CA bundle (a proxy's, say)
        shutil.copy(bundle, str(partial / "etc" / "ssl" / "certs" / "ca-certificates.crt"))
    unmount_all(partial)            # nobody else uses a root being made
    partial.rename(DEBIAN_ROOT)


def mount_points():
    """The mount points the kernel lists now (``/proc/self/mounts``): unlike
    ``os.path.ismount`` it sees a bind mount from the same file system."""
    try:
        lines = Path("/proc/self/mounts").read_text().split("\n")
    except OSError:
        return set()
    return {line.split()[1] for line in lines if len(line.split()) > 1}


@contextlib.contextmanager
def mounted(root, paths):
    """Bind-mount ``paths`` into ``root`` at the same paths for the block.

    The mounts stay when the block ends: another dev.py run (a second
    checkout's tests, CI beside a session) may be using the same root, and
    unmounting ``/proc`` or ``/tmp`` from under it breaks its interpreters.
    A mount already there is reused if it still shows ``path``; one left by
    a run whose checkout was deleted since and cloned again at the same
    path shows the deleted directory (where nothing can be created), so it
    is replaced."""
    present = mount_points()
    for path in paths:
        target = root / path.relative_to("/")
        if str(target) in present:
            if same_file(path, target):
                continue
            say("dev.py: %s shows an older %s (deleted since); mounting it again"
                % (target, path))
            run(["umount", "--lazy", target])
        target.mkdir(parents=True, exist_ok=True)
        if run(["mount", "--bind", path, target]) != 0:
            raise DevError("could not bind-mount %s into %s" % (path, root))
    yield


def same_file(a, b):
    """Whether paths ``a`` and ``b`` are one file (a bind mount's two ends)."""
    try:
        first, second = os.stat(str(a)), os.stat(str(b))
    except OSError:
        return False
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def unmount_all(root):
    """Unmount whatever is mounted below ``root`` (a run killed mid-way)."""
    points = mount_points()
    for point in sorted((p for p in points if p.startswith(str(root) + "/")), reverse=True):
        run(["umount", "--lazy", point])


def ensure_browser(root=None):
    """Install Debian's chromium on this machine (or, given ``root``, in that
    Debian root, into which the caller has mounted /proc and /dev) when it
    is missing and we are root with apt-get.  Best-effort: a failure prints
    a line, and the tests that need a browser skip saying why."""
    where = "the Debian root" if root else "this machine"
    if root:
        installed = (root / "usr" / "bin" / BROWSER_PACKAGE).exists()
    else:
        installed = shutil.which(BROWSER_PACKAGE) is not None
    if installed:
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        say("dev.py: %s is not installed on %s and installing it needs root and apt-get; "
            "the browser tests will skip" % (BROWSER_PACKAGE, where))
        return
    say("dev.py: installing %s on %s for the browser tests" % (BROWSER_PACKAGE, where))
    apt = (["chroot", root] if root else []) + ["apt-get", "-qq", "-o", "DPkg::Lock::Timeout=300"]
    quiet = dict(stdout=subprocess.DEVNULL, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    install = apt + ["install", "-y", "--no-install-recommends", BROWSER_PACKAGE]
    # Package lists go stale (Debian unstable's within days): refresh on failure.
    if run(install, **quiet) != 0 and (run(apt + ["update"], **quiet) != 0
                                       or run(install, **quiet) != 0):
        say("dev.py: could not install %s on %s; the browser tests will skip"
            % (BROWSER_PACKAGE, where))


def from_debian(version):
    ensure_debian_root()
    found = probe("/usr/bin/python" + version, ["chroot", str(DEBIAN_ROOT)])
    if not found or found.version != version:
        raise DevError("Python %s in the Debian root %s does not run" % (version, DEBIAN_ROOT))
    found.prefix = debian_prefix()      # run where the caller is: needs debian_mounts
    return found


# --------------------------------------------------------------------------
# Virtual environments and installs


def venv_python(venv):
    return venv / "bin" / "python"


def venv_info(interp, venv):
    """(full_version, EXT_SUFFIX) of a venv's interpreter, or None if broken."""
    code = ("import sys, sysconfig; print(sys.version.split()[0] + "
            "('d' if hasattr(sys, 'gettotalrefcount') else '')); "
            "print(sysconfig.get_config_var('EXT_SUFFIX'))")
    lines = (capture(interp.command(venv_python(venv), "-c", code)) or "").split()
    return tuple(lines) if len(lines) == 2 else None


def ensure_venv(interp):
    """Create or reuse ``.venv/<X.Y>``; return (venv path, EXT_SUFFIX)."""
    venv = VENVS / interp.version
    info = venv_info(interp, venv) if venv.exists() else None
    if info is None or info[0] != interp.full_version:
        if venv.exists():
            say("dev.py: recreating %s (broken or made by another Python %s)"
                % (venv.relative_to(ROOT), interp.version))
            shutil.rmtree(str(venv))
        say("dev.py: creating %s with %s (Python %s)"
            % (venv.relative_to(ROOT), interp.executable, interp.full_version))
        made = subprocess.run(
            [str(c) for c in interp.command(interp.executable, "-m", "venv", venv)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        if made.returncode != 0:
            raise DevError("could not create %s: %s"
                           % (venv, " | ".join(made.stdout.strip().split("\n")[-5:])))
        info = venv_info(interp, venv)
        if info is None:
            raise DevError("the new venv %s does not run" % venv)
    return venv, info[1]


def build_inputs_hash(full_version):
    digest = hashlib.sha256()
    digest.update(("recipe %d python %s\n" % (RECIPE, full_version)).encode())
    files = [ROOT / name for name in BUILD_INPUTS]
    for pattern in BUILD_INPUT_GLOBS:
        files.extend(sorted((ROOT / "cassette").rglob(pattern)))
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0")
        digest.update(path.read_bytes() if path.exists() else b"<missing>")
        digest.update(b"\0")
    return digest.hexdigest()


#: setuptools' editable mode: "compat" puts the source tree on sys.path
#: through a .pth file, which tools that read site-packages (mypy) follow;
#: the default, an import hook, they cannot.
EDITABLE_MODE = "compat"


def ensure_installed(interp, extras):
    """Make ``.venv/<X.Y>`` hold an up-to-date editable install of cassette
    with at least ``extras``; return the command prefix running the venv's
    python (a list)."""
    venv, ext_suffix = ensure_venv(interp)
    stamp_path = venv / STAMP_NAME
    try:
        stamp = json.loads(stamp_path.read_text())
    except (OSError, ValueError):
        stamp = {}
    have = set(stamp.get("extras", ()))
    wanted = sorted(have | set(extras))
    current = build_inputs_hash(interp.full_version)
    extension = ROOT / "cassette" / ("_core" + ext_suffix)
    if (stamp.get("hash") == current and have.issuperset(extras) and extension.exists()
            and stamp.get("editable_mode") == EDITABLE_MODE):
        return interp.command(venv_python(venv))

    if stamp_path.exists():
        stamp_path.unlink()
    env = dict(os.environ, CASSETTE_FORCE_CYTHON="1")
    if interp.debug:
        # The extras, less what has no wheel for a debug build.
        requirements = [name for name in extra_requirements(interp, venv, wanted)
                        if requirement_name(name) not in NO_DEBUG_WHEELS]
        say("dev.py: installing cassette (editable) and %s into %s (a debug build: "
            "without %s, which publish no wheels for it)"
            % (" ".join(requirements), venv.relative_to(ROOT), ", ".join(NO_DEBUG_WHEELS)))
        targets = ["--editable", "."] + requirements
    else:
        say("dev.py: installing cassette[%s] (editable) into %s"
            % (",".join(wanted), venv.relative_to(ROOT)))
        targets = ["--editable", ".[%s]" % ",".join(wanted) if wanted else "."]
    status = run(interp.command(venv_python(venv), "-m", "pip", "install", "-qq",
                  "--disable-pip-version-check",
                  "--config-settings", "editable_mode=%s" % EDITABLE_MODE, *targets),
                 cwd=str(ROOT), env=env)
    if status != 0:
        raise DevError("pip install of cassette into %s failed (exit %d)"
                       % (venv.relative_to(ROOT), status))
    if not extension.exists():
        raise DevError("the install did not build %s" % extension.relative_to(ROOT))
    stamp_path.write_text(json.dumps({"hash": current, "extras": wanted,
                                      "editable_mode": EDITABLE_MODE}) + "\n")
    return interp.command(venv_python(venv))


def extra_requirements(interp, venv, extras):
    """The requirements pyproject.toml lists in ``extras`` (read by the
    venv's Python, >= 3.11, which has tomllib)."""
    code = ("import json, pathlib, sys, tomllib; extras = tomllib.loads("
            "pathlib.Path('pyproject.toml').read_text())['project']['optional-dependencies']; "
            "print(json.dumps([r for e in sys.argv[1:] for r in extras[e]]))")
    out = subprocess.run(
        [str(c) for c in interp.command(venv_python(venv), "-c", code, *extras)],
        cwd=str(ROOT), stdout=subprocess.PIPE, universal_newlines=True)
    if out.returncode != 0:
        raise DevError("could not read the extras %s of pyproject.toml" % ", ".join(extras))
    return json.loads(out.stdout)


def requirement_name(requirement):
    """The distribution a requirement names ("numpy>=2" -> "numpy")."""
    return re.split(r"[\s\[<>=!~;@]", requirement, maxsplit=1)[0].lower()


# --------------------------------------------------------------------------
# pytest runs


class RunResult:
    def __init__(self, label, passed=0, failed=0, skipped=0, note="", detail=""):
        self.label = label
        self.passed = passed
        self.failed = failed
        self.skipped = skipped
        self.note = note
        self.detail = detail        # why a run could not start, whole

    @property
    def ok(self):
        return self.failed == 0


def junit_counts(path):
    """(tests, failures+errors, skipped) from a pytest JUnit XML file."""
    root = ET.parse(str(path)).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    tests = failed = skipped = 0
    for suite in suites:
        tests += int(suite.get("tests", 0))
        failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped += int(suite.get("skipped", 0))
    return tests, failed, skipped


def run_pytest(python, label, pytest_args, pure, output=None, environment=None):
    """Run pytest (``python``: the command prefix running the venv's
    interpreter; ``environment``: variables to set for it) and return a
    RunResult; its output goes to ``output`` (a file) when given, else live
    to the terminal.  A run killed by a signal (a Py_DEBUG interpreter
    aborts on a failed assertion or a negative reference count) fails."""
    env = dict(os.environ)
    env.pop("CASSETTE_PURE_PYTHON", None)
    # Without bytecode files (__pycache__, ignored by git) each test process
    # and every interpreter the tests start compiles cassette and the tests
    # again: about an eighth of a run (3.13 Cython: 110 s, 97 s with them).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if pure:
        env["CASSETTE_PURE_PYTHON"] = "1"
    env.update(environment or {})
    with tempfile.TemporaryDirectory(prefix="cassette-dev-") as tmp:
        xml_path = os.path.join(tmp, "junit.xml")
        streams = {} if output is None else {"stdout": output, "stderr": subprocess.STDOUT}
        paths = [] if names_paths(pytest_args) else ["tests/"]
        status = run(python + ["-m", "pytest"] + paths + ["--junitxml", xml_path]
                     + list(pytest_args), timeout=RUN_TIMEOUT, cwd=str(ROOT), env=env,
                     **streams)
        try:
            tests, failed, skipped = junit_counts(xml_path)
        except (OSError, ET.ParseError):
            tests = failed = skipped = 0
    result = RunResult(label, tests - failed - skipped, failed, skipped)
    if status is None:
        result.failed = max(failed, 1)
        result.note = "timed out after %d s" % RUN_TIMEOUT
    elif status < 0:
        # Killed by a signal: whatever the report says, the run failed.
        result.failed = max(failed, 1)
        result.note = "crashed: %s" % signal_name(-status)
    elif status == 5 and failed == 0:
        result.note = "no tests collected"
    elif status != 0 and failed == 0:
        # pytest failed without a failing test: usage error, crash, interrupt.
        result.failed = 1
        result.note = "pytest exited with status %d" % status
    return result


def names_paths(pytest_args):
    """Whether the pytest arguments name files or directories under tests/
    (then they, not all of tests/, are what runs): paths with a slash or
    ending in .py, which an option's value (``-k tests``) is not."""
    tests = (ROOT / "tests").resolve()
    for arg in pytest_args:
        name = arg.split("::")[0]
        if arg.startswith("-") or not ("/" in name or name.endswith(".py")):
            continue
        path = (ROOT / name).resolve()
        if path.exists() and (path == tests or tests in path.parents):
            return True
    return False


def signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return "signal %d" % number


def print_summary(results):
    banner("Summary")
    rows = [("run", "passed", "failed", "skipped", "result")]
    for r in results:
        rows.append((r.label, str(r.passed), str(r.failed), str(r.skipped),
                     ("ok" if r.ok else "FAIL") + (" (%s)" % r.note if r.note else "")))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        say("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[4])
    say()
    # Repeated here, at the end, because a log is often read from its tail.
    for detail in sorted({r.detail for r in results if r.detail}):
        say("dev.py: ERROR: %s" % detail)
    # The closing line CI reads: exactly "N passed, M failed", last of all.
    say("%d passed, %d failed" % (sum(r.passed for r in results),
                                 sum(r.failed for r in results)))


# --------------------------------------------------------------------------
# Commands


def parse_test_args(args):
    """Split ``test`` arguments into (versions, jobs, pytest args); the
    versions are DEFAULT_VERSIONS unless --python names some."""
    versions = []
    rest = []
    jobs = default_jobs()
    args = list(args)
    while args:
        arg = args.pop(0)
        if arg == "--":
            rest.extend(args)
            break
        if arg in ("--jobs", "-j") or arg.startswith("--jobs="):
            value = arg.split("=", 1)[1] if "=" in arg else (args.pop(0) if args else "")
            if not value.isdigit() or int(value) < 1:
                raise DevError("--jobs needs a positive number, e.g. --jobs 2")
            jobs = int(value)
        elif arg == "--python" or arg.startswith("--python="):
            if arg == "--python":
                if not args:
                    raise DevError("--python needs a version, e.g. --python 3.12")
                value = args.pop(0)
            else:
                value = arg.split("=", 1)[1]
            for version in value.split(","):
                version = version.strip()
                if version not in SUPPORTED + DEBUG_PYTHONS:
                    raise DevError("unsupported --python %r; choose from %s"
                                   % (version, ", ".join(SUPPORTED + DEBUG_PYTHONS)))
                if version not in versions:
                    versions.append(version)
        else:
            rest.append(arg)
    return versions or list(DEFAULT_VERSIONS), jobs, rest


def default_jobs():
    """How many runs go at once: one per core, at most four (each run is
    one busy process; memory, not cores, limits more)."""
    return max(1, min(os.cpu_count() or 1, 4))


def cmd_test(args):
    versions, jobs, pytest_args = parse_test_args(args)
    ensure_browser()
    with contextlib.ExitStack() as mounts:
        results = run_versions(versions, jobs, pytest_args, mounts)
    print_summary(results)
    return 0 if all(r.ok for r in results) else 1


RUN_KINDS = (("cython", False), ("pure", True))
CYTHON_RUN_KINDS = (("cython", False),)
# Releases whose pure-Python run only --python naming them makes: the
# pure-Python runtime on 3.14 runs what it runs on 3.15, whose layer is
# 3.14's with its own changes (about 100 s of a CI run on this schedule).
PURE_ON_REQUEST = ("3.14",)


def run_kinds(version, named=False):
    """``(core, pure)`` of each run of ``version``: both runtimes, the
    Cython core's alone for a debug build and (unless ``named`` by
    --python) for the PURE_ON_REQUEST."""
    if version in DEBUG_PYTHONS or (version in PURE_ON_REQUEST and not named):
        return CYTHON_RUN_KINDS
    return RUN_KINDS


def left_out(version, core):
    """The test files the run of ``version`` (3.14d: a debug build) with
    ``core`` ("cython" or "pure") leaves out."""
    if version in DEBUG_PYTHONS:
        return DEBUG_IGNORED
    made = ORACLE_RUNS.get((version, core), ())
    return tuple(path for path in ORACLE_FILES if path not in made)


def run_arguments(version, core, pytest_args):
    """The pytest arguments of a run: ``--ignore`` for what it leaves out
    (nothing when the arguments name what to run), then ``pytest_args``."""
    if names_paths(pytest_args):
        return list(pytest_args)
    return ["--ignore=%s" % path for path in left_out(version, core)] + list(pytest_args)


def soak_environment(version, core):
    """The variables a run gets for tests/test_soak.py: the full count of
    calls in the SOAK_FULL_RUNS, the test's own default elsewhere."""
    if (version, core) in SOAK_FULL_RUNS:
        return {"CASSETTE_SOAK_CALLS": SOAK_FULL_CALLS}
    return {}


# Roughly how long runs take on a 2-core machine, in minutes: a debug
# build's; what the oracles add; the rest of the suite in each runtime;
# what the full soak adds.  Only their order matters (run_in_parallel).
EXPECTED_MINUTES = {"debug": 20, "oracles": 9, "cython": 5, "pure": 5, "soak": 2}


def expected_length(version, core, pytest_args):
    """Roughly how long the run of ``version`` with ``core`` takes
    (EXPECTED_MINUTES), for making the longest first."""
    if names_paths(pytest_args):
        return 1
    if version in DEBUG_PYTHONS:
        return EXPECTED_MINUTES["debug"]
    minutes = EXPECTED_MINUTES[core]
    minutes += EXPECTED_MINUTES["oracles"] * len(ORACLE_RUNS.get((version, core), ())) / 4
    if (version, core) in SOAK_FULL_RUNS:
        minutes += EXPECTED_MINUTES["soak"]
    return minutes


def run_title(interp, pure):
    return "Python %s%s, %s core%s   (.venv/%s)" % (
        interp.full_version, " (Py_DEBUG)" if interp.debug else "",
        "pure-Python" if pure else "Cython",
        "   CASSETTE_PURE_PYTHON=1" if pure else "", interp.version)


def run_versions(versions, jobs, pytest_args, mounts):
    """The runs of each version (``run_kinds``: both runtimes, or the
    Cython core's alone), mounting what the Debian interpreters need on
    ``mounts`` once they exist, ``jobs`` at a time; the RunResults, in the
    order of the versions."""
    named = versions != list(DEFAULT_VERSIONS)     # by --python
    runs = []           # (title, label, python, pure, environment, pytest args,
                        #  expected length) of each run
    failed = {}         # index in the table -> RunResult of a version that could not run
    found = []          # (version, interpreter, error): discovery goes one at a time,
    debian_mounted = False      # since the first Debian one may build the root
    for version in versions:
        try:
            interp = find_interpreter(version)
            if interp.prefix and not debian_mounted:
                mounts.enter_context(mounted(DEBIAN_ROOT, list(DEBIAN_SHARED)))
                debian_mounted = True
                ensure_browser(DEBIAN_ROOT)
            say("dev.py: Python %s is %s (%s)"
                % (version, interp.executable, interp.full_version))
            found.append((version, interp, None))
        except DevError as exc:
            found.append((version, None, exc))
    # The installs go `jobs` at a time: each builds its own extension
    # (setup.py keeps Cython's output apart per interpreter).
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        installs = [pool.submit(ensure_installed, interp, ["test"]) if interp else None
                    for _, interp, _ in found]
    for (version, interp, error), install in zip(found, installs):
        try:
            if error is not None:
                raise error
            python = install.result()
        except DevError as exc:
            say("dev.py: ERROR: %s" % exc)
            for core, _ in run_kinds(version, named):
                failed[len(runs) + len(failed)] = RunResult(
                    "%s %s" % (version, core), failed=1, note=str(exc).split(":")[0],
                    detail=str(exc))
            continue
        for core, pure in run_kinds(version, named):
            runs.append((run_title(interp, pure), "%s %s" % (interp.full_version, core),
                         python, pure, soak_environment(version, core),
                         run_arguments(version, core, pytest_args),
                         expected_length(version, core, pytest_args)))
    total = len(runs) + len(failed)
    if jobs <= 1 or len(runs) <= 1:
        done = []
        for number, (title, label, python, pure, environment, args, _) in enumerate(runs, 1):
            banner("[%d/%d] %s" % (number, total, title))
            done.append(run_pytest(python, label, args, pure, environment=environment))
    else:
        done = run_in_parallel(runs, jobs, total)
    ran = iter(done)
    return [failed[i] if i in failed else next(ran) for i in range(total)]


def run_in_parallel(runs, jobs, total):
    """Make ``runs`` ``jobs`` at a time, each writing to a file of its own;
    print each run's output whole, under its header, as it finishes."""
    import concurrent.futures
    import threading
    printing = threading.Lock()
    say("dev.py: %d runs, %d at a time; each run's output follows when it ends"
        % (len(runs), jobs))

    def one(number, title, label, python, pure, environment, pytest_args, _):
        with tempfile.TemporaryFile(mode="w+") as output:
            result = run_pytest(python, label, pytest_args, pure, output, environment)
            output.seek(0)
            text = output.read()
        with printing:
            banner("[%d/%d] %s" % (number, total, title))
            sys.stdout.write(text)
            say()
        return result

    # The longest first, so that no long run is left alone at the end.
    order = sorted(range(len(runs)), key=lambda i: -runs[i][6])
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {i: pool.submit(one, i + 1, *runs[i]) for i in order}
        return [futures[i].result() for i in range(len(runs))]


def first_interpreter():
    missing = []
    for version in SUPPORTED:
        try:
            return find_interpreter(version)
        except DevError as exc:
            missing.append(str(exc))
    raise DevError("no supported Python found:\n  " + "\n  ".join(missing))


def cmd_demo(args):
    interp = first_interpreter()
    python = ensure_installed(interp, ["test"])
    banner("examples/demo.py on Python %s" % interp.full_version)
    return run(python + ["examples/demo.py"] + list(args), cwd=str(ROOT))


def cmd_bench(args):
    versions, _jobs, pytest_args = parse_test_args(args)
    if len(versions) > 1 and versions != list(DEFAULT_VERSIONS):
        raise DevError("bench runs on one Python at a time (--python X.Y)")
    version = versions[0] if versions != list(DEFAULT_VERSIONS) else BENCH_VERSION
    with contextlib.ExitStack() as mounts:
        interp = find_interpreter(version)
        if interp.prefix:
            mounts.enter_context(mounted(DEBIAN_ROOT, list(DEBIAN_SHARED)))
        python = ensure_installed(interp, ["bench"])
        banner("benchmarks on Python %s" % interp.full_version)
        status = run(python + ["-m", "pytest", "bench/", "--benchmark-only"] + pytest_args,
                     cwd=str(ROOT))
    if status == 5:
        say("dev.py: no benchmarks collected under bench/")
        return 0
    return status


COMMANDS = {"demo": cmd_demo, "test": cmd_test, "bench": cmd_bench}


def main(argv):
    if not argv or argv[0] in ("-h", "--help", "help"):
        say(__doc__)
        return 0 if argv else 2
    command = COMMANDS.get(argv[0])
    if command is None:
        say("dev.py: unknown command %r; choose from %s"
            % (argv[0], ", ".join(sorted(COMMANDS))))
        return 2
    try:
        return command(argv[1:])
    except DevError as exc:
        say("dev.py: ERROR: %s" % exc)
        return 1
    except KeyboardInterrupt:
        say("dev.py: interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
