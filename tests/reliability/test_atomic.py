"""Atomic files and directories, and the output checks, on their own."""

from __future__ import annotations

import errno
import os
import stat

import numpy as np
import pytest
from privopt import _atomic
from privopt._atomic import (
    MARKER,
    atomic_directory,
    atomic_file,
    check_output,
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
