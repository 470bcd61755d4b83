"""``python -m cassette trace|profile`` runs a program as ``python`` does.

Every test writes a real program to ``tmp_path``, runs it plainly
(``python script.py``) and under each command in a subprocess, and compares
what can be observed: standard output, standard error (the tool's own
report sent to a file with ``-o``), the exit status.  The subprocess
inherits ``CASSETTE_PURE_PYTHON``, so the suite checks both runtimes.
"""

import re

import pytest

from cli_support import run, write

COMMANDS = (["trace"], ["trace", "--ops"], ["profile"], ["profile", "--no-ops"])


def assert_same_run(tmp_path, program_args, stdin="", ran=True):
    """The program's stdout, stderr and exit status are the same plainly and
    under each command (the report goes to a file, not empty when the
    program ``ran``)."""
    plain = run(program_args, tmp_path, stdin)
    for command in COMMANDS:
        report = tmp_path / "report.out"
        overdubbed = run(["-m", "cassette", *command, "-o", str(report), *program_args],
                         tmp_path, stdin)
        assert overdubbed == plain, command
        assert report.stat().st_size > 0 or not ran
    return plain


ARGV_STDIN = """
    import sys
    print("argv", sys.argv[1:])
    print("argv0", sys.argv[0])
    print("path0", sys.path[0])
    data = sys.stdin.read()
    print("stdin", data.upper().split())
    print("name", __name__, "file", __file__)
    print("globals", sorted(k for k in globals() if k.startswith("__")))
    print("to stderr", file=sys.stderr)
    print(__loader__.__class__.__name__, __spec__, __package__, __doc__)
"""


def test_argv_stdin_output(tmp_path):
    write(tmp_path, "prog.py", ARGV_STDIN)
    code, out, err = assert_same_run(tmp_path, ["prog.py", "one", "--two", "-c"],
                                     stdin="red green\nblue\n")
    assert code == 0
    assert "argv ['one', '--two', '-c']" in out and "stdin ['RED', 'GREEN', 'BLUE']" in out
    assert f"path0 {tmp_path.resolve()}" in out and err == "to stderr\n"


def test_script_in_another_directory(tmp_path):
    write(tmp_path, "sub/prog.py", ARGV_STDIN)
    code, out, _ = assert_same_run(tmp_path, ["sub/prog.py"])
    assert "argv0 sub/prog.py" in out and f"path0 {tmp_path.resolve() / 'sub'}" in out


def test_uncaught_exception(tmp_path):
    write(tmp_path, "prog.py", """
        def inner(x):
            return {}[x]

        def outer():
            print("before")
            inner("key")

        outer()
    """)
    code, out, err = assert_same_run(tmp_path, ["prog.py"])
    assert code == 1 and out == "before\n"
    assert err.startswith("Traceback (most recent call last):\n") and "cassette" not in err
    assert err.rstrip().endswith("KeyError: 'key'") and 'line 3, in inner' in err


@pytest.mark.parametrize("source", ["print('ok')\ndef broken(:\n", "x = 1\n\tif x:\n"])
def test_program_that_does_not_compile(tmp_path, source):
    (tmp_path / "prog.py").write_text(source)
    code, out, err = assert_same_run(tmp_path, ["prog.py"], ran=False)
    assert code == 1 and out == "" and "Error" in err and "cassette" not in err


def test_exception_chain_and_excepthook(tmp_path):
    write(tmp_path, "prog.py", """
        import sys
        def hook(kind, value, tb):
            print("hook", kind.__name__, value.__cause__.__class__.__name__, tb.tb_frame.f_code.co_name)
        sys.excepthook = hook
        try:
            1 / 0
        except ZeroDivisionError as e:
            raise RuntimeError("wrapped") from e
    """)
    code, out, err = assert_same_run(tmp_path, ["prog.py"])
    assert (code, out, err) == (1, "hook RuntimeError ZeroDivisionError <module>\n", "")


def test_uncaught_keyboard_interrupt(tmp_path):
    """Python ends a run that a KeyboardInterrupt ends killed by SIGINT."""
    write(tmp_path, "prog.py", """
        def interrupted():
            raise KeyboardInterrupt
        print("started", flush=True)
        interrupted()
    """)
    code, out, err = assert_same_run(tmp_path, ["prog.py"])
    assert code == -2 and out == "started\n" and err.rstrip().endswith("KeyboardInterrupt")


