"""Starting MPI and SMPI jobs (mpirun, mpiexec, smpirun, an MPI program) so that they end with
mpiopt: stopped by SIGTERM (`timeout`, a batch system), SIGINT (^C) or SIGHUP (the terminal
closed), mpiopt takes its job down with it instead of leaving the launcher and its ranks running.

Two pieces:

- handle_signals(), which `mpiopt`'s main() runs every command in: SIGINT raises
  KeyboardInterrupt (as Python's default does) and SIGTERM / SIGHUP raise Terminated, so the
  `except`/`finally` clean-up of the code running unwinds instead of the process ending on the
  spot (Python's default for SIGTERM and SIGHUP), and main() exits with 128 + the signal;
- run(), subprocess.run's sibling for jobs: the job starts in a session of its own, and when
  run() is left by any exception (the signals above, a timeout, an error) every process of that
  session gets the signal mpiopt got (SIGTERM for a timeout or an error), then SIGKILL after a
  short grace, and run() waits for the launcher before passing the exception on.

The session, not the process group, is what is ended: Open MPI's mpirun puts every rank in a
process group of its own (setpgid), so a killpg of the launcher's group misses the ranks, while
the whole job stays in the session (only a setsid escapes it).
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time

# seconds a job has to end after the first signal, before SIGKILL: enough for mpirun, which
# answers SIGTERM by ending its ranks (and SIGKILLs them itself after a second)
GRACE = 2.0
KILL_WAIT = 2.0     # seconds: how long after SIGKILL end() waits for the job's processes to be gone
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Terminated(BaseException):
    """SIGTERM or SIGHUP came (handle_signals). A BaseException, as KeyboardInterrupt is, so that
    `except Exception` does not swallow it."""

    def __init__(self, signum: int):
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum


def exit_status(e: BaseException) -> int:
    """128 + the signal that `e` (KeyboardInterrupt or Terminated) stands for, as a shell reports
    a command a signal ended: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + (e.signum if isinstance(e, Terminated) else signal.SIGINT)


def _raise_for(signum: int):
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


_ending = 0          # > 0 while run() starts or ends a job: signals wait (_deferred)
_deferred: int | None = None


def _handler(signum, frame):
    global _deferred
    if _ending:
        # a second ^C or a TERM after the first must not cut the clean-up short: it is raised
        # when the job is gone
        _deferred = _deferred or signum
        return
    _raise_for(signum)


@contextlib.contextmanager
def handle_signals():
    """For the duration: SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt / Terminated (see the
    module's docstring); the previous handlers come back after. A signal ignored on entry (a
    command started with nohup, or in the background by a non-interactive shell) stays
    ignored. Outside the main thread (where Python cannot set handlers) this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    try:
        for s, old in previous.items():
            if old is not signal.SIG_IGN:
                signal.signal(s, _handler)
        yield
    finally:
        for s, old in previous.items():     # None: set outside Python, taken as the default
            signal.signal(s, signal.SIG_DFL if old is None else old)


def _session_members(sid: int) -> list[int]:
    """The live processes (zombies left out) of session `sid`, read from /proc; [] where there is
    no /proc."""
    members = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return members
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue        # gone meanwhile
        # pid (comm) state ppid pgrp session …; comm may hold spaces and parentheses
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 3 and fields[0] != b"Z" and int(fields[3]) == sid:
            members.append(int(entry))
    return members


def _signal_job(proc: subprocess.Popen, signum: int) -> bool:
    """Sends `signum` to every process of the job's session; whether any is left."""
    members = _session_members(proc.pid)
    for pid in members:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)
    with contextlib.suppress(OSError):          # without /proc: the launcher's process group
        os.killpg(proc.pid, signum)
    return bool(members) or proc.poll() is None


def end(proc: subprocess.Popen, signum: int = signal.SIGTERM, grace: float = GRACE) -> None:
    """Ends the job `proc` leads (started by run(), in a session of its own): `signum` to all its
    processes, SIGKILL to those left after `grace` seconds, and the launcher reaped. Signals that
    come meanwhile are held back and raised at the end."""
    global _ending
    _ending += 1
    try:
        if _signal_job(proc, signum):
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline:
                proc.poll()             # reap the launcher: a zombie is no member
                if not _session_members(proc.pid) and proc.poll() is not None:
                    break
                time.sleep(0.05)
            else:
                _signal_job(proc, signal.SIGKILL)
                # a killed process lives on until it is next scheduled: on return the job is
                # gone, not dying (seen: `sleep` still running just after its SIGKILL)
                deadline = time.monotonic() + KILL_WAIT
                while _session_members(proc.pid) and time.monotonic() < deadline:
                    proc.poll()
                    time.sleep(0.01)
        proc.wait()
    finally:
        _ending -= 1
    _raise_deferred()


def _raise_deferred() -> None:
    global _deferred
    if not _ending and _deferred is not None:
        signum, _deferred = _deferred, None
        _raise_for(signum)


def run(cmd, *, input=None, capture_output: bool = False, timeout: float | None = None,
        check: bool = False, text: bool | None = None, env: dict | None = None, cwd=None,
        stdin=None, stdout=None, stderr=None, grace: float = GRACE) -> subprocess.CompletedProcess:
    """subprocess.run(cmd, …) for an MPI or SMPI job: the same arguments and result
    (CompletedProcess; TimeoutExpired with the output so far; CalledProcessError with check),
    but the job runs in a session of its own and is ended whole (end()) when this is left by an
    exception: a timeout, KeyboardInterrupt, Terminated, anything. The signal forwarded is the
    one mpiopt got (SIGINT for ^C, so a program that handles it sees what it would have seen
    from the terminal), SIGTERM otherwise.

    The job inherits mpiopt's stdin, stdout and stderr unless redirected, terminal included (it
    can read and write it; `mpiopt run` relies on that). What a session of its own changes is
    job control: ^C, ^Z and a hang-up go to mpiopt's process group, the terminal's foreground
    one, not to the job's. mpiopt passes ^C and the hang-up on (handle_signals); ^Z stops mpiopt
    alone. That is the price of being able to end the job whole, which `mpiopt run` needs as
    much as any command: left in mpiopt's process group and session (the shell's), nothing
    would tell the job's processes from the terminal's others, and a signal to the group would
    hit mpiopt too; the terminal's ^C never reached the ranks Open MPI puts in process groups of
    their own anyway (mpirun passed it on, as mpiopt now does to every process of the job)."""
    if capture_output:
        if stdout is not None or stderr is not None:
            raise ValueError("stdout and stderr arguments may not be used with capture_output")
        stdout = stderr = subprocess.PIPE
    if input is not None:
        if stdin is not None:
            raise ValueError("stdin and input arguments may not both be used")
        stdin = subprocess.PIPE
    global _ending
    _ending += 1            # a signal now waits until there is a job to end
    try:
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=stdout, stderr=stderr, text=text,
                                env=env, cwd=cwd, start_new_session=True)
    except BaseException:
        _ending -= 1
        _raise_deferred()   # no job: the signal held back is raised now, the OSError else
        raise
    _ending -= 1
    with proc:      # closes the pipes and waits for the launcher on the way out
        try:
            _raise_deferred()
            out, err = proc.communicate(input, timeout=timeout)
        except BaseException as e:
            # TimeoutExpired keeps the output read so far, as subprocess.run's does
            end(proc, signal.SIGINT if isinstance(e, KeyboardInterrupt) else
                e.signum if isinstance(e, Terminated) else signal.SIGTERM, grace)
            raise
    if check and proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, proc.args, out, err)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
