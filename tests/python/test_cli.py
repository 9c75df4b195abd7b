"""The command line as a user meets it: help with an example, unknown commands, exit codes."""
import subprocess
import sys
from conftest import run_mpiopt as mpiopt


def test_help_lists_commands_and_an_example():
    r = mpiopt("--help")
    assert r.returncode == 0
    assert "bench" in r.stdout
    assert "Example" in r.stdout


def test_unknown_command_is_a_usage_error():
    r = mpiopt("no-such-command")
    assert r.returncode == 2
    assert "invalid choice" in r.stderr


def test_a_reader_that_goes_away_stops_the_command_quietly():
    """`mpiopt layout --json | head -1`: the reader is gone before mpiopt writes (its end of the
    pipe closed first, so no race with output that fits the pipe); mpiopt stops as a Unix filter
    does (128 + SIGPIPE) and prints no traceback (a plain print; rich's tables stop by
    themselves, with 1)."""
    import os
    read_end, write_end = os.pipe()
    os.close(read_end)
    proc = subprocess.Popen([sys.executable, "-m", "mpiopt", "layout", "--topology", "numa:4 core:8",
                             "--nodes", "32", "-g", "32,32", "--json"], stdout=write_end,
                            stderr=subprocess.PIPE)
    os.close(write_end)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err
