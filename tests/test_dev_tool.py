"""tools/dev.py, the README's two commands: the parts that keep a second run
on the same machine working."""

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "dev.py"


@pytest.fixture(scope="module")
def dev():
    spec = importlib.util.spec_from_file_location("cassette_dev_tool", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


needs_mount = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("mount") is None,
    reason="bind mounts need root and mount(8)")


@needs_mount
def test_a_mount_left_by_a_deleted_checkout_is_replaced(dev, tmp_path):
    # CI clones main again at the same path for each run; the Debian root's
    # mounts stay between runs, so the one of the checkout must be checked
    # against the directory there now, or the chroot sees the deleted one
    # and `python -m venv` cannot create anything in it.
    checkout, root = tmp_path / "checkout", tmp_path / "root"
    checkout.mkdir()
    root.mkdir()
    target = root / checkout.relative_to("/")
    try:
        with dev.mounted(root, [checkout]):
            pass
        assert str(target) in dev.mount_points()
        (checkout / "first").write_text("1")
        assert (target / "first").read_text() == "1"

        shutil.rmtree(str(checkout))
        checkout.mkdir()            # cloned again: a new directory, same path
        assert not dev.same_file(checkout, target)
        with dev.mounted(root, [checkout]):
            pass
        assert dev.same_file(checkout, target)
        (target / "second").write_text("2")
        assert (checkout / "second").read_text() == "2"

        with dev.mounted(root, [checkout]):     # a live mount is reused
            pass
        mounts = Path("/proc/self/mounts").read_text().split("\n")
        assert sum(1 for line in mounts if line.split()[1:2] == [str(target)]) == 1
    finally:
        dev.unmount_all(root)
    assert str(target) not in dev.mount_points()


