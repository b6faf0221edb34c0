"""Outputs that are never half-written, never clobber an input and never race another run.

Every file privopt writes goes to a temporary file beside its target, is flushed to disk and
then ``os.replace``-d onto the target, so a reader sees the old complete file or the new
complete one (:func:`atomic_file`, :func:`write_text_atomic`). An output *directory* (report,
plots, arrays) is built in a staging directory beside the target and swapped in as a unit
(:func:`atomic_directory`). An interrupt (SIGINT, SIGTERM turned into an exception by the
command line) removes the temporaries and leaves the previous output as it was.

A command-line run holds all its outputs in one :class:`RunOutputs`: each target is checked
(:func:`check_output`) and locked when the run starts, so that a second run with the same
target stops at once naming the first; all outputs are staged, then published together, or
none is. Temporary names carry the writing process's id and start time, so that a later run
removes what a killed one left (:func:`remove_stale_temporaries`) and never what a live one
is writing.

:func:`check_output` refuses a target before any input is read: one that is or contains an
input, one that exists (unless ``force``; a directory is only ever replaced when privopt wrote
it), one that cannot be written. A target that is a symbolic link is followed: the output is
written where the link points and the link itself is left as it is.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import secrets
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from privopt.errors import InvalidInput

try:
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - not POSIX: the lock falls back to an O_EXCL file
    _fcntl = None  # type: ignore[assignment]

__all__ = [
    "MARKER",
    "atomic_file",
    "write_text_atomic",
    "write_bytes_atomic",
    "atomic_directory",
    "check_output",
    "RunOutputs",
    "remove_stale_temporaries",
]

#: Name of the file that marks a directory as written by privopt: only such a directory (or an
#: empty one) is ever replaced by ``--force``, so a mistyped ``--out ~`` cannot erase a home.
MARKER = ".privopt-output"

#: Suffix of the lock file beside an output while a run holds it (``.<name>.privopt-lock``).
LOCK_SUFFIX = ".privopt-lock"

# Temporary names: ".<target name>.<tag>-<pid>-<start>-<random><target suffix>". The pid and
# the process's start time (0 where unknown) tell a later run whether the writer still lives.
_TEMP_TAGS = ("tmp", "old", "bak")
_TEMP_NAME = re.compile(r"(?P<tag>tmp|old|bak)-(?P<pid>\d+)-(?P<start>[0-9a-f]+)-[0-9a-f]{8}")


# ---------------------------------------------------------------------------------------------
# Owners of temporary files


def _start_token(pid: int) -> str:
    """The start time of process ``pid`` in clock ticks since boot, as hex; "0" if unknown.

    Together with the pid it names one process: a pid is reused, a (pid, start) pair is not.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        # Field 22 (starttime); the command name before it may hold spaces, not ")".
        return format(int(stat[stat.rindex(b")") + 2 :].split()[19]), "x")
    except (OSError, ValueError, IndexError):
        return "0"


def _owner() -> str:
    pid = os.getpid()  # read at each call: a forked child is another owner
    return f"{pid}-{_start_token(pid)}"


