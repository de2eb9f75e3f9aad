"""Every number a command takes is checked where it comes in (issue 43): negative, zero, huge, NaN
and infinity are a usage error naming the option and its range (exit 2, no traceback), through
the command line and from a stored answer's side alike; the bounds themselves are taken.
`bounds.BOUNDS` holds them, for the MCP tools too
(tests/surfaces/test_mcp.py).

`cmem capture --since 1000000d` ended in a traceback (a window reaching before year 1), and
`recall -n 10**21` in one from SQLite; `watch --settle nan` watched forever without a due check.
"""

from __future__ import annotations

import pytest

from support import run_cmem, run_entry

ENTRIES = ["cmem.cli"]
REFUSED = [
    (["context", "--budget", "-5"], "--budget", "from 100 to 1,000,000"),
    (["context", "--budget", "0"], "--budget", "from 100 to 1,000,000"),
    (["context", "--budget", str(10**12)], "--budget", "from 100 to 1,000,000"),
    (["recall", "uv", "-n", "0"], "--limit", "from 1 to 1,000"),
    (["recall", "uv", "-n", str(10**21)], "--limit", "from 1 to 1,000"),
    (["recall", "uv", "--limit", "-3"], "--limit", "from 1 to 1,000"),
    (["log", "-n", "0"], "--limit", "from 1 to 100,000"),
    (["log", "-n", str(10**30)], "--limit", "from 1 to 100,000"),
    (["converge", "--budget", "499", "--dry-run"], "--budget", "from 500 to 1,000,000"),
    (["converge", "--budget", str(10**9), "--dry-run"], "--budget", "from 500 to 1,000,000"),
    (["watch", "--settle", "-1"], "--settle", "from 0 to 86,400"),
    (["watch", "--settle", "nan"], "--settle", "from 0 to 86,400"),
    (["watch", "--settle", "inf"], "--settle", "from 0 to 86,400"),
    (["watch", "--settle", "1e400"], "--settle", "from 0 to 86,400"),
    (["watch", "--settle", "86401"], "--settle", "from 0 to 86,400"),
    (["capture", "--since", "1000000d"], "--since", "from 1m to 3650d"),
    (["capture", "--since", "0"], "--since", "from 1m to 3650d"),
    (["capture", "--since", "30s"], "--since", "from 1m to 3650d"),
    (["capture", "--since", "3651d"], "--since", "from 1m to 3650d"),
    (["note", "x" * 4001], "note line", "at most 4,000 characters"),
]


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("argv, option, bounds", REFUSED, ids=lambda v: str(v)[:40])
def test_a_number_out_of_its_bounds_is_a_usage_error(make_vault, entry, argv, option, bounds):
    root = make_vault(git=True)
    # `watch` with a bound let through watches for ever: the timeout turns that into a failure
    code, out, err, _ = run_entry(entry, [*argv, "--vault", str(root)], timeout=120)
    assert code == 2 and "Traceback" not in err, err
    assert option in err and bounds in err, err


@pytest.mark.parametrize("entry", ENTRIES)
def test_the_bounds_themselves_are_taken(tmp_path, entry):
    root = tmp_path / "vault"
    assert run_cmem("init", str(root), "--lang", "en").returncode == 0
    for argv in (
        ["context", "--budget", "100"],
        ["context", "--budget", "1000000"],
        ["recall", "uv", "-n", "1000"],
        ["log", "-n", "100000"],
        ["converge", "--budget", "500", "--dry-run"],
        ["capture", "--since", "3650d"],
        ["capture", "--since", "1m"],
        ["note", "y" * 4000],
    ):
        code, out, err, _ = run_entry(entry, [*argv, "--vault", str(root)])
        assert code == 0, (argv, err)


def test_every_bound_is_a_range_of_numbers():
    from cmem.bounds import BOUNDS

    for key, (low, high) in BOUNDS.items():
        assert key.split(" ")[1].startswith("--") and 0 <= low < high, key
