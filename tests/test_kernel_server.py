"""The kernels nbval starts under test (tests/kernel_server.py): forked
from a server that imported torch, yet set up as a new `python -m
ipykernel_launcher` would be, and stopped and interrupted like one."""
import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from jupyter_client.manager import KernelManager
from nbval.kernel import CURRENT_ENV_KERNEL_NAME, NbvalKernelspecManager

import kernel_server

BOOK = os.path.join(os.path.dirname(os.path.dirname(__file__)), "book")
pytestmark = pytest.mark.skipif(not kernel_server.wanted(),
                                reason="kernels start from scratch here")

PROBE = """import os, sys
print(os.getcwd(), sys.path[0], os.getppid(), os.environ["PROBE"],
      "torch" in sys.modules, "helpers" in sys.modules,
      not {"serve", "preload", "kernels", "conn"} & set(dir()),
      __import__("gc").get_freeze_count() > 100_000)"""


def run(client, code, timeout=30):
    """(printed text, the reply's status) of one execution."""
    msg_id = client.execute(code)
    printed = []
    while True:
        msg = client.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            printed.append(msg["content"]["text"])
        if (msg["msg_type"], msg["content"].get("execution_state")) == (
                "status", "idle"):
            break
    return "".join(printed), reply_to(client, msg_id, timeout)


def reply_to(client, msg_id, timeout=30):
    """The shell reply to msg_id (kernel_info replies that wait_for_ready
    asked for more than once, on a busy machine, come first)."""
    while True:
        reply = client.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"]


def wait_until_running(client, msg_id, timeout=30):
    while True:
        msg = client.get_iopub_msg(timeout=timeout)
        if (msg["parent_header"].get("msg_id"), msg["msg_type"]) == (
                msg_id, "execute_input"):
            return


@contextlib.contextmanager
def started(**env):
    """(manager, client) of a kernel started as nbval starts one (its spec,
    a notebook's folder), with `env` added to this process's environment;
    shut down afterwards."""
    manager = KernelManager(kernel_name=CURRENT_ENV_KERNEL_NAME,
                            kernel_spec_manager=NbvalKernelspecManager())
    manager.start_kernel(cwd=BOOK, env={**os.environ, **env})
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=30)
        yield manager, client
    finally:
        client.stop_channels()
        if manager.is_alive():
            manager.shutdown_kernel(now=True)


@pytest.fixture
def kernel():
    """A kernel from the server, with PROBE=yes in its environment."""
    assert kernel_server.SERVER.ready()
    with started(PROBE="yes") as (manager, client):
        yield manager, client


def test_a_kernel_is_forked_but_set_up_as_a_new_one(kernel):
    manager, client = kernel
    assert manager.kernel_spec.argv[1:3] == [kernel_server.__file__,
                                              "launch"]
    printed, reply = run(client, PROBE)
    assert reply["status"] == "ok", reply
    cwd, path0, parent, probe, torch, helpers, fresh, frozen = (
        printed.split())
    assert (cwd, path0) == (BOOK, BOOK)  # `import helpers` works
    assert int(parent) == kernel_server.SERVER.pid  # forked
    assert probe == "yes"  # the environment nbval gave it
    assert (torch, helpers, fresh) == ("True", "False", "True")
    assert frozen == "True"  # what the server imported: kernel_server.freeze
    if os.path.isdir("/proc/self/fd"):  # its output goes where its stand-in's
        stand_in = manager.provisioner.process.pid
        printed, _ = run(client, "import os; print(*(os.readlink("
                                 "f'/proc/self/fd/{n}') for n in (1, 2)), "
                                 "sep='|')")
        assert printed.rstrip("\n").split("|") == [
            os.readlink(f"/proc/{stand_in}/fd/{n}") for n in (1, 2)]


ASKS = """import json, multiprocessing, os, subprocess, sys
def ask(*args, **env):
    done = subprocess.run([sys.executable, *args], capture_output=True,
                          text=True, env={**os.environ, **env})
    return done.stdout.split() or [done.stderr[-300:]]
probe = "import os, sys; print(os.getppid(), 'torch' in sys.modules)"
with multiprocessing.get_context("spawn").Pool(1) as pool:
    spawned = pool.apply(os.getppid) == os.getpid()
print(json.dumps([
    ask("-c", probe), ask("-c", probe, TORCH_ALLOW_TF32_CUBLAS_OVERRIDE="1"),
    ask("-c", probe, MPLBACKEND="agg"), ask("-m", "this")[:2], spawned]))"""


