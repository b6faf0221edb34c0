"""Outputs that are never half-written and never clobber an input.

Every file privopt writes goes to a temporary file beside its target, is flushed to disk and
then ``os.replace``-d onto the target, so a reader sees the old complete file or the new
complete one (:func:`atomic_file`, :func:`write_text_atomic`). An output *directory* (report,
plots, arrays) is built in a staging directory beside the target and swapped in as a unit
(:func:`atomic_directory`). An interrupt (SIGINT, SIGTERM turned into an exception by the
command line) removes the temporaries and leaves the previous output as it was.

:func:`check_output` refuses a target before any input is read: one that is or contains an
input, one that exists (unless ``force``; a directory is only ever replaced when privopt wrote
it), one that cannot be written.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from privopt.errors import InvalidInput

__all__ = [
    "MARKER",
    "atomic_file",
    "write_text_atomic",
    "write_bytes_atomic",
    "atomic_directory",
    "check_output",
]

#: Name of the file that marks a directory as written by privopt: only such a directory (or an
#: empty one) is ever replaced by ``--force``, so a mistyped ``--out ~`` cannot erase a home.
MARKER = ".privopt-output"


def _temp_beside(target: Path, tag: str) -> Path:
    # Hidden, unique, same directory (so os.replace stays on one file system), and ending in
    # the target's suffix, because writers such as numpy.savez append a missing ".npz".
    return target.with_name(f".{target.name}.{secrets.token_hex(4)}.{tag}{target.suffix}")


def _fsync_path(path: Path) -> None:
    flags = (os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)) if path.is_dir() else os.O_RDONLY
    try:
        fd = os.open(path, flags)
    except OSError:  # e.g. directories cannot be opened on some platforms
        return
    try:
        os.fsync(fd)
    except OSError:  # fsync of a directory is not supported everywhere; the data is synced
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while a multi-step rename runs; they are delivered right after."""
    mask = {signal.SIGINT, signal.SIGTERM}
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, mask)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` atomically.

    Write the file to the yielded path (by name, so any library writer works). When the block
    ends normally the file is fsync-ed and ``os.replace``-d onto ``path``; when it raises
    (including ``KeyboardInterrupt``) the temporary is removed and ``path`` is untouched.

    Parameters
    ----------
    path : the final file; its directory must exist.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> folder = Path(tempfile.mkdtemp())
    >>> with atomic_file(folder / "a.npz") as tmp:
    ...     np.savez(tmp, x=np.arange(3))
    >>> sorted(p.name for p in folder.iterdir())
    ['a.npz']
    """
    target = Path(path)
    if not target.parent.is_dir():
        raise InvalidInput(f"cannot write {str(target)!r}: directory {str(target.parent)!r} absent")
    tmp = _temp_beside(target, "tmp")
    try:
        yield tmp
        if not tmp.is_file():
            raise FileNotFoundError(f"nothing was written to the temporary file {tmp}")
        _fsync_path(tmp)
        os.replace(tmp, target)
        _fsync_path(target.parent)
    finally:
        tmp.unlink(missing_ok=True)  # a no-op after the replace


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, ``os.replace``)."""
    target = Path(path)
    with atomic_file(target) as tmp, open(tmp, "wb") as f:
        f.write(data)
    return target


def write_text_atomic(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (temporary file, fsync, ``os.replace``)."""
    return write_bytes_atomic(path, text.encode(encoding))


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False if the
    platform or file system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def _swap_in(staging: Path, target: Path) -> Path | None:
    """Put ``staging`` at ``target``; return where the old content now lies (to delete)."""
    if not target.exists():
        os.rename(staging, target)
        return None
    if _exchange(staging, target):
        return staging
    old = _temp_beside(target, "old")
    os.rename(target, old)  # a reader sees no directory for the instant between the renames
    os.rename(staging, target)
    return old


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a staging directory beside ``path``; on success it becomes ``path`` as a unit.

    Write every output file into the yielded directory. When the block ends normally, the files
    are fsync-ed and the directory is swapped in for ``path`` (an existing ``path`` is replaced
    whole, so no old file survives beside new ones; call :func:`check_output` first, which
    refuses to replace what privopt did not write). When the block raises, the staging
    directory is removed and ``path`` is untouched.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> with atomic_directory(folder / "out") as tmp:
    ...     _ = (tmp / "report.md").write_text("# done")
    >>> sorted(p.name for p in (folder / "out").iterdir())
    ['.privopt-output', 'report.md']
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = _temp_beside(target, "tmp")
    os.mkdir(staging)  # not mkdtemp: its 0o700 mode would become the output's
    old: Path | None = None
    committed = False
    try:
        (staging / MARKER).write_text("written by privopt; --force may replace this folder\n")
        yield staging
        for file in staging.rglob("*"):
            _fsync_path(file)
        _fsync_path(staging)
        with _signals_deferred():
            old = _swap_in(staging, target)
            committed = True
        _fsync_path(target.parent)
    finally:
        if not committed:
            shutil.rmtree(staging, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def _overlaps(target: Path, source: Path) -> bool:
    """True if ``target`` is ``source`` (also through links) or a directory containing it."""
    t, s = target.resolve(), source.resolve()
    if t == s or t in s.parents:
        return True
    with contextlib.suppress(OSError):
        return target.exists() and source.exists() and os.path.samefile(target, source)
    return False


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path.cwd()


def _check_writable(target: Path, option: str) -> None:
    """Probe, without leaving anything behind, that ``target`` can be created."""
    folder = _nearest_existing(target.parent if target.parent != target else target)
    if not folder.is_dir():
        raise InvalidInput(
            f"{option} {str(target)!r} cannot be written: {str(folder)!r} is not a directory"
        )
    probe = folder / f".privopt-write-probe.{secrets.token_hex(4)}"
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError as err:
        reason = (err.strerror or type(err).__name__).lower()
        raise InvalidInput(
            f"{option} {str(target)!r} is not writable: no file can be created in the "
            f"folder {str(folder)!r} ({reason})"
        ) from None
    probe.unlink()


def check_output(
    path: str | os.PathLike[str],
    *,
    inputs: Iterable[Any] = (),
    force: bool = False,
    kind: str = "dir",
    option: str = "--out",
) -> Path:
    """Refuse an output target before anything is read or computed; return it as a Path.

    Parameters
    ----------
    path : the output directory (``kind="dir"``) or file (``kind="file"``).
    inputs : paths of every input of the run (None entries are skipped).
    force : replace an existing output. A directory is replaced only when it is empty or was
        written by privopt (it holds the :data:`MARKER` file).
    kind : ``"dir"`` or ``"file"``.
    option : the option's name for messages (e.g. ``"--report-dir"``).

    Raises
    ------
    InvalidInput
        The target is, or contains, an input; exists (without ``force``), or is of the other
        kind, or is a directory privopt did not write; or cannot be written.
    """
    if kind not in ("dir", "file"):
        raise InvalidInput(f"kind must be 'dir' or 'file', got {kind!r}")
    target = Path(path)
    for source in inputs:
        if source is not None and _overlaps(target, Path(source)):
            raise InvalidInput(
                f"{option} {str(target)!r} is, or contains, the input {str(source)!r}; "
                "choose another output path (inputs are never overwritten)"
            )
    if target.exists():
        _check_existing(target, force=force, kind=kind, option=option)
    _check_writable(target, option)
    return target


def _check_existing(target: Path, *, force: bool, kind: str, option: str) -> None:
    shown = str(target)
    if kind == "file":
        if target.is_dir():
            raise InvalidInput(f"{option} {shown!r} is a directory; give a file name")
        if not force:
            raise InvalidInput(f"{option} {shown!r} already exists; pass --force to replace it")
        return
    if not target.is_dir():
        raise InvalidInput(f"{option} {shown!r} exists and is not a directory")
    if not any(target.iterdir()):
        return
    if not (target / MARKER).is_file():
        raise InvalidInput(
            f"{option} {shown!r} is a non-empty directory that privopt did not write; "
            "choose a new or empty directory (it is never replaced, even with --force)"
        )
    if not force:
        raise InvalidInput(
            f"{option} {shown!r} already holds a privopt output; pass --force to replace it"
        )