@pytest.mark.parametrize("exit_call, status, stderr", [
    ("sys.exit(3)", 3, ""), ("sys.exit('bye')", 1, "bye\n"), ("sys.exit()", 0, ""),
    ("raise SystemExit(None)", 0, "")])
def test_sys_exit(tmp_path, exit_call, status, stderr):
    write(tmp_path, "prog.py", f"""
        import sys
        print("running")
        def stop():
            {exit_call}
        stop()
        print("not reached")
    """)
    assert assert_same_run(tmp_path, ["prog.py"]) == (status, "running\n", stderr)


def test_main_guard_and_module_body(tmp_path):
    write(tmp_path, "helper.py", """
        print("helper imported as", __name__)
        def twice(x):
            return 2 * x
    """)
    write(tmp_path, "prog.py", """
        import helper
        if __name__ == "__main__":
            print("main", helper.twice(21))
    """)
    assert assert_same_run(tmp_path, ["prog.py"]) == (
        0, "helper imported as helper\nmain 42\n", "")


def test_package_with_dash_m(tmp_path):
    write(tmp_path, "pkg/__init__.py", "print('package', __name__)\n")
    write(tmp_path, "pkg/__main__.py", """
        import sys
        from . import tools
        print("main of", __package__, __name__, __spec__.name, sys.argv[1:], tools.NAME)
        print("file", __file__ == sys.argv[0])
    """)
    write(tmp_path, "pkg/tools.py", "NAME = 'tools'\n")
    write(tmp_path, "pkg/run.py", "import sys\nprint('run', __name__, sys.argv[1:])\n")
    assert assert_same_run(tmp_path, ["-m", "pkg", "a", "b"]) == (
        0, "package pkg\nmain of pkg __main__ pkg.__main__ ['a', 'b'] tools\nfile True\n", "")
    assert assert_same_run(tmp_path, ["-m", "pkg.run", "x"]) == (
        0, "package pkg\nrun __main__ ['x']\n", "")


def test_dash_c(tmp_path):
    code = "import sys; print(sys.argv, repr(sys.path[0]), __name__, sorted(globals()))"
    assert assert_same_run(tmp_path, ["-c", code, "arg"])[0] == 0


def test_threads(tmp_path):
    write(tmp_path, "prog.py", """
        import threading
        results = {}
        def work(i):
            results[i] = sum(k * k for k in range(i * 100))
        threads = [threading.Thread(target=work, args=(i,), name=f"worker-{i}") for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        go = threading.Event()
        late = threading.Thread(target=lambda: go.wait() and print("late", threading.active_count()))
        late.start()        # not joined: the interpreter waits for it at exit
        print(sorted(results.items()), flush=True)
        go.set()
    """)
    code, out, err = assert_same_run(tmp_path, ["prog.py"])
    assert code == 0 and err == "" and out.endswith("\nlate 2\n")


def test_thread_calls_are_traced(tmp_path):
    """The worker's calls appear, prefixed by its name: work is called once
    in worker-0, and its generator expression once."""
    write(tmp_path, "prog.py", """
        import threading
        def work(i):
            return sum(k for k in range(i))
        t = threading.Thread(target=work, args=(3,), name="worker-0")
        t.start(); t.join()
    """)
    code, _, err = run(["-m", "cassette", "trace", "prog.py"], tmp_path)
    assert code == 0
    worker = [line for line in err.splitlines() if line.startswith("[worker-0] ")]
    assert sum("work(3)" in line for line in worker) == 1
    assert sum(" sum(" in line for line in worker) == 1


@pytest.mark.parametrize("args, message", [
    ([], "missing the command"),
    (["trace"], "missing the program"),
    (["profile", "--no-such-option", "prog.py"], "unrecognized arguments"),
    (["trace", "does_not_exist.py"], "can't open file"),
    (["profile", "-m", "no_such_module_here"], "No module named"),
    (["profile", "-s", "size", "prog.py"], "invalid choice"),
    (["trace", "--depth", "0", "prog.py"], "positive integer"),
    (["bogus"], "invalid choice"),
])
def test_bad_usage(tmp_path, args, message):
    write(tmp_path, "prog.py", "print('ran')\n")
    code, out, err = run(["-m", "cassette", *args], tmp_path)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err


