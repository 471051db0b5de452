"""`neural-dap debug`: the terminal front end, a DAP client of the server, scripted with --do."""

from __future__ import annotations

import os
import subprocess
import sys

from .conftest import EXAMPLES


def debug(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "neural_dap", "debug", *args], capture_output=True, text=True, timeout=120
    )


def test_a_scripted_session_prints_every_stop_with_its_line_and_changed_locals():
    out = debug(str(EXAMPLES / "bubble_sort.py"), "--do", "b 16; c; c; n; back; rc; rc; p items; where; q")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "[entry] bubble_sort.py:1 in <module>"
    assert "breakpoint set at bubble_sort.py:16" in out.stdout
    stops = [line for line in lines if line.startswith("[")]
    assert stops[1:] == [
        "[breakpoint] bubble_sort.py:16 in bubble_sort",  # c: the first swap
        "[breakpoint] bubble_sort.py:16 in bubble_sort",  # c: the second
        "[step] bubble_sort.py:17 in bubble_sort",  # n
        "[breakpoint] bubble_sort.py:16 in bubble_sort",  # back (a step onto a breakpoint's line)
        "[breakpoint] bubble_sort.py:16 in bubble_sort",  # rc: the first swap again
        "[entry] bubble_sort.py:1 in <module>",  # rc: nothing before it, back to the start
    ]
    # the second swap shows as a changed local, beside the value the stepped-over call returned
    assert "       | items = [2, 4, 5, 1]   (return) swap = [2, 4, 5, 1]" in lines
    # p items at the very start: the live program answers, as Python would
    assert "error: NameError: name 'items' is not defined" in lines
    assert "> <module> at bubble_sort.py:1" in lines


def test_a_breakpoint_in_a_worker_thread_shows_the_worker_and_steps_stay_there(tmp_path):
    """The terminal follows the thread a stop is in: its frames, its locals, steps in it; `threads`
    lists every thread with where it stands."""
    program = tmp_path / "pool.py"
    program.write_text(
        "from concurrent.futures import ThreadPoolExecutor\n\n\n"
        "def square(n):\n    result = n * n\n    return result\n\n\n"
        "with ThreadPoolExecutor(max_workers=1) as pool:\n    print(list(pool.map(square, range(3))))\n"
    )
    out = debug(str(program), "--do", "b 6; c; threads; where; n; q")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "[breakpoint] pool.py:6 in square (thread 2)" in lines
    assert "       | n = 0   result = 0" in lines  # the worker's locals, not the main thread's
    assert "  1: MainThread  <module> at line 10" in lines
    assert "> 2: ThreadPoolExecutor-0_0  square at line 6" in lines
    assert "> square at pool.py:6" in lines
    assert "[step] pool.py:5 in square (thread 2)" in lines  # next: the worker's next call


def test_a_function_entry_with_a_conditional_breakpoint_runs_to_the_end():
    out = debug(
        str(EXAMPLES / "recursion.py"), "--entry", "factorial", "--args", "4", "--do", "b 7 if n == 2; c; p rest; c; c"
    )
    assert out.returncode == 0, out.stderr
    assert "[breakpoint] recursion.py:7 in factorial" in out.stdout and "       | n = 2" in out.stdout
    assert "[end] recursion.py:8 in factorial" in out.stdout
    assert out.stdout.rstrip().endswith("[exited] the program finished (exit code 0)")


def test_program_arguments_and_errors():
    out = debug(str(EXAMPLES / "exceptions.py"), "--do", "c")
    assert "skipped 'x'" in out.stdout and "[end]" in out.stdout
    out = debug("/no/such.py")
    assert out.returncode == 2 and "no such program" in out.stderr


