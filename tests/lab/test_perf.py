"""lab/perf.py: perf samples of real slapadd and slapd split by object, and the check that
a preloaded engine's profile holds samples in that engine's library.

The smoke tests run real slapadd (300 entries) and slapd (a 1-second window) under
`perf record -e cpu-clock`; the reader tests use hand-written `perf script` and
`strace -c` output."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from lab import load, perf, slapd
from lab.makeldif import write as write_ldif

KERNEL = "[kernel.kallsyms]"
ENGINE = "/opt/engine/liblmdb.so"
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"

SCRIPT = f"""\
 100.000100:     250000      7f0000001000 mdb_cursor_put ({ENGINE})
 100.000350:     250000      7f0000001100 mdb_node_search ({ENGINE})
 100.000600:     250000      7f0000001100 mdb_node_search ({ENGINE})
 100.000850:     250000      7f0000002000 mdb_id2entry_put ({slapd.BACK_MDB})
 100.001100:     250000  ffffffff815df7f3 clear_page_erms ({KERNEL})
 100.001350:     250000  ffffffff815df7f3 [unknown] ([unknown])
 100.001600:     250000      7f0000003000 malloc ({LIBC})
 100.001850:     250000      55d000001000 slap_sl_malloc (/usr/sbin/slapd)
 100.002100:     250000      7f0000004000 ber_scanf (/usr/lib/x86_64-linux-gnu/liblber-2.5.so.0)
not a sample line
"""


def test_samples_split_by_object() -> None:
    prof = perf.parse_script(SCRIPT, ENGINE)
    assert prof.samples == 9
    assert prof.by["engine"] == 3 * 250000
    assert prof.by["back_mdb"] == 250000
    # a kernel address is the kernel's even when perf could not name its object
    assert prof.by["kernel"] == 2 * 250000
    assert (prof.by["libc"], prof.by["slapd"], prof.by["other"]) == (250000, 250000, 250000)
    assert prof.by["total"] == 9 * 250000
    assert prof.funcs == {"mdb_cursor_put": 250000, "mdb_node_search": 500000}
    assert prof.kfuncs == {"clear_page_erms": 250000, "[unknown]": 250000}
    assert abs(prof.span_s - 0.002) < 1e-9


def test_stock_has_no_engine_bucket_and_per_op_subtracts() -> None:
    prof = perf.parse_script(SCRIPT, None)
    assert prof.by.get("engine", 0) == 0 and prof.by["other"] == 4 * 250000
    small = perf.parse_script(SCRIPT.split("\n", 3)[3], ENGINE)  # the last 6 samples
    fig = perf.per_op(perf.parse_script(SCRIPT, ENGINE), 3, small)
    assert fig["by"]["engine"] == pytest.approx(250.0)  # 750 us of engine CPU / 3 ops
    assert fig["by"]["total"] == pytest.approx(250.0)
    assert fig["funcs"]["mdb_node_search"] == pytest.approx(500 / 3)


CHAINS = f"""\
 200.000100:     250000
\tffffffff81000001 finish_task_switch.isra.0 ({KERNEL})
\tffffffff81000002 __schedule ({KERNEL})
\tffffffff81000003 futex_wait ({KERNEL})
\tffffffff81000004 __x64_sys_futex ({KERNEL})
\tffffffff81000005 do_syscall_64 ({KERNEL})
\tffffffff81000006 entry_SYSCALL_64_after_hwframe ({KERNEL})
\t           3f0d1 __lll_lock_wait ({LIBC})

 200.000350:     250000
\tffffffff81000011 __pi_memset ({KERNEL})
\tffffffff81000012 ext4_page_mkwrite ({KERNEL})
\tffffffff81000013 exc_page_fault ({KERNEL})
\tffffffff81000014 asm_exc_page_fault ({KERNEL})
\t           1234 tree_put ({ENGINE})

 200.000600:     250000
\tffffffff81000021 do_iter_readv_writev ({KERNEL})
\tffffffff81000022 do_writev ({KERNEL})
\tffffffff81000023 do_syscall_64 ({KERNEL})

 200.000850:     250000