def test_a_kernels_own_python_is_forked_where_it_starts_up_the_same(kernel):
    # a notebook's `subprocess.run([sys.executable, "-c", ...])`
    # (chapters 6 and 8): forked like the kernel, unless its environment
    # changes what Python or torch read as they start; anything but -c or
    # a script is the plain python
    _, client = kernel
    printed, reply = run(client, ASKS, timeout=60)
    assert reply["status"] == "ok", reply
    forked, override, backend, other, spawned = json.loads(printed)
    server = str(kernel_server.SERVER.pid)
    assert forked == [server, "True"]
    assert override == backend == [server, "False"]  # exec'd in the fork
    assert other == ["The", "Zen"]  # `python -m this`
    # multiprocessing's children are the kernel's own, started from the
    # real python: spawn hands them descriptors that a process forked
    # from the server could not inherit
    assert spawned is True


def test_an_interrupt_reaches_the_kernel(kernel):
    manager, client = kernel
    # stop_on_error=False: the request after it is not aborted, whenever it
    # arrives (ipykernel aborts what is queued behind a failed request)
    msg_id = client.execute("import time; time.sleep(60)",
                            stop_on_error=False)
    wait_until_running(client, msg_id)
    time.sleep(0.5)
    manager.interrupt_kernel()  # SIGINT to the stand-in, as nbval sends
    reply = reply_to(client, msg_id)
    assert reply["ename"] == "KeyboardInterrupt", reply
    printed, reply = run(client, "print('still here')")
    assert printed == "still here\n", (printed, reply)


def test_killing_the_stand_in_kills_the_kernel(kernel):
    manager, client = kernel
    printed, _ = run(client, "import os; print(os.getpid())")
    pid = int(printed)
    manager.shutdown_kernel(now=True)  # SIGKILL to the stand-in only
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    pytest.fail(f"kernel {pid} outlived its stand-in")


def test_without_a_server_the_stand_in_is_a_plain_kernel(monkeypatch):
    monkeypatch.delenv(kernel_server.SOCKET_ENV, raising=False)
    with started() as (manager, client):
        printed, _ = run(client, "import os, sys; print(os.getpid(), "
                                 "'torch' in sys.modules)")
        pid, torch = printed.split()
        assert int(pid) == manager.provisioner.process.pid  # exec'd
        assert torch == "False"


ROOT = os.path.dirname(BOOK)


@pytest.mark.parametrize("args, here, asked", [
    (["tests", "book"], ROOT, True),            # the testpaths
    (["."], ROOT, True),
    ([".."], BOOK, True),                       # above the book
    (["book/05_hooks.ipynb::Cell 3"], ROOT, True),
    (["05_hooks.ipynb"], BOOK, True),
    (["tests/test_layers.py"], ROOT, False),
    (["tests", "tests/test_hooks.py::test_x"], ROOT, False),
    (["book/_ext"], ROOT, False),               # inside, without notebooks
])
def test_a_server_is_started_only_when_a_chapter_is_asked_for(args, here,
                                                            asked):
    assert kernel_server.notebooks_asked(args, here) is asked


def test_kernels_come_from_the_one_server_the_controller_started():
    if "PYTEST_XDIST_WORKER" not in os.environ:
        pytest.skip("only pytest-xdist's workers share a server")
    kernel_server.SERVER.ready()
    assert kernel_server.SERVER.process is None  # not this worker's own
    assert kernel_server.SERVER.pid != os.getpid()
    assert os.path.exists(os.environ[kernel_server.SOCKET_ENV])


def test_without_a_listening_server_kernels_start_plain_and_it_is_said(
        tmp_path, monkeypatch):
    path = tmp_path / "socket"
    (tmp_path / "socket.unavailable").touch()
    (tmp_path / "socket.log").write_text("ImportError: no torch\n")
    monkeypatch.setenv(kernel_server.SOCKET_ENV, str(path))
    with pytest.warns(UserWarning, match="(?s)from scratch.*no torch"):
        assert kernel_server.Server().ready(timeout=5) is False
    assert kernel_server.SOCKET_ENV not in os.environ  # plain kernels


# -- `python ARGS` forked: kernel_server.python_command -----------------------