def _owner_alive(pid: int, start: str) -> bool:
    """Whether the process that named a temporary ``pid``/``start`` may still be running."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    except OSError:
        return True  # cannot tell: keep its files
    if start != "0":
        now = _start_token(pid)
        if now not in ("0", start):
            return False  # the pid now names a newer process
    return True


def _temp_beside(target: Path, tag: str) -> Path:
    # Hidden, unique, same directory (so os.replace stays on one file system), naming its owner
    # (for remove_stale_temporaries), and ending in the target's suffix, because writers such
    # as numpy.savez append a missing ".npz".
    token = f"{tag}-{_owner()}-{secrets.token_hex(4)}"
    return target.with_name(f".{target.name}.{token}{target.suffix}")


def _stale_owner(name: str, target: Path) -> tuple[int, str] | None:
    """(pid, start) of the writer of ``name`` if it is a temporary of ``target``, else None."""
    prefix = f".{target.name}."
    if not (name.startswith(prefix) and name.endswith(target.suffix)):
        return None
    middle = name[len(prefix) : len(name) - len(target.suffix)]
    match = _TEMP_NAME.fullmatch(middle)
    if match is None:
        return None
    return int(match["pid"]), match["start"]


def remove_stale_temporaries(path: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporaries of ``path`` that a process which has ended left beside it.

    A run killed by SIGKILL (or a power cut) cannot clean up: its staging directory, temporary
    file or old copy stays beside the target. Each such name carries its writer's pid and start
    time; those of a process that has ended are removed, those of a live one never.

    Returns
    -------
    list of Path
        What was removed.
    """
    target = Path(path)
    removed: list[Path] = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for entry in entries:
        owner = _stale_owner(entry.name, target)
        if owner is None or _owner_alive(*owner):
            continue
        stale = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(stale, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                stale.unlink()
        removed.append(stale)
    return removed


# ---------------------------------------------------------------------------------------------
# Low-level steps


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
    """Hold SIGINT/SIGTERM while a multi-step rename runs; they are delivered right after.

    The hold is a handler that only records the signal: Python runs handlers in the main
    thread whichever thread the signal reaches, so blocking it in one thread's signal mask
    would not keep it out. Off the main thread (where handlers cannot change) that thread's
    mask is all there is.
    """
    received: list[int] = []
    previous: dict[int, Any] = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) != signal.SIG_IGN:
                previous[sig] = signal.signal(sig, lambda signum, frame: received.append(signum))
    except ValueError:  # not the main thread
        with _signals_masked():
            yield
        return
    try:
        yield
    finally:
        for held, handler in previous.items():
            signal.signal(held, handler if handler is not None else signal.SIG_DFL)
        for signum in dict.fromkeys(received):  # each once, in order of arrival
            handler = previous[signum]
            if callable(handler):
                handler(signum, None)
            else:  # the default action, as if the signal arrived now
                signal.raise_signal(signum)


@contextlib.contextmanager
def _signals_masked() -> Iterator[None]:
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2


