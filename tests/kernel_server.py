"""Notebook kernels forked from a process that has already imported torch.

Every notebook nbval checks gets a new kernel, and every new kernel used to
spend about 5 CPU-s before its first line ran: Python and ipykernel
starting, `import torch` (2 s), matplotlib (0.5 s), torch._dynamo (1.7 s,
imported the first time anything builds an optimizer), Inductor (0.8 s,
the first time anything calls torch.compile) and ipykernel's debugger
(0.3 s). Under test, a kernel here is a child forked from a server
that paid those imports once, so it starts in a fraction of a second. It is
still a new process with a new IPython, an empty namespace and its own
working directory and environment: only the module cache is shared, and
the stored outputs are the ones a kernel started from scratch prints (nbval
compares every one of them).

    kernel_server.py serve SOCKET     the server (started by conftest.py)
    kernel_server.py launch ARGS...   what jupyter_client starts as "the
                                      kernel": it asks the server for a
                                      forked kernel and stands for it
                                      (signals, exit status), or, with no
                                      server to ask, becomes an ordinary
                                      `python -m ipykernel_launcher ARGS`
    kernel_server.py python ARGS...   the same for `python ARGS` (`-c CODE
                                      ...` or `SCRIPT ...`): what a test
                                      runs "in another process" that needs
                                      torch (python_command builds it)

One server serves the whole test command: the process that hands out the
tests (pytest-xdist's controller, or pytest itself with `-n 0`) starts it
when notebooks are among what it was asked to test, and its workers, which
inherit the socket's path, ask it for their kernels. The workers themselves
are forked from it as well (worker_specs: `python -u -c BOOTSTRAP`, as
execnet starts them, through the stand-in, which waits for the server to
listen), so the imports are paid once rather than once per worker.

A test that wants a new process with torch imported asks for one the same
way (python_command): in a new `python -c` or script, `import torch`
alone costs 1.0-1.2 CPU-s on a 2-core EPYC (measured 2026-12-04; 2.5 in
one of that machine's slow spells). So does a notebook: in a forked
kernel, `sys.executable` is a script beside the socket that runs the
stand-in, so chapter 6's TF32 probe and chapter 8's re-save in "another
process" (`subprocess.run([sys.executable, "-c", ...])`) are forked too;
multiprocessing's children are not (they need the descriptors it hands
them), and start from scratch as before. Such a process has what the
server imported already imported (torch, numpy, ipykernel, and matplotlib
with the notebooks' inline backend), as settings read at import fixed
them. So where a request's environment differs from the server's in a
variable read as Python or torch start (PYTHON*, TORCH*, OMP_*, ...; see
STARTUP_VARIABLES), or a request asks for more than `-c` or a script, the
forked child becomes the plain kernel or `python ARGS` instead (it execs
one).

Not used (every kernel starts from scratch) with a CUDA build of torch (a
process that has touched CUDA cannot be forked safely) or where
MININN_FRESH_KERNELS=1. Readers' Jupyter and `tools/dev.py outputs`, which
writes the stored outputs, never use it.
"""
import functools
import os
import pickle
import select
import signal
import socket
import struct
import sys

SOCKET_ENV = "MININN_KERNEL_SERVER"
PID_ENV = "MININN_KERNEL_SERVER_PID"


def plain_kernel(args):
    """Become the kernel jupyter_client would have started."""
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher",
                              *args])


# -- in the pytest process (conftest.py) ----------------------------------------

def allowed():
    """Whether kernels may come from a server here, as far as can be told
    without importing torch (the server itself declines a CUDA build)."""
    return os.environ.get("MININN_FRESH_KERNELS") != "1"


def notebooks_asked(args, here):
    """Whether pytest's arguments (or its testpaths), given in the folder
    `here`, take in a chapter: a notebook, or a folder that holds one."""
    from pathlib import Path

    book = (Path(__file__).parent.parent / "book").resolve()
    for arg in args:
        path = (Path(here) / arg.split("::")[0]).resolve()
        if path.suffix == ".ipynb" or (path.is_dir() and (
                path == book or path in book.parents
                or any(path.glob("*.ipynb")))):
            return True
    return False


@functools.cache
def wanted():
    if not allowed():
        return False
    import torch

    return torch.version.cuda is None  # a CPU build: nothing to fork badly


