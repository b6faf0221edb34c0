"""Atomic files and directories, and the output checks, on their own."""

from __future__ import annotations

import errno
import os
import re
import stat
import subprocess
import sys

import numpy as np
import pytest
from privopt import _atomic
from privopt._atomic import (
    MARKER,
    RunOutputs,
    atomic_directory,
    atomic_file,
    check_output,
    remove_stale_temporaries,
    write_text_atomic,
)
from privopt.errors import InvalidInput


def names(folder):
    return sorted(p.name for p in folder.iterdir())


def test_atomic_file_replaces_only_on_success(tmp_path):
    target = tmp_path / "m.npz"
    write_text_atomic(target, "old")
    with pytest.raises(RuntimeError), atomic_file(target) as tmp:
        assert tmp.parent == tmp_path and tmp.suffix == ".npz" and tmp.name.startswith(".")
        tmp.write_text("half")
        raise RuntimeError("writer failed")
    assert target.read_text() == "old" and names(tmp_path) == ["m.npz"]
    with atomic_file(target) as tmp:
        np.savez(tmp, x=np.arange(4))  # a library writer that needs the suffix kept
    with np.load(target) as f:
        assert f["x"].tolist() == [0, 1, 2, 3]
    assert names(tmp_path) == ["m.npz"]


def test_atomic_file_needs_its_directory_and_a_written_file(tmp_path):
    with pytest.raises(InvalidInput, match="absent"), atomic_file(tmp_path / "nope" / "a.txt"):
        pass
    with (
        pytest.raises(FileNotFoundError, match="nothing was written"),
        atomic_file(tmp_path / "a.txt"),
    ):
        pass
    assert names(tmp_path) == []


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_atomic_directory_swaps_as_a_unit(tmp_path, monkeypatch, exchange):
    if not exchange:
        monkeypatch.setattr(_atomic, "_exchange", lambda a, b: False)
    out = tmp_path / "out"
    with atomic_directory(out) as staging:
        (staging / "a.txt").write_text("1")
        (staging / "old_only.txt").write_text("1")
    assert names(out) == [MARKER, "a.txt", "old_only.txt"]
    with pytest.raises(KeyboardInterrupt), atomic_directory(out) as staging:
        (staging / "a.txt").write_text("2")
        raise KeyboardInterrupt
    assert (out / "a.txt").read_text() == "1" and names(tmp_path) == ["out"]
    with atomic_directory(out) as staging:
        (staging / "a.txt").write_text("3")
    assert names(out) == [MARKER, "a.txt"] and (out / "a.txt").read_text() == "3"
    assert names(tmp_path) == ["out"]  # neither staging nor the old copy is left