def test_the_program_reads_what_is_piped_into_the_front_end_and_replays_read_it_again(tmp_path):
    program = tmp_path / "greeter.py"
    program.write_text(
        'name = input("name? ")\nline = input("words? ")\nwords = len(line.split())\nprint(f"hi {name}: {words}")\n'
    )
    out = subprocess.run(
        [sys.executable, "-m", "neural_dap", "debug", "--stdin", "-", str(program), "--do", "b 4; c; p name; p words"],
        input="Ada\none two three\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "name? words? hi Ada: 3" in out.stdout  # the program's own output, as it ran
    assert "[breakpoint] greeter.py:4 in <module>" in out.stdout
    assert "'Ada'" in out.stdout.splitlines() and "3" in out.stdout.splitlines()  # p name; p words (a replay)


def test_in_a_terminal_the_program_reads_what_the_user_types_then_the_debugger_does(tmp_path):
    import os
    import pty
    import select
    import time

    program = tmp_path / "greeter.py"
    program.write_text('name = input("name? ")\nline = input("words? ")\nprint(f"hi {name}: {len(line.split())}")\n')
    master, slave = pty.openpty()  # a terminal, as a person at it has one
    process = subprocess.Popen(
        [sys.executable, "-m", "neural_dap", "debug", str(program)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    screen = b""

    def shows(text: str) -> None:
        nonlocal screen
        end = time.monotonic() + 60
        while text.encode() not in screen:
            ready, _, _ = select.select([master], [], [], max(0.0, end - time.monotonic()))
            assert ready, f"{text!r} never appeared; the screen: {screen.decode(errors='replace')}"
            screen += os.read(master, 4096)

    try:
        shows("name? ")
        os.write(master, b"Ada\r")
        shows("words? ")
        os.write(master, b"one two\r")
        shows("hi Ada: 2")  # the program's output, as it ran
        shows("(nd) ")  # the recording is over: the debugger reads the terminal now
        os.write(master, b"c\r")
        shows("line = 'one two'")
        os.write(master, b"q\r")
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)


def test_output_written_in_pieces_stays_on_its_line(tmp_path):
    """pytest's progress dots (`print(".", end="")` a test at a time) read as one line, as in a
    plain run; the debugger's own lines start on a line of their own."""
    program = tmp_path / "dots.py"
    program.write_text(
        "import sys\nfor k in range(3):\n    sys.stdout.write('.')\n    sys.stdout.flush()\nprint(' 3 passed')\n"
    )
    out = debug(str(program), "--do", "c; c")
    assert out.returncode == 0, out.stderr
    assert "... 3 passed" in out.stdout.splitlines()


def test_run_with_a_script_sets_its_breakpoints_before_the_program_runs(tmp_path):
    """`--run --do "b 3; ..."`: the breakpoints the script starts with are set before the run, so it
    stops there (it ran to the end before)."""
    program = tmp_path / "loop.py"
    program.write_text("total = 0\nfor i in range(3):\n    total += i\nprint(total)\n")
    out = debug(str(program), "--run", "--do", "b 3; c; q")
    assert out.returncode == 0, out.stderr
    stops = [line for line in out.stdout.splitlines() if line.startswith("[")]
    assert stops[:2] == ["[breakpoint] loop.py:3 in <module>", "[breakpoint] loop.py:3 in <module>"]


def test_numpy_loads_without_spinning_threads_and_the_program_keeps_the_users_environment(tmp_path):
    """OpenBLAS's idle threads spun a core at every launch; the one-thread setting that stops them
    lives only while numpy loads, so the program debugged sees the environment as the user set it."""
    program = tmp_path / "env.py"
    program.write_text("import os\nprint('blas', os.environ.get('OPENBLAS_NUM_THREADS'))\n")
    for users in (None, "3"):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
        if users is not None:
            env["OPENBLAS_NUM_THREADS"] = users
        out = subprocess.run(
            [sys.executable, "-m", "neural_dap", "debug", str(program), "--do", "c"],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        assert f"blas {users}" in out.stdout, out.stdout + out.stderr
    if (os.cpu_count() or 1) > 1:  # (one core: OpenBLAS starts no thread either way)
        threads = (
            "from neural_dap.cli.main import load_numpy_with_one_blas_thread as load; load();"
            " import os; print(len(os.listdir('/proc/self/task')))"
        )
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
        out = subprocess.run([sys.executable, "-c", threads], capture_output=True, text=True, timeout=60, env=env)
        assert out.stdout.split() == ["1"], out.stdout + out.stderr