class Server:
    """The server this pytest process started (`start`), or the one it
    inherited from the process that started its own (`ready`)."""

    def __init__(self):
        self.process = None
        self.found = None  # what ready() found

    @property
    def pid(self):
        return int(os.environ.get(PID_ENV, 0)) or None

    def start(self):
        """Start the server; return at once (its imports take seconds).
        The processes started from here on inherit where to find it."""
        import subprocess
        import tempfile

        if self.process is not None:
            return
        self.folder = tempfile.TemporaryDirectory(prefix="mininn-kernels-")
        path = os.path.join(self.folder.name, "socket")
        # What the server writes to stderr goes to a log, not the
        # terminal; a child forked from it writes to its stand-in's
        # stdout and stderr (sent with the request), as a process started
        # from scratch would.
        with open(path + ".log", "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, __file__, "serve", path],
                stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                stderr=log)
        os.environ[SOCKET_ENV] = path  # the stand-ins inherit it
        os.environ[PID_ENV] = str(self.process.pid)

    def ready(self, timeout=120):
        """Wait until the server listens (the socket appears once it does);
        start one first if this process has none. Without a server (it
        declined or failed, or is not listening by the deadline), the
        stand-ins start plain kernels."""
        import time

        if self.found is not None:
            return self.found
        if SOCKET_ENV not in os.environ:
            self.start()
        path = os.environ[SOCKET_ENV]
        deadline = time.monotonic() + timeout
        self.found = True
        while not os.path.exists(path):
            if (os.path.exists(path + ".unavailable")
                    or time.monotonic() > deadline
                    or (self.process and self.process.poll() is not None)
                    or not (self.process or alive(self.pid))):
                os.environ.pop(SOCKET_ENV, None)
                self.found = False
                break
            time.sleep(0.05)
        if not self.found:
            import warnings

            try:
                with open(path + ".log", encoding="utf-8",
                          errors="replace") as log:
                    said = log.read()[-2000:]
            except OSError:
                said = ""
            warnings.warn("no kernel server: every notebook starts a kernel "
                          f"from scratch here. The server said:\n{said}",
                          stacklevel=2)
        return self.found

    def stop(self):
        import subprocess

        if self.process is None:
            return
        os.environ.pop(SOCKET_ENV, None)
        os.environ.pop(PID_ENV, None)
        self.process.terminate()  # it kills its kernels, then exits
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.folder.cleanup()
        self.process = self.found = None