def _renameat2(a: Path, b: Path, flags: int) -> int:
    """Linux ``renameat2``: 0 on success, else the errno (ENOSYS where it does not exist)."""
    if not sys.platform.startswith("linux"):
        return errno.ENOSYS
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return errno.ENOSYS
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    renameat2.argtypes += [ctypes.c_uint]
    at_fdcwd = -100
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), flags) == 0:
        return 0
    return ctypes.get_errno()


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False if the
    platform or file system cannot."""
    return _renameat2(a, b, _RENAME_EXCHANGE) == 0


def _rename_new(source: Path, target: Path, shown: str) -> None:
    """Rename ``source`` to ``target``, which must not exist (one that appeared is refused)."""
    code = _renameat2(source, target, _RENAME_NOREPLACE)
    if code == 0:
        return
    if code == errno.EEXIST:
        raise _appeared(shown)
    if code not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        raise OSError(code, os.strerror(code), str(target))
    if os.path.lexists(target):  # no atomic no-replace rename here: the closest check
        raise _appeared(shown)
    os.rename(source, target)


def _appeared(shown: str) -> InvalidInput:
    return InvalidInput(
        f"{shown} appeared while this run was computing (written by another program); it is "
        "kept and this run's output is discarded; pass --force to replace it"
    )


def _follow_link(target: Path, option: str) -> Path:
    """``target``, or where it points when it is a symbolic link (through chains of links)."""
    if not target.is_symlink():
        return target
    try:
        os.stat(target)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise InvalidInput(
                f"{option} {str(target)!r} is a symbolic link that loops back on itself"
            ) from None
        # A dangling link: the output is created where it points.
    return Path(os.path.realpath(target))


# ---------------------------------------------------------------------------------------------
# Staged outputs: written beside the target, then put in its place (and back, on failure)


@dataclass
class _Staged:
    """One output being written: the staging path, and after publication what it replaced."""

    target: Path
    shown: str
    staging: Path = field(init=False)
    old: Path | None = field(default=None, init=False)  # the replaced content, until cleanup
    how: str = field(default="", init=False)  # how it was published, for roll_back

    def __post_init__(self) -> None:
        self.staging = _temp_beside(self.target, "tmp")

    def prepare(self) -> Path:
        """Create what the writer needs; return the staging path."""
        raise NotImplementedError

    def finish_writing(self) -> None:
        """Check the staging holds an output and flush it to disk."""
        raise NotImplementedError

    def publish(self, *, replace: bool, undoable: bool = True) -> None:
        """Put the staging at the target (``replace``: over an existing one; ``undoable``:
        keep what it replaced until :meth:`clean_up`, for :meth:`roll_back`)."""
        raise NotImplementedError

    def roll_back(self) -> None:
        """Undo :meth:`publish`: the target as it was before it."""
        raise NotImplementedError

    def clean_up(self) -> None:
        """Remove the staging and the replaced content, whichever are left."""
        raise NotImplementedError


class _StagedFile(_Staged):
    def prepare(self) -> Path:
        return self.staging  # the writer creates it

    def finish_writing(self) -> None:
        if not self.staging.is_file():
            raise FileNotFoundError(f"nothing was written to the temporary file {self.staging}")
        _fsync_path(self.staging)

    def publish(self, *, replace: bool, undoable: bool = True) -> None:
        if not os.path.lexists(self.target):
            if not replace:
                self._publish_new()
                return
            os.replace(self.staging, self.target)
            self.how = "new"
            return
        if not replace:
            raise _appeared(self.shown)
        if undoable:  # keep the old file under another name until every output is in
            self.old = _temp_beside(self.target, "bak")
            try:
                os.link(self.target, self.old)
            except OSError:  # a file system without hard links: no file for an instant
                os.rename(self.target, self.old)
        try:
            os.replace(self.staging, self.target)
        except BaseException:
            if self.old is not None and not os.path.lexists(self.target):
                os.rename(self.old, self.target)
                self.old = None
            raise
        self.how = "replaced"

    def _publish_new(self) -> None:
        try:
            os.link(self.staging, self.target)  # fails if the target appeared meanwhile
        except FileExistsError:
            raise _appeared(self.shown) from None
        except OSError:  # a file system without hard links
            _rename_new(self.staging, self.target, self.shown)
        else:
            self.staging.unlink()
        self.how = "new"

    def roll_back(self) -> None:
        if self.how == "replaced" and self.old is not None:
            os.replace(self.old, self.target)
            self.old = None
        elif self.how == "new":
            os.unlink(self.target)
        self.how = ""

    def clean_up(self) -> None:
        for path in (self.staging, self.old):
            if path is not None:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()


class _StagedDir(_Staged):
    def prepare(self) -> Path:
        os.mkdir(self.staging)  # not mkdtemp: its 0o700 mode would become the output's
        (self.staging / MARKER).write_text("written by privopt; --force may replace this folder\n")
        return self.staging

    def finish_writing(self) -> None:
        for file in self.staging.rglob("*"):
            _fsync_path(file)
        _fsync_path(self.staging)

    def publish(self, *, replace: bool, undoable: bool = True) -> None:
        if not os.path.lexists(self.target):
            _rename_new(self.staging, self.target, self.shown)
            self.how = "new"
        elif not replace and any(self.target.iterdir()):
            raise _appeared(self.shown)
        elif _exchange(self.staging, self.target):
            self.old, self.how = self.staging, "exchanged"
        else:
            self.old = _temp_beside(self.target, "old")
            os.rename(self.target, self.old)  # a reader sees no directory between the renames
            try:
                os.rename(self.staging, self.target)
            except BaseException:
                os.rename(self.old, self.target)
                self.old = None
                raise
            self.how = "renamed"

    def roll_back(self) -> None:
        if self.how == "exchanged":
            _exchange(self.staging, self.target)
        elif self.how == "renamed" and self.old is not None:
            os.rename(self.target, self.staging)
            os.rename(self.old, self.target)
        elif self.how == "new":
            os.rename(self.target, self.staging)
        self.old, self.how = None, ""

    def clean_up(self) -> None:
        for path in (self.staging, self.old):
            if path is not None and os.path.lexists(path):
                shutil.rmtree(path, ignore_errors=True)


def _publish_all(
    staged: Sequence[_Staged], *, replace: bool, check: Callable[[], None] = lambda: None
) -> None:
    """Put every staged output in place, or none (those done are rolled back on a failure).

    Call it with SIGINT/SIGTERM held (:func:`_signals_deferred`), so that no signal lands
    between two renames. ``check`` runs first (a last look at the targets).
    """
    done: list[_Staged] = []
    try:
        check()
        for item in staged:
            item.publish(replace=replace)
            done.append(item)
    except BaseException:
        for item in reversed(done):
            item.roll_back()
        raise


# ---------------------------------------------------------------------------------------------
# Atomic files and directories for library writers


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` atomically.

    Write the file to the yielded path (by name, so any library writer works). When the block
    ends normally the file is fsync-ed and ``os.replace``-d onto ``path``; when it raises
    (including ``KeyboardInterrupt``) the temporary is removed and ``path`` is untouched.
    A ``path`` that is a symbolic link is followed: the file it points to is replaced.

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
    target = _follow_link(Path(path), "path")
    if not target.parent.is_dir():
        raise InvalidInput(f"cannot write {str(target)!r}: directory {str(target.parent)!r} absent")
    if os.path.lexists(target):  # a file is replaced; a directory, pipe or device is not
        _check_existing(target, force=True, kind="file", option="path")
    item = _StagedFile(target, repr(str(target)))
    try:
        yield item.prepare()
        item.finish_writing()
        item.publish(replace=True, undoable=False)
        _fsync_path(target.parent)
    finally:
        item.clean_up()  # a no-op after the replace


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, ``os.replace``)."""
    target = Path(path)
    with atomic_file(target) as tmp, open(tmp, "wb") as f:
        f.write(data)
    return target


