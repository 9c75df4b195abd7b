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