SAYS = """import atexit, os, sys
atexit.register(print, "exit handlers ran")
print(os.getppid(), os.getcwd(), repr(sys.path[0]), sys.argv[1:],
      __name__, "torch" in sys.modules,
      not {"serve", "preload", "kernels", "conn"} & set(dir()))
sys.exit(int(sys.argv[-1]))"""


def python(tmp_path, *args, **env):
    """(exit status, stdout lines, stderr) of python_command(ARGS) run in
    tmp_path with `env` added to this process's environment."""
    done = subprocess.run(kernel_server.python_command(*args), cwd=tmp_path,
                          env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=60)
    return done.returncode, done.stdout.splitlines(), done.stderr


@pytest.fixture
def server():
    assert kernel_server.SERVER.ready()
    return kernel_server.SERVER.pid


def test_python_c_is_forked_but_runs_as_a_new_python(server, tmp_path):
    assert kernel_server.python_command("-c", "")[1:3] == [
        kernel_server.__file__, "python"]
    status, lines, err = python(tmp_path, "-c", SAYS, "a b", "3")
    assert status == 3, err
    assert lines == [f"{server} {tmp_path} '' ['a b', '3'] __main__ True "
                     "True", "exit handlers ran"]


def test_a_script_is_forked_but_runs_as_python_script(server, tmp_path):
    script = tmp_path / "sub" / "says.py"
    script.parent.mkdir()
    script.write_text(SAYS.replace("sys.argv[1:]", "sys.argv, __file__")
                      + "\n")
    status, lines, err = python(tmp_path, str(script), "0")
    assert status == 0, err
    assert lines == [
        f"{server} {tmp_path} {str(script.parent)!r} {[str(script), '0']} "
        f"{script} __main__ True True", "exit handlers ran"]
    script.write_text("import sys\nsys.stdout.write('before ')\n1 / 0\n")
    status, lines, err = python(tmp_path, str(script))
    assert (status, lines) == (1, ["before "])
    assert err.rstrip().endswith("ZeroDivisionError: division by zero"), err


def test_a_different_start_up_environment_gets_a_plain_python(server,
                                                               tmp_path):
    code = "import os, sys; print(os.getppid(), 'torch' in sys.modules)"
    for variable in ("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "PYTHONHASHSEED",
                     "OMP_NUM_THREADS"):
        status, lines, err = python(tmp_path, "-c", code, **{variable: "7"})
        assert (status, lines) == (0, [f"{server} False"]), (variable, err)
    status, lines, err = python(tmp_path, "-c", code, MININN_QUICK="7")
    assert (status, lines) == (0, [f"{server} True"]), err  # not read then


def test_a_request_that_leaves_matplotlib_s_backend_unset_takes_the_servers(
        monkeypatch):
    # the server imports matplotlib with the kernels' backend unless told
    # another: a request that names the one it read (a kernel's own
    # `python -c`), or leaves it unset, starts up the same; another does not
    kernels = kernel_server.SERVER_DEFAULTS["MPLBACKEND"]
    started = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    same = kernel_server.starts_up_the_same
    monkeypatch.setattr(kernel_server, "STARTED_WITH", started)
    assert same(started) and same({**started, "MPLBACKEND": kernels})
    assert not same({**started, "MPLBACKEND": "agg"})
    monkeypatch.setattr(kernel_server, "STARTED_WITH",
                        {**started, "MPLBACKEND": "agg"})
    assert not same(started) and same({**started, "MPLBACKEND": "agg"})


def test_a_kernel_started_in_another_start_up_environment_is_plain(server):
    with started(PYTHONHASHSEED="7") as (_, client):
        printed, _ = run(client, "import os, sys; print(os.getppid(), "
                                 "'torch' in sys.modules)")
        assert printed.split() == [str(server), "False"]  # exec'd in the fork


def test_without_a_server_python_command_is_plain_python(monkeypatch,
                                                          tmp_path):
    monkeypatch.delenv(kernel_server.SOCKET_ENV, raising=False)
    assert kernel_server.python_command("-c", "pass") == [
        sys.executable, "-c", "pass"]
    stand_in = [sys.executable, kernel_server.__file__, "python", "-c",
                "import os, sys; print(os.getppid(), 'torch' in sys.modules)"]
    done = subprocess.run(stand_in, capture_output=True, text=True,
                          timeout=60)  # a stand-in that finds no server
    assert done.stdout.split() == [str(os.getpid()), "False"], done.stderr


