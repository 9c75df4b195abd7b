"""The one dialect of sizes and lists (mpiopt/units.py), and that every command that takes
--sizes reads it and names a bad token."""
import pytest

from conftest import needs_build, run_mpiopt
from mpiopt.errors import UsageError
from mpiopt.units import parse_int_list, parse_names, parse_ranks, parse_size, parse_sizes, size_label


@pytest.mark.parametrize("text, value", [
    ("8", 8), ("8B", 8), ("64K", 65536), ("64KB", 65536), ("64KiB", 65536), ("64kib", 65536),
    ("8M", 8 << 20), ("8MiB", 8 << 20), ("1G", 1 << 30), ("1GiB", 1 << 30), (" 16 ", 16),
])
def test_sizes_with_binary_units(text, value):
    assert parse_size(text) == value


def test_size_lists_and_ranges():
    assert parse_sizes("8:64") == [8, 16, 32, 64]
    assert parse_sizes("8,1K,1M") == [8, 1024, 1 << 20]
    assert parse_sizes("0,8:16,16") == [0, 8, 16]
    assert parse_sizes("1M:4M,8") == [8, 1 << 20, 2 << 20, 4 << 20]


@pytest.mark.parametrize("text, named", [
    ("8,6x", "'6x'"), ("64:8", "minimum is larger"), ("8,,16", "empty item"), ("1.5K", "'1.5K'"),
    ("-8", "'-8'"), ("0:8", "at least 1"),
])
def test_bad_sizes_name_the_token(text, named):
    with pytest.raises(UsageError, match=named):
        parse_sizes(text)


def test_size_minimum():
    with pytest.raises(UsageError, match="at least 1 byte"):
        parse_sizes("0,8", minimum=1)


def test_labels_are_exact():
    assert [size_label(n) for n in (8, 1000, 1024, 65536, 1536, 8 << 20, 1 << 30)] == \
        ["8", "1000", "1K", "64K", "1536", "8M", "1G"]


def test_rank_and_name_lists():
    assert parse_ranks("16,2,2") == [2, 16]
    assert parse_int_list("4,6", "-g") == [4, 6]
    with pytest.raises(UsageError, match="'x' is not an integer"):
        parse_ranks("2,x")
    with pytest.raises(UsageError, match="0 is less than 1"):
        parse_ranks("0")
    with pytest.raises(UsageError, match="5 is more than 4"):
        parse_ranks("5", 4)
    assert parse_names("a,c", "--things", "abc") == ["a", "c"]
    with pytest.raises(UsageError, match="unknown 'd'.*a, b, c"):
        parse_names("a,d", "--things", "abc")
    with pytest.raises(UsageError, match="repeated"):
        parse_names("a,a", "--things", "abc")


@needs_build
@pytest.mark.parametrize("command", [
    ["bench", "allreduce", "-np", "2"], ["tune", "-np", "2"], ["model", "--ranks", "4"],
    ["simulate", "allreduce", "--ranks", "4"],
])
def test_every_sizes_option_reads_the_dialect_and_names_a_bad_token(command, tmp_path):
    r = run_mpiopt(*command, "--sizes", "8,64KiB,1M:2M,6x", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "bad size '6x'" in r.stderr
    assert not any(tmp_path.iterdir())      # nothing written