\tffffffff81000031 __schedule ({KERNEL})
\tffffffff81000032 exit_to_user_mode_loop ({KERNEL})
\tffffffff81000033 do_syscall_64 ({KERNEL})

 200.001100:     250000
\t           1234 tree_put ({ENGINE})
\t           5678 mdb_tool_entry_put ({slapd.BACK_MDB})

"""


def test_call_chains_say_why_the_kernel_ran() -> None:
    prof = perf.parse_script(CHAINS, ENGINE)
    # the innermost frame places the sample; the rest of the chain only explains it
    assert prof.samples == 5 and prof.by["kernel"] == 4 * 250000
    assert prof.by["engine"] == 250000 and prof.funcs == {"tree_put": 250000}
    assert prof.kfuncs["__pi_memset"] == 250000
    assert prof.kcause == {
        "syscall futex": 250000,
        "page fault": 250000,
        "syscall writev": 250000,
        "syscall exit: reschedule": 250000,
    }


def test_strace_summary_is_read_by_name() -> None:
    text = """\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 60.00    0.600000           2    299123           sched_yield
 39.00    0.390000           1    278612       120 futex
  1.00    0.010000          10       209           pread64
------ ----------- ----------- --------- --------- ----------------
100.00    1.000000           1    577944       120 total
"""
    assert perf.parse_strace_c(text) == {"sched_yield": 299123, "futex": 278612, "pread64": 209}


def test_perf_stat_counts_are_named_by_system_call() -> None:
    text = """# started on Fri Nov 27 22:00:00 2026