def test_double_dash_ends_the_options(tmp_path):
    write(tmp_path, "prog.py", "import sys\nprint(sys.argv)\n")
    code, out, err = run(["-m", "cassette", "trace", "-o", "t.txt", "--", "prog.py", "--ops"],
                         tmp_path)
    assert (code, out, err) == (0, "['prog.py', '--ops']\n", "")


def test_help(tmp_path):
    for args in (["--help"], ["trace", "--help"], ["profile", "--help"]):
        code, out, err = run(["-m", "cassette", *args], tmp_path)
        assert code == 0 and err == "" and "usage: python -m cassette" in out


def test_everything_after_the_program_is_the_programs(tmp_path):
    """As for python and cProfile: options after the script, ``-m module``
    or ``-c code`` — ``-h``, ``-o``, ``--sort`` included — are the
    program's arguments, not cassette's."""
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/run.py", "import sys\nprint(sys.argv[1:])\n")
    write(tmp_path, "prog.py", "import sys\nprint(sys.argv[1:])\n")
    options = ["-h", "-o", "x.txt", "--sort", "calls", "--depth", "2", "-m", "y"]
    for program in (["-m", "pkg.run"], ["-mpkg.run"], ["prog.py"],
                    ["-c", "import sys; print(sys.argv[1:])"]):
        for command in ("trace", "profile"):
            code, out, err = run(["-m", "cassette", command, "--format", "json",
                                  *program, *options], tmp_path)
            assert code == 0, err
            assert out.splitlines()[0] == repr(options)
            assert not (tmp_path / "x.txt").exists()
    code, out, err = run(["-m", "cassette", "trace", "-o", "t.txt", "--depth", "1",
                          "prog.py", "-o", "u.txt"], tmp_path)
    assert (code, out, err) == (0, "['-o', 'u.txt']\n", "")
    assert (tmp_path / "t.txt").exists() and not (tmp_path / "u.txt").exists()


def test_a_program_that_closes_standard_output_still_gets_its_report(tmp_path):
    """json.tool closes sys.stdout when it is done: the profile still
    appears, after the program's own output (cProfile loses it)."""
    (tmp_path / "f.json").write_text('{"b": 1, "a": 2}')
    plain = run(["-m", "json.tool", "--sort-keys", "f.json"], tmp_path)
    code, out, err = run(["-m", "cassette", "profile", "-m", "json.tool", "--sort-keys",
                          "f.json"], tmp_path)
    assert (code, err) == (0, "")
    assert out.startswith(plain[1]) and "function calls in" in out[len(plain[1]):]


def test_version(tmp_path):
    code, out, err = run(["-m", "cassette", "--version"], tmp_path)
    assert (code, err) == (0, "") and re.fullmatch(r"cassette \d+\.\d+\.\d+\S*\n", out)


def test_the_tools_keep_nothing_of_the_program_alive(tmp_path):
    """What the program drops dies as it does plainly: a callable object, a
    closure and the list it holds, a builtin bound to a dict — none is kept
    by the report's tree or the trace's verdicts — and objects still
    alive at the end are not kept into the interpreter's finalization (a
    process pool's weak-reference callback then finds its module's
    globals gone: "Exception ignored in: … weakref_cb")."""
    script = write(tmp_path, "drops.py", """
        import concurrent.futures, gc, weakref

        class Call:
            def __call__(self):
                return 2

        def make():
            big = [0] * 10
            def f():
                return len(big)
            return f, weakref.ref(big) if False else None

        def square(x):
            return x * x

        def run():
            c = Call(); c()
            instance = weakref.ref(c)
            f, _ = make(); f()
            closure = weakref.ref(f)
            d = {}
            get = d.get; get(1)
            del c, f, get, d
            gc.collect()
            return instance() is None, closure() is None

        if __name__ == "__main__":
            print(run())
            with concurrent.futures.ProcessPoolExecutor(1) as pool:
                print(list(pool.map(square, [1, 2])))
    """)
    plain = assert_same_run(tmp_path, [str(script)])
    assert plain[1].splitlines()[0] == "(True, True)"