def write_text_atomic(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (temporary file, fsync, ``os.replace``)."""
    return write_bytes_atomic(path, text.encode(encoding))


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a staging directory beside ``path``; on success it becomes ``path`` as a unit.

    Write every output file into the yielded directory. When the block ends normally, the files
    are fsync-ed and the directory is swapped in for ``path`` (an existing ``path`` is replaced
    whole, so no old file survives beside new ones; call :func:`check_output` first, which
    refuses to replace what privopt did not write). When the block raises, the staging
    directory is removed and ``path`` is untouched. A ``path`` that is a symbolic link is
    followed: the directory it points to is replaced and the link kept.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> with atomic_directory(folder / "out") as tmp:
    ...     _ = (tmp / "report.md").write_text("# done")
    >>> sorted(p.name for p in (folder / "out").iterdir())
    ['.privopt-output', 'report.md']
    """
    target = _follow_link(Path(path), "path")
    if os.path.lexists(target) and not target.is_dir():
        raise InvalidInput(f"path {str(target)!r} exists and is not a directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    item = _StagedDir(target, repr(str(target)))
    try:
        yield item.prepare()
        item.finish_writing()
        with _signals_deferred():
            _publish_all([item], replace=True)
        _fsync_path(target.parent)
    finally:
        item.clean_up()


# ---------------------------------------------------------------------------------------------
# Locks: one run at a time per output


class _OutputLock:
    """An exclusive lock on one output, held by this process: ``.<name>.privopt-lock`` beside it.

    POSIX ``flock`` on that file: the kernel drops it when the process ends, even by SIGKILL,
    so a killed run never blocks the next one. The holder writes its pid into the file (for the
    message of a run that finds it taken) and removes the file when it lets go.
    """

    def __init__(self, target: Path, option: str) -> None:
        self.path = target.with_name(f".{target.name}{LOCK_SUFFIX}")
        self.shown = f"{option} {str(target)!r}"
        self.option = option
        self.fd: int | None = None

    def acquire(self) -> None:
        if _fcntl is None:
            self._acquire_exclusive_file()
            return
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
            try:
                _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
            except OSError as err:
                holder = self._holder(fd)
                os.close(fd)
                if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise self._busy(holder) from None
                raise
            # The previous holder removes the file as it lets go: a lock taken on a file that
            # is no longer at this path locks nothing; try again on the new file.
            if self._still_here(fd):
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"{_owner()}\n".encode())
        self.fd = fd

    def _acquire_exclusive_file(self) -> None:
        # Without flock: whoever creates the file holds the lock. Taking over the file of a run
        # that has ended is a check then an unlink, so two runs doing it at the same instant
        # could both win; flock has no such gap.
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                holder = self._holder_of_file()
                if holder is None or _owner_alive(*holder):  # None: being written right now
                    raise self._busy(holder) from None
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()  # left by a run that has ended
                continue
            os.write(fd, f"{_owner()}\n".encode())
            self.fd = fd
            return
        raise self._busy(None)

    def _still_here(self, fd: int) -> bool:
        try:
            here = os.stat(self.path)
        except FileNotFoundError:
            return False
        held = os.fstat(fd)
        return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)

    @staticmethod
    def _parse_holder(text: str) -> tuple[int, str] | None:
        match = re.fullmatch(r"(\d+)-([0-9a-f]+)", text.strip())
        return (int(match[1]), match[2]) if match else None

    def _holder(self, fd: int) -> tuple[int, str] | None:
        # The holder writes its pid just after taking the lock: wait a moment for it.
        for _ in range(20):
            holder = self._parse_holder(os.pread(fd, 64, 0).decode("ascii", "replace"))
            if holder is not None:
                return holder
            time.sleep(0.005)
        return None

    def _holder_of_file(self) -> tuple[int, str] | None:
        try:
            return self._parse_holder(self.path.read_text("ascii", "replace"))
        except OSError:
            return None

    def _busy(self, holder: tuple[int, str] | None) -> InvalidInput:
        who = (
            f"another privopt run (lock file {str(self.path)!r})"
            if holder is None
            else f"another privopt run (pid {holder[0]})"
        )
        return InvalidInput(
            f"{self.shown} is being written by {who}; wait for it to finish or choose "
            f"another {self.option}"
        )

    def release(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # while still held: see acquire
        os.close(self.fd)  # lets go of the lock
        self.fd = None


# ---------------------------------------------------------------------------------------------
# The outputs of one command-line run


@dataclass
class _Output:
    path: Path
    kind: str
    option: str
    lock: _OutputLock


class RunOutputs:
    """The outputs of one run: checked and locked at the start, published together at the end.

    :meth:`add` checks a target (:func:`check_output`) and takes its lock, so a second run
    with the same target fails at once with a message naming this one's pid; it also removes
    what a killed run left beside the target. :meth:`publish` yields a staging path per target
    (a directory, or a file name to write); when its block ends normally every output is
    flushed to disk and put in place, all or none, with SIGINT/SIGTERM held meanwhile. Without
    ``force`` an output that appeared while the run computed is never replaced. Leaving the
    ``with`` block releases the locks and, if nothing was published, removes the folders that
    :meth:`add` created for the outputs.

    Parameters
    ----------
    inputs : paths of every input of the run (None entries are skipped); never overwritten.
    force : replace earlier outputs (directories only when privopt wrote them).
    on_published : called with the published paths right after the last one is in place,
        while SIGINT/SIGTERM are still held (the command line stops treating them as
        interrupts from then on).

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> with RunOutputs() as outputs:
    ...     table = outputs.add(folder / "t.csv", kind="file")
    ...     report = outputs.add(folder / "report", option="--report-dir")
    ...     with outputs.publish() as staged:
    ...         _ = staged[table].write_text("a\\n1\\n")
    ...         _ = (staged[report] / "report.md").write_text("# done")
    >>> sorted(p.name for p in folder.iterdir())
    ['report', 't.csv']
    """

    def __init__(
        self,
        *,
        inputs: Iterable[Any] = (),
        force: bool = False,
        on_published: Callable[[list[Path]], None] | None = None,
    ) -> None:
        self.inputs = [Path(p) for p in inputs if p is not None]
        self.force = bool(force)
        self.on_published = on_published
        self.published = False
        self._outputs: list[_Output] = []
        self._created: list[Path] = []  # folders made for the outputs, removed if none published

    def __enter__(self) -> RunOutputs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(
        self, path: str | os.PathLike[str], *, kind: str = "dir", option: str = "--out"
    ) -> Path:
        """Check ``path`` and lock it for this run; return the path the output will have.

        Raises
        ------
        InvalidInput
            What :func:`check_output` refuses; the target overlaps another output of the run;
            another run holds it.
        """
        wanted = _follow_link(Path(path), option)
        for other in self._outputs:  # first: the other's lock file would make this "foreign"
            if _overlaps(wanted, other.path) or _overlaps(other.path, wanted):
                raise InvalidInput(
                    f"{option} {str(wanted)!r} and {other.option} {str(other.path)!r} overlap; "
                    "give each output its own path"
                )
        target = check_output(path, inputs=self.inputs, force=self.force, kind=kind, option=option)
        self._created += _make_parents(target)
        lock = _OutputLock(target, option)
        lock.acquire()
        self._outputs.append(_Output(target, kind, option, lock))
        # Again under the lock: a run that held it may have published meanwhile.
        check_output(target, inputs=self.inputs, force=self.force, kind=kind, option=option)
        remove_stale_temporaries(target)
        return target

    @contextlib.contextmanager
    def publish(self) -> Iterator[dict[Path, Path]]:
        """Yield ``{target: staging path}``; when the block ends normally, publish them all."""
        if self.published:
            raise InvalidInput("these outputs were already published")
        staged: list[_Staged] = [
            (_StagedFile if out.kind == "file" else _StagedDir)(
                out.path, f"{out.option} {str(out.path)!r}"
            )
            for out in self._outputs
        ]
        try:
            paths = {item.target: item.prepare() for item in staged}
            yield paths
            for item in staged:
                item.finish_writing()
            with _signals_deferred():
                _publish_all(staged, replace=self.force, check=self._recheck)
                self.published = True
                if self.on_published is not None:
                    self.on_published([item.target for item in staged])
            for folder in {item.target.parent for item in staged}:
                _fsync_path(folder)
        finally:
            for item in staged:
                item.clean_up()

    def _recheck(self) -> None:
        """The targets once more, just before they are replaced (a foreign folder may have
        appeared; without --force nothing that appeared is replaced)."""
        for out in self._outputs:
            shown = f"{out.option} {str(out.path)!r}"
            if os.path.lexists(out.path):
                if not self.force and (out.kind == "file" or any(out.path.iterdir())):
                    raise _appeared(shown)
                _check_existing(out.path, force=self.force, kind=out.kind, option=out.option)

    def close(self) -> None:
        """Release the locks; if nothing was published, remove the folders made for it."""
        for out in reversed(self._outputs):
            out.lock.release()
        self._outputs = []
        if not self.published:
            for folder in reversed(self._created):
                with contextlib.suppress(OSError):
                    folder.rmdir()  # only if still empty
        self._created = []


def _make_parents(target: Path) -> list[Path]:
    """Create the missing folders above ``target``; return those made, outermost first."""
    made = []
    for folder in reversed(target.parents):
        if not folder.exists():
            with contextlib.suppress(FileExistsError):
                folder.mkdir()
                made.append(folder)
    return made


# ---------------------------------------------------------------------------------------------
# Checks of an output target


def _overlaps(target: Path, source: Path) -> bool:
    """True if ``target`` is ``source`` (also through links) or a directory containing it."""
    t, s = Path(os.path.realpath(target)), Path(os.path.realpath(source))
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
    path : the output directory (``kind="dir"``) or file (``kind="file"``). A symbolic link
        is followed: the returned path is where it points.
    inputs : paths of every input of the run (None entries are skipped).
    force : replace an existing output. A directory is replaced only when it is empty or was
        written by privopt (it holds the :data:`MARKER` file).
    kind : ``"dir"`` or ``"file"``.
    option : the option's name for messages (e.g. ``"--report-dir"``).

    Raises
    ------
    InvalidInput
        The target is empty, a file name ending in "/", a symbolic link loop, or is, or
        contains, an input; exists (without ``force``), or is of the other kind, or is a
        directory privopt did not write; or cannot be written.
    """
    if kind not in ("dir", "file"):
        raise InvalidInput(f"kind must be 'dir' or 'file', got {kind!r}")
    text = os.fspath(path)
    if not text:
        raise InvalidInput(f"{option} is empty; give a path")
    if kind == "file" and text.endswith(tuple(s for s in (os.sep, os.altsep) if s)):
        raise InvalidInput(
            f"{option} {text!r} ends with {text[-1]!r}, which names a directory; "
            f"{option} takes a file name"
        )
    target = _follow_link(Path(text), option)
    for source in inputs:
        if source is not None and _overlaps(target, Path(source)):
            raise InvalidInput(
                f"{option} {str(target)!r} is, or contains, the input {str(source)!r}; "
                "choose another output path (inputs are never overwritten)"
            )
    if os.path.lexists(target):
        _check_existing(target, force=force, kind=kind, option=option)
    _check_writable(target, option)
    return target


def _check_existing(target: Path, *, force: bool, kind: str, option: str) -> None:
    shown = str(target)
    if kind == "file":
        if target.is_dir():
            raise InvalidInput(f"{option} {shown!r} is a directory; give a file name")
        if not target.is_file():
            raise InvalidInput(f"{option} {shown!r} exists and is not a regular file")
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