UNBUFFERED = """import os, sys
print(type(sys.stdout.buffer).__name__, sys.stdout.write_through,
      type(sys.stderr.buffer).__name__, sys.stderr.write_through,
      os.getppid(), "torch" in sys.modules)
sys.stdout.write("written through")
os._exit(0)  # no flush at exit: only what was written through is out"""


def test_python_u_is_forked_and_unbuffered_as_python_u_is(server, tmp_path):
    # as execnet starts pytest-xdist's workers (worker_specs)
    status, forked, err = python(tmp_path, "-u", "-c", UNBUFFERED)
    assert status == 0, err
    done = subprocess.run([sys.executable, "-u", "-c", UNBUFFERED],
                          capture_output=True, text=True, timeout=60)
    plain = done.stdout.splitlines()
    assert plain[0].split()[:4] == ["FileIO", "True", "FileIO", "True"]
    assert forked[0].split() == plain[0].split()[:4] + [str(server), "True"]
    assert forked[1:] == plain[1:] == ["written through"]


def test_unbuffer_does_what_python_u_does(tmp_path):
    # where PYTHONUNBUFFERED is not set (a server started with it set makes
    # every child unbuffered, and one without it is not forked from it)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    ours = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "import kernel_server; kernel_server.unbuffer()\n" + UNBUFFERED)
    seen = []
    for command in ([sys.executable, "-u", "-c", UNBUFFERED],
                    [sys.executable, "-c", ours,
                     os.path.dirname(kernel_server.__file__)],
                    [sys.executable, "-c", UNBUFFERED]):
        done = subprocess.run(command, env=env, capture_output=True,
                              text=True, timeout=60)
        lines = done.stdout.splitlines() or [""]  # buffered: nothing out
        seen.append((lines[0].split()[:4], lines[1:]))
    plain_u, unbuffered, buffered = seen
    assert unbuffered == plain_u == (["FileIO", "True", "FileIO", "True"],
                                     ["written through"])
    assert buffered != plain_u  # the check tells them apart


def test_xdist_workers_are_specified_as_forked_from_the_server():
    import execnet

    forked, other = kernel_server.worker_specs(["popen", "popen//chdir=x"])
    assert other == "popen//chdir=x"
    spec = execnet.XSpec(forked)
    assert spec.popen and execnet.gateway_io.shell_split_path(
        spec.python) == [sys.executable, kernel_server.__file__, "python"]


def test_this_worker_was_forked_from_the_server():
    # under the test command (-n, notebooks among what it runs)
    if "PYTEST_XDIST_WORKER" not in os.environ or not (
            kernel_server.SERVER.ready()):
        pytest.skip("no pytest-xdist worker started with a server")
    assert os.getppid() == kernel_server.SERVER.pid
    assert kernel_server.SERVER.process is None


def test_a_stand_in_waits_for_the_server_to_listen(server, tmp_path):
    # A worker's stand-in starts as the server starts: it waits for the
    # socket rather than start a plain python. Here the socket appears (a
    # link to the server's) a second after the stand-in starts.
    later = tmp_path / "socket"
    stand_in = subprocess.Popen(
        [sys.executable, kernel_server.__file__, "python", "-c",
         "import os; print(os.getppid())"],
        env={**os.environ, kernel_server.SOCKET_ENV: str(later)},
        stdout=subprocess.PIPE, text=True)
    time.sleep(1)
    assert stand_in.poll() is None  # still waiting
    later.symlink_to(os.environ[kernel_server.SOCKET_ENV])
    out, _ = stand_in.communicate(timeout=60)
    assert out.split() == [str(server)]


def test_a_stand_in_whose_server_is_gone_runs_plain(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; "
                           "print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, kernel_server.__file__, "python", "-c",
         "import os, sys; print(os.getppid(), 'torch' in sys.modules)"],
        env={**os.environ, kernel_server.SOCKET_ENV: str(tmp_path / "s"),
             kernel_server.PID_ENV: gone},
        capture_output=True, text=True, timeout=60)
    assert time.monotonic() - start < 30  # not the 120 s of a slow server
    assert done.stdout.split() == [str(os.getpid()), "False"], done.stderr
    assert "no kernel server" in done.stderr