7375461,,raw_syscalls:sys_enter,30012345678,100.00,,
4255146,,syscalls:sys_enter_sched_yield,30012345678,100.00,,
2009,,syscalls:sys_enter_pread64,30012345678,100.00,,
4752,,page-faults,30012345678,100.00,,
<not supported>,,major-faults,0,100.00,,
"""
    assert perf.parse_perf_stat(text) == {
        "syscalls": 7375461,
        "sched_yield": 4255146,
        "pread64": 2009,
        "page-faults": 4752,
    }


# ---- real slapadd and slapd under perf ----

_NEEDS = [p for p in (slapd.BACK_MDB, "/usr/sbin/slapadd") if not os.path.exists(p)]
_NEEDS += [t for t in ("perf",) if shutil.which(t) is None]
real = pytest.mark.skipif(bool(_NEEDS), reason=f"missing {_NEEDS}")
PERIOD = 50_000  # 20 kHz: a 300-entry slapadd still leaves hundreds of samples


def _perf_works() -> bool:
    r = subprocess.run(
        ["perf", "record", "-q", "-e", "cpu-clock", "-o", "/dev/null", "--", "true"],
        capture_output=True,
    )
    return r.returncode == 0


@pytest.fixture(scope="module")
def ldif(tmp_path_factory) -> str:
    if _NEEDS:
        pytest.skip(f"missing {_NEEDS}")
    if not _perf_works():
        pytest.skip("perf record -e cpu-clock is not permitted here (perf_event_paranoid)")
    path = str(tmp_path_factory.mktemp("perf-ldif") / "people-300.ldif")
    with open(path, "w") as f:
        write_ldif(f, 300, seed=1)
    return path


@pytest.fixture(scope="module")
def engines() -> dict[str, slapd.Engine]:
    if not os.path.exists(slapd.OUR_LIB):
        pytest.skip("build/libmdbcore.so not built")
    from lab import lmdb_src

    lmdb_src.build()  # from py-lmdb 1.2.1's sdist, as tests/lab/test_engine_check.py does
    return {name: slapd.make_engine(name) for name in ("mdb", "lmdb-src", "stock")}


def _functions_of(path: str) -> set[str]:
    """Every function the library defines, static ones too (both engines keep symbols)."""
    r = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True, check=True)
    return {
        p[2] for p in (ln.split() for ln in r.stdout.splitlines()) if len(p) == 3 and p[1] in "tT"
    }


@real
@pytest.mark.parametrize("name", ["mdb", "lmdb-src"])
def test_a_preloaded_engines_slapadd_has_samples_in_its_library(
    tmp_path, ldif, engines, name
) -> None:
    eng = engines[name]
    prof = perf.slapadd_profile(eng, slapd.Instance(str(tmp_path), eng), ldif, PERIOD)
    assert prof.by["engine"] > 0 and prof.by["total"] > prof.by["engine"]
    # symbols resolve: most of the engine's samples are named by functions the library
    # defines (which ones a small load happens to sample varies from run to run)
    own = _functions_of(eng.preload)
    named = sum(v for k, v in prof.funcs.items() if k in own)
    assert named >= prof.by["engine"] / 2, sorted(prof.funcs)[:20]
    assert prof.by["back_mdb"] > 0 and prof.by["slapd"] > 0


@real
def test_the_check_fails_where_the_engine_library_is_absent(tmp_path, ldif, engines) -> None:
    # stock's slapadd never maps libmdbcore.so: read as if it were mdb's run, the profile
    # has samples but none in the engine's library, and the check must say so
    data = perf.slapadd_record(
        engines["stock"], slapd.Instance(str(tmp_path), engines["stock"]), ldif, PERIOD
    )
    mdb = engines["mdb"]
    prof = perf.read_profile(data, mdb.preload)
    assert prof.samples > 0 and prof.by.get("engine", 0) == 0
    with pytest.raises(perf.NoEngineSamples, match="none in .*libmdbcore"):
        perf.require_engine_samples(prof, mdb, "stock's slapadd read as mdb's")


@real
def test_slapd_under_a_search_job_is_sampled_per_operation(tmp_path, ldif, engines) -> None:
    eng = engines["mdb"]
    inst = slapd.Instance(str(tmp_path), eng, maxsize=1 << 30)
    inst.slapadd(ldif)
    tm = load.Timing(0.5, 2.0, 1.0)  # perf's window: the middle second
    prof, job = perf.server_profile(
        eng, inst, "search", 300, load.JobSpec("search", 1, 2), tm, PERIOD
    )
    assert job["ops_s"] > 0 and 0.3 < prof.span_s < 1.5  # perf attaches, then sleeps 1 s
    if "raw_syscalls:sys_enter" in perf.stat_events():  # tracefs is there
        assert job["per_op_counts"]["syscalls"] > 1  # a search is read, write, ...
    fig = perf.per_op(prof, job["ops_in_window"])
    assert fig["by"]["engine"] > 0 and fig["by"]["slapd"] > 0
    assert fig["by"]["total"] == pytest.approx(sum(fig["by"][b] for b in perf.BUCKETS[1:]))


@real
def test_a_consumers_whole_refresh_is_inside_the_profile(tmp_path, ldif, engines) -> None:
    # the consumer is started and profiled before its provider exists, so every entry it
    # writes is sampled: its engine's samples must be there, and perf's CPU must account
    # for most of what /proc says the consumer used over the refresh
    eng = engines["mdb"]
    prof, fig = perf.refresh_profile(eng, str(tmp_path), ldif, 300, PERIOD, timeout=120)
    assert fig["refresh_s"] > 0 and fig["entries_s"] > 0
    assert fig["consumer_used_bytes"] > 0 and fig["provider_cpu_us_per_entry_proc"] >= 0
    # /proc/PID/io: each entry is a commit, which writes at least its meta page with a
    # system call (its other pages may go through the write map, not counted there)
    counts = fig["per_op_counts"]
    assert counts["write calls"] >= 1 and counts["bytes written"] >= 100, counts
    per = perf.per_op(prof, 300)
    assert per["by"]["engine"] > 0 and per["by"]["back_mdb"] > 0
    proc_us = fig["consumer_cpu_us_per_entry_proc"]
    # /proc counts in clock ticks (10 ms): compare only when the refresh used a few
    if proc_us * 300 > 50_000:
        assert per["by"]["total"] > 0.5 * proc_us, (per["by"]["total"], proc_us)
    assert not os.path.exists(os.path.join(str(tmp_path), "refresh-mdb-consumer"))
