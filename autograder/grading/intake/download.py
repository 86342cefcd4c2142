"""The files of an LMS download (a zip or a folder), each an ``Entry`` read when it is needed."""

import datetime
import os
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...common.errors import GradingError

MAX_ENTRY_BYTES = 200 * 2**20  # a zip entry bigger than this is reported, not read
SKIPPED = {"__MACOSX", ".ipynb_checkpoints", ".DS_Store", "Thumbs.db"}


@dataclass
class Entry:
    parts: tuple  # path inside the download, split
    size: int
    mtime: float
    read: Callable[[], bytes]
    path: Path | None = None  # the file itself, when the download is a folder
    within: str = ""  # the zip a student handed in that holds it, as shown
    owner: str = ""  # the student of that zip


def when(date_time: tuple, otherwise: float) -> float:
    """A zip member's time as a timestamp; ``otherwise`` when it is no date (month 0, hour 31: anyone can write one)."""
    try:
        return datetime.datetime(*date_time).timestamp()
    except (ValueError, OverflowError, OSError):
        return otherwise


def entries(download: Path) -> tuple:
    """(the files of the download, the names of archive members whose path is unsafe)."""
    if download.is_file() and zipfile.is_zipfile(download):
        archive = zipfile.ZipFile(download)
        entries, unsafe = [], []
        for info in archive.infolist():
            if info.is_dir():
                continue
            parts = tuple(p for p in info.filename.replace("\\", "/").split("/") if p and p != ".")
            if ".." in parts or not parts or info.filename.startswith("/"):
                unsafe.append(info.filename)  # never trust paths in an archive
                continue
            mtime = when(info.date_time, 0.0)
            entries.append(Entry(parts, info.file_size, mtime, lambda info=info: archive.read(info)))
        return entries, unsafe
    if download.is_dir():
        entries = []
        for folder, dirs, files in os.walk(download):
            dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(folder, d)))
            for name in sorted(files):
                path = Path(folder) / name
                if path.is_symlink() or not path.is_file():
                    continue
                st = path.stat()
                read = lambda path=path: path.read_bytes()
                entries.append(Entry(path.relative_to(download).parts, st.st_size, st.st_mtime, read, path))
        return entries, []
    if not download.exists():
        raise GradingError(f"{download}: no such file or folder (--from names the LMS's download, a .zip or a folder)")
    raise GradingError(f"{download}: not a zip file (a download cut short?) or a folder")


def read(entry: Entry, download: Path) -> bytes:
    """The entry's bytes; a GradingError that says what to do when the download is damaged there (a bad CRC, a cut
    stream: it was a traceback)."""
    try:
        return entry.read()
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as error:
        raise GradingError(
            f"{download}: {'/'.join(entry.parts)} is damaged in it ({error}); download it again and run grade again "
            "(the files before it were collected, none is graded yet)"
        ) from None