def alive(pid):
    """Whether the process `pid` (the server another process started) is
    there to be asked."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


SERVER = Server()


def python_command(*args):
    """The command that runs `python ARGS` in a new process: forked from
    the server when this test command has one, started from scratch
    otherwise (or when the server declined, or is gone by then)."""
    if SOCKET_ENV in os.environ and SERVER.ready():
        return [sys.executable, __file__, "python", *args]
    return [sys.executable, *args]


def worker_specs(specs):
    """pytest-xdist's workers (`--tx` specs, "popen" each) as processes
    forked from the server: `python -u -c BOOTSTRAP` through this file's
    stand-in, which waits for the server's imports (execnet, which starts
    them, reads the python to run from the spec). Each worker then skips
    importing torch, matplotlib and ipykernel: about 2 CPU-s (two workers
    over one notebook and two test files: 12 CPU-s plain, 7.5 forked).
    Other specs are left as they are."""
    import shlex

    python = shlex.join([sys.executable, __file__, "python"])
    return [f"popen//python={python}" if spec == "popen" else spec
            for spec in specs]


def use_stand_in(manager_class):
    """nbval's kernel spec (`python -m ipykernel_launcher -f FILE`), with
    this file's stand-in in ipykernel's place."""
    original = manager_class.get_kernel_spec

    def get_kernel_spec(self, kernel_name):
        spec = original(self, kernel_name)
        python, dash_m, launcher, *args = spec.argv
        if (dash_m, launcher) == ("-m", "ipykernel_launcher"):
            spec.argv = [python, __file__, "launch", *args]
        return spec

    manager_class.get_kernel_spec = get_kernel_spec


# -- the stand-in that jupyter_client starts ----------------------------------

def launch(kind, args):
    """Stand for a `kind` ("kernel" or "python") forked with `args`. A
    process started with the server (pytest-xdist's workers, see
    worker_specs) waits for it to finish its imports."""
    path = os.environ.get(SOCKET_ENV)
    if path and not SERVER.ready():
        path = None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except (OSError, TypeError):  # no server (yet, or any more)
        if kind == "python":
            os.execv(sys.executable, [sys.executable, *args])
        plain_kernel(args)
    request = pickle.dumps((kind, args, os.getcwd(), dict(os.environ)))
    socket.send_fds(conn, [struct.pack("!I", len(request)) + request],
                    [0, 1, 2])
    pid = struct.unpack("!i", recv_exactly(conn, 4))[0]

    def forward(signum, frame):  # interrupts and terminations reach the kernel
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    status = recv_exactly(conn, 4)  # the kernel's exit status, once it exits
    # a stand-in killed outright closes `conn`: the server then kills the
    # kernel, so no kernel outlives the process jupyter_client watches
    sys.exit(struct.unpack("!i", status)[0] if status else 1)


def recv_exactly(conn, size):
    data = b""
    while len(data) < size:
        try:
            chunk = conn.recv(size - len(data))
        except InterruptedError:
            continue
        if not chunk:
            return data
        data += chunk
    return data


# -- the server ------------------------------------------------------------------

def preload():
    """What every chapter's first cells import, and what ipykernel imports;
    False, importing nothing more, with a CUDA build of torch."""
    import torch

    if torch.version.cuda is not None:  # see the module's docstring
        return False
    for variable, value in SERVER_DEFAULTS.items():
        os.environ.setdefault(variable, value)
    import ipykernel.kernelapp
    import matplotlib.pyplot  # noqa: F401
    import numpy  # noqa: F401
    import torch._dynamo  # the first optimizer a chapter builds imports it
    # what torch.compile(model) imports, though it compiles nothing yet
    # (chapters 8 and 10): 0.8 CPU-s here, once, rather than in each
    import torch._inductor.compile_fx
    import torch.optim

    # Every kernel imports its debugger (debugpy, 0.3 CPU-s) as it starts.
    # debugpy warns on stderr, as it is imported, that Python's own modules
    # are frozen (only a debugging session would mind); the variable quiets
    # that one warning, for this import only.
    quiet = "PYDEVD_DISABLE_FILE_VALIDATION"
    before = os.environ.get(quiet)
    os.environ[quiet] = "1"
    import ipykernel.debugger  # noqa: F401
    if before is None:
        del os.environ[quiet]
    else:
        os.environ[quiet] = before

    import threading

    assert not torch.cuda.is_initialized()
    assert threading.active_count() == 1  # no thread a fork would lose
    return True


def freeze():
    """Leave what the server imported (some 350,000 objects, every kernel's
    too) out of the collector's full passes, in the server and in every
    kernel forked from it: a pass would walk all of it, and write to each
    object it walks, so the kernel would copy the pages it shares with the
    server. Nothing frozen is garbage: it is the imported modules."""
    import gc

    gc.collect()
    gc.freeze()


def serve(path):
    STARTED_WITH.update(os.environ)
    usable = False
    try:
        usable = preload()
    finally:
        if not usable:  # clients stop waiting, and start plain kernels
            open(path + ".unavailable", "w").close()
    if not usable:
        return
    freeze()
    python = write_stand_in_python(path)
    # Bound under another name and renamed once listening: a client that
    # finds the socket can connect at once.
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".binding")
    listener.listen(16)
    os.rename(path + ".binding", path)
    parent = os.getppid()
    kernels = {}  # pid -> the stand-in's connection
    stopping = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(1))
    # until told to stop, or until the pytest process that started it is gone
    while os.getppid() == parent and not stopping:
        ready, _, _ = select.select([listener, *kernels.values()], [], [],
                                    0.2)
        for conn in ready:
            if conn is listener:
                conn, _ = listener.accept()
                pid = fork_kernel(conn, listener, kernels, python)
                if pid:
                    kernels[pid] = conn
            else:  # a stand-in went away (killed): its kernel goes too
                for pid, other in list(kernels.items()):
                    if other is conn:
                        kill(pid)
        reap(kernels)
    for pid in kernels:
        kill(pid)


def stand_in_python(path):
    """The `python` of the kernels the server at `path` forks: a script
    beside its socket."""
    return os.path.join(os.path.dirname(path), "python")


def write_stand_in_python(path):
    """Write the kernels' `python` (stand_in_python): it runs `python ARGS`
    as this file's stand-in does, so that a notebook's own
    `subprocess.run([sys.executable, "-c", ...])` is forked from the server
    too where a `python -c` or a script would start up the same, and is
    the plain python otherwise (`-m`, `--version`, another TORCH_*)."""
    import shlex

    script = stand_in_python(path)
    with open(script, "w", encoding="utf-8") as file:
        file.write("#!/bin/sh\n# python, forked where it can be "
                   "(tests/kernel_server.py)\nexec "
                   + shlex.join([sys.executable, os.path.abspath(__file__),
                                 "python"]) + ' "$@"\n')
    os.chmod(script, 0o755)
    return script


def fork_kernel(conn, listener, kernels, python):
    # the descriptors come with the first bytes, the length: read them
    # with recv_fds (a plain recv would drop them)
    header, fds, _, _ = socket.recv_fds(conn, 4, 3)
    header += recv_exactly(conn, 4 - len(header))
    size = struct.unpack("!I", header)[0]
    message = recv_exactly(conn, size)
    kind, args, cwd, environ = pickle.loads(message)
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        conn.sendall(struct.pack("!i", pid))
        return pid
    try:  # the child: a new process, set up as `python` would
        listener.close()
        for other in kernels.values():
            other.close()
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        die_with_the_server()
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)
        reseed()
        if kind == "python":
            code = run_python(args)
        elif not starts_up_the_same(environ):
            plain_kernel(args)
        else:
            sys.path[0] = cwd  # `python -m` puts the working directory first
            sys.argv = ["ipykernel_launcher", *args]
            # multiprocessing starts its children with the real python (it
            # read sys.executable as torch imported it): spawn hands them
            # descriptors that only a child of this process inherits
            from multiprocessing import spawn

            assert os.fsdecode(spawn.get_executable()) == sys.executable
            sys.executable = python
            from ipykernel import kernelapp

            kernelapp.launch_new_instance()
            code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


# Read by Python or torch once, as they start or are imported: a forked
# child has the server's reading of them.
STARTUP_VARIABLES = ("PYTHON", "TORCH", "PYTORCH", "OMP_", "MKL_", "KMP_",
                     "OPENBLAS", "MPL", "LD_")
# ... except those torch sets itself as it runs, and reads only then: a test
# process that has compiled something has TORCHINDUCTOR_CACHE_DIR.
SET_BY_TORCH = ("TORCHINDUCTOR_CACHE_DIR",)
# What the server sets before its imports where its environment does not:
# matplotlib reads its backend once, as it is imported, and ipykernel sets
# this one before a kernel's first cell. A request that does not set it is
# taken to want it (a forked child has matplotlib imported with it), as a
# kernel's own `python -c` does, which inherits it.
SERVER_DEFAULTS = {"MPLBACKEND": "module://matplotlib_inline.backend_inline"}
STARTED_WITH = {}  # the server's environment as it started (serve)


def starts_up_the_same(environ):
    """Whether `environ` and the server's agree in every variable read as
    Python or torch start (a forked child has the server's reading)."""
    def startup(env):
        return {k: v for k, v in {**SERVER_DEFAULTS, **env}.items()
                if k.startswith(STARTUP_VARIABLES) and k not in SET_BY_TORCH}

    return startup(environ) == startup(STARTED_WITH)


def run_python(args):
    """Do what `python ARGS` does (`-c CODE ARG...` or `SCRIPT ARG...`) in
    this forked child, in a new __main__; return the exit status. The exit
    handlers that run are the ones its code registered, not the server's;
    non-daemon threads it started are waited for, as at any exit."""
    import atexit
    import runpy
    import threading
    import traceback
    import types

    given, unbuffered = list(args), args[:1] == ["-u"]
    if unbuffered:  # as pytest-xdist's workers are started (execnet)
        args = args[1:]
    runs_code = args[:1] == ["-c"] and len(args) > 1 or (
        args[:1] != [] and not args[0].startswith("-"))  # or a script
    if not (runs_code and starts_up_the_same(os.environ)):
        os.execv(sys.executable, [sys.executable, *given])
    if unbuffered:
        unbuffer()
    atexit._clear()
    code = 0
    try:
        if args[0] == "-c":
            sys.argv = ["-c", *args[2:]]
            sys.path[0] = ""
            main = types.ModuleType("__main__")
            main.__builtins__ = __builtins__
            sys.modules["__main__"] = main
            exec(compile(args[1], "<string>", "exec"), main.__dict__)
        else:
            sys.argv = list(args)
            sys.path[0] = os.path.dirname(os.path.realpath(args[0]))
            runpy.run_path(args[0], run_name="__main__")
    except SystemExit as done:  # as Python exits: None is 0; a message
        if done.code is None or isinstance(done.code, int):  # is printed
            code = done.code or 0
        else:
            print(done.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    threading._shutdown()
    atexit._run_exitfuncs()
    return code


def unbuffer():
    """What `python -u` does: stdout and stderr written through, each write
    straight to its descriptor."""
    import io

    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        setattr(sys, name, io.TextIOWrapper(
            io.FileIO(stream.fileno(), "w", closefd=False),
            encoding=stream.encoding, errors=stream.errors,
            write_through=True))


def die_with_the_server():
    """Linux: the kernel gets SIGKILL if the server dies first, however."""
    try:
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG,
                                                signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def reseed():
    """Seeds a new process draws from the OS: not the server's."""
    import random

    import numpy

    random.seed()
    numpy.random.seed()


def reap(kernels):
    while kernels:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return
        conn = kernels.pop(pid, None)
        if conn is not None:
            try:
                conn.sendall(struct.pack("!i", os.waitstatus_to_exitcode(
                    status)))
            except OSError:
                pass
            conn.close()


def kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2])
    elif sys.argv[1:2] == ["launch"]:
        launch("kernel", sys.argv[2:])
    elif sys.argv[1:2] == ["python"]:
        launch("python", sys.argv[2:])
    else:
        sys.exit(__doc__)