def test_atomic_directory_gets_ordinary_permissions(tmp_path):
    umask = os.umask(0o022)
    try:
        with atomic_directory(tmp_path / "out") as staging:
            (staging / "r.md").write_text("x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o755  # not mkdtemp's 0o700


def test_check_output_refusals(tmp_path):
    src = tmp_path / "data" / "in.csv"
    src.parent.mkdir()
    src.write_text("a\n1\n")
    os.link(src, tmp_path / "hardlink.csv")
    (tmp_path / "symlink.csv").symlink_to(src)
    for bad in (src, src.parent, tmp_path, tmp_path / "hardlink.csv", tmp_path / "symlink.csv"):
        with pytest.raises(InvalidInput, match="is, or contains, the input"):
            check_output(bad, inputs=[None, src], kind="file" if bad.suffix else "dir")
    with pytest.raises(InvalidInput, match="is a directory"):
        check_output(src.parent, kind="file")
    with pytest.raises(InvalidInput, match="exists and is not a directory"):
        check_output(src, kind="dir")
    with pytest.raises(InvalidInput, match="already exists; pass --force"):
        check_output(src, kind="file", option="--report")
    assert check_output(src, kind="file", force=True) == src
    foreign = tmp_path / "home"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("years of work")
    with pytest.raises(InvalidInput, match="never replaced, even with --force"):
        check_output(foreign, force=True)
    ours = tmp_path / "ours"
    ours.mkdir()
    (ours / MARKER).write_text("")
    with pytest.raises(InvalidInput, match="pass --force"):
        check_output(ours)
    assert check_output(ours, force=True) == ours
    (tmp_path / "empty").mkdir()
    assert check_output(tmp_path / "empty") == tmp_path / "empty"
    with pytest.raises(InvalidInput, match="kind"):
        check_output(tmp_path / "x", kind="folder")


def test_check_output_probes_writability_without_leaving_anything(tmp_path):
    before = names(tmp_path)
    assert check_output(tmp_path / "new" / "deeper" / "out") == tmp_path / "new" / "deeper" / "out"
    assert names(tmp_path) == before  # no directory created, no probe left
    (tmp_path / "f").write_text("x")
    with pytest.raises(InvalidInput, match="is not a directory"):
        check_output(tmp_path / "f" / "out")
    if os.geteuid() != 0:  # root writes anywhere; the case above covers it there
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(InvalidInput, match="not writable"):
            check_output(locked / "out")


def test_unwritable_output_is_one_plain_sentence_naming_the_path(tmp_path, monkeypatch):
    # Root writes almost anywhere: the refusal is simulated where the probe file is created.
    def refuse(path, flags, mode=0o777):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr("privopt._atomic.os.open", refuse)
    target = tmp_path / "sub" / "out.csv"
    with pytest.raises(InvalidInput) as info:
        check_output(target, kind="file")
    assert str(info.value) == (
        f"--out {str(target)!r} is not writable: no file can be created in the folder "
        f"{str(tmp_path)!r} (permission denied)"
    )


# ------------------------------------------------------------- temporaries of ended processes


def dead_pid() -> int:
    """The pid of a process that has ended (and was reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_temporaries_name_their_owner_and_only_dead_owners_lose_them(tmp_path):
    out = tmp_path / "out"
    with atomic_directory(out) as staging:  # a live staging directory names this process
        assert re.fullmatch(rf"\.out\.tmp-{os.getpid()}-[0-9a-f]+-[0-9a-f]{{8}}", staging.name)
        assert remove_stale_temporaries(out) == []  # never a live writer's
        assert staging.is_dir()
    dead = dead_pid()
    stale_dir = tmp_path / f".out.tmp-{dead}-0-0123abcd"
    stale_dir.mkdir()
    (stale_dir / "report.md").write_text("half")
    stale_old = tmp_path / f".out.old-{dead}-0-89abcdef"
    stale_old.mkdir()
    stale_file = tmp_path / f".t.csv.bak-{dead}-0-deadbeef.csv"
    stale_file.write_text("x")
    other_target = tmp_path / f".outer.tmp-{dead}-0-0123abcd"  # another output's
    other_target.mkdir()
    not_ours = tmp_path / ".out.notes"
    not_ours.write_text("a user's file")
    live = tmp_path / f".out.tmp-{os.getpid()}-{_atomic._start_token(os.getpid())}-00000000"
    live.mkdir()
    assert sorted(remove_stale_temporaries(out)) == sorted([stale_dir, stale_old])
    assert remove_stale_temporaries(tmp_path / "t.csv") == [stale_file]
    assert names(tmp_path) == sorted([".out.notes", other_target.name, live.name, "out"])


def test_a_reused_pid_does_not_keep_a_dead_run_s_temporaries(tmp_path):
    if _atomic._start_token(os.getpid()) == "0":
        pytest.skip("no process start times on this platform (/proc)")
    reused = tmp_path / f".out.tmp-{os.getpid()}-1-0123abcd"  # our pid, another start time
    reused.mkdir()
    assert remove_stale_temporaries(tmp_path / "out") == [reused]


# ----------------------------------------------------------------------------------- locks


def test_a_second_run_on_the_same_output_is_refused_naming_the_first(tmp_path):
    target = tmp_path / "out"
    with RunOutputs() as first:
        first.add(target)
        lock = tmp_path / f".out{_atomic.LOCK_SUFFIX}"
        assert lock.read_text().split("-")[0] == str(os.getpid())
        with pytest.raises(InvalidInput) as info, RunOutputs() as second:
            second.add(target)
        assert str(info.value) == (
            f"--out {str(target)!r} is being written by another privopt run "
            f"(pid {os.getpid()}); wait for it to finish or choose another --out"
        )
    assert names(tmp_path) == []  # the lock file goes with the lock
    with RunOutputs() as third:  # free again
        third.add(target)


def test_without_flock_the_lock_is_an_exclusive_file_a_dead_run_does_not_keep(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(_atomic, "_fcntl", None)
    target = tmp_path / "t.csv"
    lock = tmp_path / f".t.csv{_atomic.LOCK_SUFFIX}"
    lock.write_text(f"{dead_pid()}-0\n")  # left by a run killed with SIGKILL
    with RunOutputs() as first:
        first.add(target, kind="file")
        with pytest.raises(InvalidInput, match=rf"another privopt run \(pid {os.getpid()}\)"):
            RunOutputs().add(target, kind="file")
    assert names(tmp_path) == []


def test_outputs_of_one_run_must_not_overlap(tmp_path):
    with RunOutputs() as outputs:
        outputs.add(tmp_path / "r" / "t.csv", kind="file")
        with pytest.raises(InvalidInput, match="overlap; give each output its own path"):
            outputs.add(tmp_path / "r", option="--report-dir")


def test_folders_made_for_the_outputs_go_again_when_nothing_is_published(tmp_path):
    with pytest.raises(RuntimeError), RunOutputs() as outputs:
        outputs.add(tmp_path / "a" / "b" / "out")
        assert (tmp_path / "a" / "b").is_dir()
        raise RuntimeError("the input was bad")
    assert names(tmp_path) == []
    with RunOutputs() as outputs:
        target = outputs.add(tmp_path / "a" / "b" / "out")
        with outputs.publish() as staged:
            (staged[target] / "r.md").write_text("x")
    assert names(target) == [MARKER, "r.md"]


# -------------------------------------------------------------------- publication as a unit


def earlier_outputs(folder):
    """An earlier table and report directory, as kanon leaves them; their snapshot."""
    (folder / "t.csv").write_text("old table\n")
    report = folder / "t_report"
    report.mkdir()
    (report / MARKER).write_text("")
    (report / "report.md").write_text("old report\n")
    return folder / "t.csv", report, tree(folder)


def tree(folder):
    """Every path under ``folder`` with its bytes (None for a folder)."""
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
        for p in sorted(folder.rglob("*"))
    }


def test_a_full_disk_while_staging_leaves_every_old_output(tmp_path):
    table, report, before = earlier_outputs(tmp_path)
    published = []
    with (
        pytest.raises(OSError, match="No space left"),
        RunOutputs(force=True, on_published=published.append) as outputs,
    ):
        outputs.add(table, kind="file")
        outputs.add(report, option="--report-dir")
        with outputs.publish() as staged:
            (staged[report] / "report.md").write_text("new report\n")  # the report fits...
            with open(staged[table], "w") as f:
                f.write("new ta")
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # ...the table does not
    assert tree(tmp_path) == before and published == []


@pytest.mark.parametrize("earlier", [True, False], ids=["over-earlier", "new"])
@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_a_failure_while_swapping_rolls_back_what_was_in_place(
    tmp_path, monkeypatch, earlier, exchange
):
    if not exchange:
        monkeypatch.setattr(_atomic, "_exchange", lambda a, b: False)
    if earlier:
        table, report, before = earlier_outputs(tmp_path)
    else:
        table, report, before = tmp_path / "t.csv", tmp_path / "t_report", {}

    def cannot_rename(self, **kwargs):  # the table is in place; the report cannot follow
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(_atomic._StagedDir, "publish", cannot_rename)
    with pytest.raises(OSError, match="Input/output"), RunOutputs(force=True) as outputs:
        outputs.add(table, kind="file")
        outputs.add(report, option="--report-dir")
        with outputs.publish() as staged:
            staged[table].write_text("new table\n")
            (staged[report] / "report.md").write_text("new report\n")
    assert tree(tmp_path) == before  # the table that was already swapped is the old one again


def test_both_outputs_are_published_and_announced_together(tmp_path):
    table, report, _ = earlier_outputs(tmp_path)
    seen = []
    with RunOutputs(force=True, on_published=seen.append) as outputs:
        outputs.add(table, kind="file")
        outputs.add(report, option="--report-dir")
        with outputs.publish() as staged:
            staged[table].write_text("new table\n")
            (staged[report] / "report.md").write_text("new report\n")
    assert seen == [[table, report]] and outputs.published
    assert table.read_text() == "new table\n"
    assert (report / "report.md").read_text() == "new report\n"
    assert names(tmp_path) == ["t.csv", "t_report"]  # no backup, staging or lock left


@pytest.mark.parametrize("kind", ["file", "dir"])
def test_an_output_that_appeared_meanwhile_is_never_replaced_without_force(tmp_path, kind):
    target = tmp_path / ("t.csv" if kind == "file" else "out")
    with pytest.raises(InvalidInput) as info, RunOutputs() as outputs:
        outputs.add(target, kind=kind)
        with outputs.publish() as staged:
            if kind == "file":
                staged[target].write_text("ours")
                target.write_text("another program's")
            else:
                (staged[target] / "r.md").write_text("ours")
                target.mkdir()
                (target / "notes.txt").write_text("another program's")
    assert "appeared while this run was computing" in str(info.value)
    assert "pass --force to replace it" in str(info.value)
    kept = target if kind == "file" else target / "notes.txt"
    assert kept.read_text() == "another program's"
    assert names(tmp_path) == [target.name]


def test_force_still_never_replaces_a_foreign_directory_that_appeared(tmp_path):
    target = tmp_path / "out"
    with pytest.raises(InvalidInput, match="privopt did not write"), RunOutputs(force=True) as o:
        o.add(target)
        with o.publish() as staged:
            (staged[target] / "r.md").write_text("ours")
            target.mkdir()
            (target / "thesis.tex").write_text("years of work")
    assert (target / "thesis.tex").read_text() == "years of work"


# ------------------------------------------------------------------------ symbolic links


def test_a_symlinked_output_is_written_where_it_points_and_the_link_kept(tmp_path):
    real = tmp_path / "runs"
    real.mkdir()
    (tmp_path / "latest.csv").symlink_to("runs/t.csv")  # dangling until the first run
    (tmp_path / "latest").symlink_to("runs/out")
    for _ in range(2):  # a new output, then one replaced with --force
        with RunOutputs(force=True) as outputs:
            table = outputs.add(tmp_path / "latest.csv", kind="file")
            folder = outputs.add(tmp_path / "latest", option="--report-dir")
            assert (table, folder) == (real / "t.csv", real / "out")
            with outputs.publish() as staged:
                staged[table].write_text("t")
                (staged[folder] / "r.md").write_text("r")
    assert (tmp_path / "latest.csv").is_symlink() and (tmp_path / "latest").is_symlink()
    assert (tmp_path / "latest.csv").read_text() == "t"
    assert (tmp_path / "latest" / "r.md").read_text() == "r"
    assert names(tmp_path) == ["latest", "latest.csv", "runs"]  # no ".latest*" left behind
    assert names(real) == ["out", "t.csv"]
    with atomic_directory(tmp_path / "latest") as staging:  # the library helpers alike
        (staging / "r.md").write_text("r2")
    write_text_atomic(tmp_path / "latest.csv", "t2")
    assert (tmp_path / "latest.csv").is_symlink() and (real / "t.csv").read_text() == "t2"
    assert names(tmp_path) == ["latest", "latest.csv", "runs"] and names(real) == ["out", "t.csv"]


def test_check_output_refuses_link_loops_trailing_slashes_and_nothing(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(InvalidInput, match="symbolic link that loops back on itself"):
        check_output(tmp_path / "a")
    with pytest.raises(InvalidInput, match="ends with '/', which names a directory"):
        check_output(f"{tmp_path}/newdir/", kind="file")
    assert check_output(f"{tmp_path}/newdir/") == tmp_path / "newdir"  # a directory may
    with pytest.raises(InvalidInput, match="--out is empty"):
        check_output("")
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(InvalidInput, match="exists and is not a regular file"):
        check_output(tmp_path / "pipe", kind="file", force=True)


def test_a_signal_during_the_swap_is_held_until_it_is_done(tmp_path, monkeypatch):
    """Held by a recording handler, not a thread's signal mask: another thread may take it."""
    import signal
    import threading

    out = tmp_path / "out"
    with atomic_directory(out) as staging:
        (staging / "a.txt").write_text("old")
    real_publish = _atomic._StagedDir.publish

    def signal_from_a_thread_then_publish(self, **kwargs):
        thread = threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGINT))
        thread.start()
        thread.join()
        real_publish(self, **kwargs)

    monkeypatch.setattr(_atomic._StagedDir, "publish", signal_from_a_thread_then_publish)
    with pytest.raises(KeyboardInterrupt), atomic_directory(out) as staging:
        (staging / "a.txt").write_text("new")
    assert (out / "a.txt").read_text() == "new"  # the swap finished, then the interrupt came
    assert names(tmp_path) == ["out"]