def test_same_file_tells_a_directory_from_another(dev, tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    assert dev.same_file(first, first)
    assert dev.same_file(first, tmp_path / "b" / ".." / "a")
    assert not dev.same_file(first, second)
    assert not dev.same_file(first, tmp_path / "missing")


# -- the debug-build run ------------------------------------------------------

@pytest.fixture
def sink(tmp_path):
    """A file for a run's output."""
    with (tmp_path / "out").open("w") as output:
        yield output


def test_a_run_killed_by_a_signal_is_a_failed_run(dev, sink):
    # A Py_DEBUG interpreter aborts on a failed assertion or a negative
    # reference count; pytest then writes no report, or (if the abort came
    # after it wrote one) a report of passes: the run failed either way.
    aborting = [sys.executable, "-c", "import os; os.abort()"]
    result = dev.run_pytest(aborting, "3.14.0d cython", [], pure=False,
                            output=sink)
    assert (result.passed, result.failed, result.ok) == (0, 1, False)
    assert result.note == "crashed: SIGABRT"

    # Writes a JUnit report of 5 passed tests where --junitxml says, then aborts.
    reporting_then_aborting = [sys.executable, "-c", (
        "import os, sys\n"
        "path = sys.argv[sys.argv.index('--junitxml') + 1]\n"
        "open(path, 'w').write('<testsuites><testsuite tests=\"5\" failures=\"0\" "
        "errors=\"0\" skipped=\"0\"/></testsuites>')\n"
        "os.abort()\n")]
    result = dev.run_pytest(reporting_then_aborting, "3.14.0d cython", [], pure=False,
                            output=sink)
    assert (result.passed, result.failed, result.ok) == (5, 1, False)
    assert result.note == "crashed: SIGABRT"


def test_a_passing_run_and_a_run_without_tests_are_not_crashes(dev, sink):
    passing = [sys.executable, "-c", (
        "import sys\n"
        "path = sys.argv[sys.argv.index('--junitxml') + 1]\n"
        "open(path, 'w').write('<testsuite tests=\"3\" failures=\"1\" errors=\"0\" "
        "skipped=\"1\"/>')\n"
        "sys.exit(1)\n")]
    result = dev.run_pytest(passing, "3.12.0 cython", [], pure=False,
                            output=sink)
    assert (result.passed, result.failed, result.skipped, result.note) == (1, 1, 1, "")
    empty = [sys.executable, "-c", "import sys; sys.exit(5)"]
    result = dev.run_pytest(empty, "3.12.0 cython", [], pure=False,
                            output=sink)
    assert (result.passed, result.failed, result.note) == (0, 0, "no tests collected")


def test_runs_write_bytecode_files_whatever_the_callers_environment(dev, sink, monkeypatch):
    # Reports, as its count of passed tests, whether it may write bytecode.
    reporting = [sys.executable, "-c", (
        "import sys\n"
        "path = sys.argv[sys.argv.index('--junitxml') + 1]\n"
        "passed = int(not sys.dont_write_bytecode)\n"
        "open(path, 'w').write('<testsuite tests=\"%d\" failures=\"0\" errors=\"0\" "
        "skipped=\"0\"/>' % passed)\n")]
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    result = dev.run_pytest(reporting, "3.12.0 cython", [], pure=False, output=sink)
    assert (result.passed, result.failed) == (1, 0)


def test_the_debug_build_is_its_own_version_and_runs_the_cython_core_alone(dev):
    versions, jobs, rest = dev.parse_test_args(["-x"])
    assert versions == ["3.11", "3.12", "3.13", "3.14", "3.15", "3.14d"] and rest == ["-x"]
    versions, _, _ = dev.parse_test_args(["--python", "3.15d,3.12"])
    assert versions == ["3.15d", "3.12"]
    with pytest.raises(dev.DevError, match="unsupported --python '3.12d'"):
        dev.parse_test_args(["--python", "3.12d"])
    assert dev.run_kinds("3.14d") == (("cython", False),)
    assert dev.run_kinds("3.14d", named=True) == (("cython", False),)
    # The pure-Python runtime on every release but 3.14 (whose layer 3.15
    # extends), and there too when --python names it.
    assert {version for version in dev.SUPPORTED
            if ("pure", True) in dev.run_kinds(version)} == {"3.11", "3.12", "3.13", "3.15"}
    assert dev.run_kinds("3.14") == (("cython", False),)
    assert dev.run_kinds("3.14", named=True) == (("cython", False), ("pure", True))
    assert dev.soak_environment("3.14", "cython") == {"CASSETTE_SOAK_CALLS": "100000"}
    assert dev.soak_environment("3.14d", "cython") == {}
    assert dev.soak_environment("3.13", "pure") == {}
    debug_arguments = dev.run_arguments("3.14d", "cython", ["-x"])
    assert debug_arguments == ["--ignore=%s" % path for path in dev.DEBUG_IGNORED] + ["-x"]
    assert all(os.path.isfile(os.path.join(dev.ROOT, path)) for path in dev.DEBUG_IGNORED)
    # What checks the core against the interpreter's assertions stays.
    for kept in ("test_soak", "test_debug_build", "test_cpython_oracle", "test_verify",
                 "test_rewrite_stack", "test_lifetimes", "test_overdub_faithfulness"):
        assert "--ignore=tests/%s.py" % kept not in debug_arguments
    assert dev.run_arguments("3.14d", "cython", ["tests/test_soak.py"]) == ["tests/test_soak.py"]
    assert dev.run_arguments("3.11", "cython", ["-x"]) == ["-x"]


def test_each_release_runs_oracles_and_each_runtime_runs_them(dev):
    assert all(os.path.isfile(os.path.join(dev.ROOT, path)) for path in dev.ORACLE_FILES)
    for version in dev.SUPPORTED:
        for core in ("cython", "pure"):
            made = dev.ORACLE_RUNS.get((version, core), ())
            assert set(made) <= set(dev.ORACLE_FILES)
            expected = ["--ignore=%s" % path for path in dev.ORACLE_FILES if path not in made]
            assert dev.run_arguments(version, core, ["-q"]) == expected + ["-q"]
    # CPython's own tests on every release (3.14: in the debug run); every
    # oracle with the Cython core on two releases; the pure-Python runtime
    # makes CPython's tests and the libraries' suites.
    assert dev.CPYTHON_ORACLE not in dev.DEBUG_IGNORED
    cpython = {version for (version, _), made in dev.ORACLE_RUNS.items()
               if dev.CPYTHON_ORACLE in made}
    assert cpython | {"3.14"} == set(dev.SUPPORTED)
    everything = [version for (version, core), made in dev.ORACLE_RUNS.items()
                  if core == "cython" and set(made) == set(dev.ORACLE_FILES)]
    assert len(everything) >= 2
    pure = set().union(*(made for (_, core), made in dev.ORACLE_RUNS.items() if core == "pure"))
    assert {dev.CPYTHON_ORACLE, "tests/test_library_suites.py"} <= pure
    named = ["tests/test_real_libraries.py"]
    assert dev.run_arguments("3.13", "cython", named) == named


def test_the_longest_runs_start_first(dev):
    # A long run started last would be left alone at the end, one core idle.
    length = {(version, core): dev.expected_length(version, core, [])
              for version in dev.DEFAULT_VERSIONS for core, _ in dev.run_kinds(version)}
    debug = [length[version, "cython"] for version in dev.DEFAULT_DEBUG]
    oracles = [length[run] for run in dev.ORACLE_RUNS]
    rest = [minutes for run, minutes in length.items()
            if run not in dev.ORACLE_RUNS and run[0] not in dev.DEBUG_PYTHONS]
    assert min(debug) > max(oracles) and min(oracles) > max(rest)
    # Named tests make short runs, all alike.
    assert {dev.expected_length(version, "pure", ["tests/test_soak.py"])
            for version in dev.SUPPORTED} == {1}


def test_a_run_past_its_time_is_stopped_and_failed(dev, sink, monkeypatch):
    # Ignores SIGINT and starts a child that would outlive it: both are
    # stopped, and the run fails saying why.
    monkeypatch.setattr(dev, "RUN_TIMEOUT", 2)
    monkeypatch.setattr(dev, "INTERRUPT_GRACE", 1)
    stuck = [sys.executable, "-c", (
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(600)\n")]
    started = time.monotonic()
    result = dev.run_pytest(stuck, "3.12.0 cython", [], pure=False, output=sink)
    assert time.monotonic() - started < 60
    assert (result.passed, result.failed, result.ok) == (0, 1, False)
    assert result.note == "timed out after 2 s"
    sink.flush()
    child = int(open(sink.name).read().split()[0])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists("/proc/%d" % child):
        with open("/proc/%d/stat" % child) as stat:
            if stat.read().split()[2] == "Z":
                break
        time.sleep(0.1)
    assert not os.path.exists("/proc/%d" % child) or open(
        "/proc/%d/stat" % child).read().split()[2] == "Z"


def test_an_interpreter_says_whether_it_is_a_debug_build(dev):
    found = dev.probe(sys.executable)
    debug = hasattr(sys, "gettotalrefcount")
    assert found.version == "%d.%d" % sys.version_info[:2] + ("d" if debug else "")
    assert found.full_version == sys.version.split()[0] + ("d" if debug else "")
    assert found.debug is debug


def test_the_requirements_a_debug_venv_goes_without(dev):
    assert [dev.requirement_name(r) for r in
            ("numpy", "scipy>=1.10", "pandas[performance]", "pytest ; python_version>'3'",
             "Pytest-Benchmark~=4.0")] == [
        "numpy", "scipy", "pandas", "pytest", "pytest-benchmark"]


@pytest.fixture
def debian_root(dev, tmp_path, monkeypatch):
    """A stand-in Debian root whose dpkg lists what ``installed`` holds, and
    the commands dev.py runs in it (none is run)."""
    root = tmp_path / "debian-sid"
    root.mkdir()
    installed = set(dev.DEBIAN_PACKAGES)
    commands = []

    def fake_subprocess_run(cmd, **kwargs):
        assert cmd[:3] == ["chroot", str(root), "dpkg-query"]
        asked = cmd[5:]
        lines = ["%s ii " % name for name in asked if name in installed]
        return subprocess.CompletedProcess(cmd, 1 if len(lines) < len(asked) else 0,
                                           stdout="\n".join(lines) + "\n")

    def fake_run(cmd, **kwargs):
        commands.append([str(c) for c in cmd])
        if "install" in cmd:
            installed.update(c for c in cmd[cmd.index("install") + 1:] if not c.startswith("-"))
        return 0

    @contextlib.contextmanager
    def fake_mounted(where, paths):
        commands.append(["mounted", str(where)] + [str(p) for p in paths])
        yield

    monkeypatch.setattr(dev, "DEBIAN_ROOT", root)
    monkeypatch.setattr(dev.subprocess, "run", fake_subprocess_run)
    monkeypatch.setattr(dev, "run", fake_run)
    monkeypatch.setattr(dev, "mounted", fake_mounted)
    monkeypatch.setattr(dev.os, "geteuid", lambda: 0)
    return root, installed, commands


def test_a_debian_root_made_before_the_list_grew_gets_the_new_packages(dev, debian_root):
    root, installed, commands = debian_root
    assert "python3.14-dbg" in dev.DEBIAN_PACKAGES and "python3.15-dbg" in dev.DEBIAN_PACKAGES
    dev.ensure_debian_root()
    assert commands == []               # all there: nothing runs

    installed.difference_update({"python3.14-dbg", "python3.15-dbg"})
    assert dev.debian_packages_missing(root) == ["python3.14-dbg", "python3.15-dbg"]
    dev.ensure_debian_root()
    assert commands[0] == ["mounted", str(root), "/proc", "/dev"]
    assert commands[1][:2] == ["chroot", str(root)]
    assert commands[1][-2:] == ["python3.14-dbg", "python3.15-dbg"]
    assert "apt-get" in commands[1] and "install" in commands[1]
    assert dev.debian_packages_missing(root) == []
    del commands[:]
    dev.ensure_debian_root()
    assert commands == []


def test_stale_package_lists_are_refreshed_once(dev, debian_root, monkeypatch):
    root, installed, commands = debian_root
    installed.discard("python3.15-dbg")
    statuses = iter([100, 0, 0])        # install fails, update works, install works

    def fake_run(cmd, **kwargs):
        commands.append([str(c) for c in cmd])
        return next(statuses)

    monkeypatch.setattr(dev, "run", fake_run)
    dev.ensure_debian_root()
    assert [c[-1] for c in commands[1:]] == ["python3.15-dbg", "update", "python3.15-dbg"]

    commands.clear()
    monkeypatch.setattr(dev, "run", lambda cmd, **kwargs: commands.append(cmd) or 100)
    with pytest.raises(dev.DevError, match="apt-get install of python3.15-dbg"):
        dev.ensure_debian_root()
    assert [c[-1] for c in commands[1:]] == ["python3.15-dbg", "update"]   # no second install


def test_pytest_arguments_naming_tests_replace_the_whole_directory(dev):
    assert dev.names_paths(["-x", "tests/test_soak.py", "-k", "noop"])
    assert dev.names_paths(["tests/test_soak.py::test_many_overdubs_leak_nothing"])
    assert dev.names_paths(["tests/"])
    assert not dev.names_paths(["-k", "tests", "-p", "cassette", "-x"])
    assert not dev.names_paths(["tests/no_such_file.py"])
