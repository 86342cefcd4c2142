"""A zip a student handed in (Moodle takes any file), opened one level deep: the notebooks in it, each an ``Entry``
in the student's own place. Whatever is wrong with it is the student's problem, never the class's: a member that
cannot be read is ``Unreadable``, one zip at a time is held in memory, and its list of members is bounded."""

import io
import re
import zipfile
from pathlib import Path

from .download import MAX_ENTRY_BYTES, SKIPPED, Entry, read, when

MAX_ZIPPED_NOTEBOOKS = 50  # the notebooks looked at in one zip a student handed in
# besides notebooks, what is taken out of a zip to be matched as if handed in loose: a notebook exported (a .py named
# after a notebook is its not_a_notebook, as loose), or saved with a browser's ending (ex1.ipynb.txt)
EXPORTS = ("py", "html", "pdf")
MAX_ZIP_DEPTH = 3  # a zip a student handed in, and the zips in it, opened this deep
MAX_ZIPPED_DIRECTORY = 2**20  # the bytes of its list of members (46 and a name each): millions, parsed, held gigabytes


class Unreadable(Exception):
    """A member of a zip a student handed in that cannot be read: the student's problem, never the class's."""


def _shown(name: str) -> str:
    """A name from a student's zip as problems.json and the summary show it: no control characters (an escape
    sequence for the instructor's terminal), at most 200 characters."""
    name = re.sub(r"[\x00-\x1f\x7f-\x9f]", "?", name)
    return name if len(name) <= 200 else name[:199] + "…"


def _archive(entry: Entry, download: Path, held: dict) -> zipfile.ZipFile:
    """The zip a student handed in, opened; one at a time in memory (``held``), however many the class handed in."""
    if held.get("entry") is not entry:
        if "archive" in held:
            held.pop("archive").close()
        held.clear()
        data = read(entry, download)
        found = zipfile._EndRecData(io.BytesIO(data))
        if found and found[zipfile._ECD_SIZE] > MAX_ZIPPED_DIRECTORY:
            raise Unreadable(f"its list of members takes {found[zipfile._ECD_SIZE] / 2**20:.0f} MB, not opened")
        held.update(entry=entry, archive=zipfile.ZipFile(io.BytesIO(data)))
    return held["archive"]


def _member(entry: Entry, download: Path, held: dict, info: zipfile.ZipInfo) -> bytes:
    """A member of the zip a student handed in: at most its stated size (no bomb); whatever stops reading it (a bad
    CRC, a password, a compression method of its own) is Unreadable."""
    archive = _archive(entry, download, held)
    try:
        return archive.read(info)
    except Exception as error:  # noqa: BLE001 (a student's file: any damage is theirs to hear of)
        raise Unreadable(f"{type(error).__name__}: {error}") from None


def opened(entry: Entry, download: Path, held: dict) -> tuple[list, str]:
    """The notebooks in a zip a student handed in, and in the zips in it (``MAX_ZIP_DEPTH`` deep: a folder zipped with
    a zip inside, Colab's or Drive's download zipped again), each an Entry in the student's own place, under its own
    file name: (entries, why none or not all). A zip in it was left closed, and its notebooks lost without a word
    when the zip around it held another notebook."""
    budget = {"found": [], "beyond": 0, "size": 0, "unopened": []}
    why = _walk(entry, download, held, budget, 1)
    found, beyond, unopened = budget["found"], budget["beyond"], budget["unopened"]
    if why:
        return found, why
    whys = []  # (nothing is dropped in silence)
    if beyond:
        whys.append(
            f"{beyond} notebooks after its first {len(found)} not looked at (at most {MAX_ZIPPED_NOTEBOOKS} are, of "
            f"{MAX_ENTRY_BYTES / 2**20:.0f} MB together)"
        )
    if unopened:
        more = f" and {len(unopened) - 3} more" if len(unopened) > 3 else ""
        whys.append("a zip in it not opened: " + "; ".join(unopened[:3]) + more)
    if not found and not whys:
        whys.append("a zip archive with no notebook (.ipynb) in it")
    return found, "; ".join(whys)


def _walk(entry: Entry, download: Path, held: dict, budget: dict, depth: int) -> str:
    """Add the notebooks of the zip ``entry`` (and of the zips in it) to ``budget``; why it cannot be opened, or ""."""
    shown = entry.within or "/".join(entry.parts)
    if entry.size > MAX_ENTRY_BYTES:
        return f"a zip archive of {entry.size / 2**20:.0f} MB, not opened"
    try:
        members = [i for i in _archive(entry, download, held).infolist() if not i.is_dir()]
    except Unreadable as error:
        return f"a zip archive that cannot be opened ({error})"
    except Exception as error:  # noqa: BLE001 (a version of its own is NotImplementedError: the student's to hear of)
        return f"a zip archive that cannot be opened ({type(error).__name__}: {error})"
    folder = entry.parts[:-1]
    owner, _, rest = entry.parts[0].partition("_")  # a flat file's student, as its name has it, and Canvas's LATE
    prefix = "" if folder else owner + "_" + "LATE_" * rest.startswith("LATE_")
    zips = []
    for info in members:
        names = [p for p in info.filename.replace("\\", "/").split("/") if p]
        if not names or any(p in SKIPPED or p.startswith(".") for p in names):
            continue
        kind = names[-1].lower().rpartition(".")[2]
        if kind not in ("ipynb", "zip", *EXPORTS) and ".ipynb." not in names[-1].lower():
            continue  # a readme, data, macOS's litter: no problem beside a notebook
        mtime = when(info.date_time, entry.mtime)
        member = lambda info=info: _member(entry, download, held, info)
        inside = Entry(
            (*folder, prefix + names[-1]), info.file_size, mtime, member, within=f"{shown}/{_shown(info.filename)}"
        )
        if kind == "zip":
            zips.append(inside)
            continue
        # at most MAX_ZIPPED_NOTEBOOKS, of MAX_ENTRY_BYTES together, in all its zips (each read, and compared with its
        # copies: 50 of 200 MB of zeros were 10 GB to decompress)
        budget["size"] += min(info.file_size, MAX_ENTRY_BYTES + 1)
        if len(budget["found"]) == MAX_ZIPPED_NOTEBOOKS or (budget["found"] and budget["size"] > MAX_ENTRY_BYTES):
            budget["beyond"] += 1
        else:
            budget["found"].append(inside)
    for inner in zips:  # after this zip's own notebooks: one zip at a time is held
        if depth == MAX_ZIP_DEPTH:
            budget["unopened"].append(f"{inner.within} (more than {MAX_ZIP_DEPTH} zips deep)")
            continue
        why = _walk(inner, download, held, budget, depth + 1)
        if why:
            budget["unopened"].append(f"{inner.within} ({why})")
    return ""


def read_or_none(entry: Entry, download: Path) -> bytes | None:
    """The entry's bytes, None when it is a member of a student's zip that cannot be read."""
    try:
        return read(entry, download)
    except Unreadable:
        return None


def newest_readable(copies: list, download: Path, unreadable) -> tuple:
    """(the bytes of the first of ``copies`` that can be read, the copies from it on): a notebook in a student's zip
    that cannot be read is named (``unreadable``), and the next copy taken."""
    for i, (entry, shown) in enumerate(copies):
        try:
            return read(entry, download), copies[i:]
        except Unreadable as error:
            unreadable(f"{shown}: cannot be read from the zip ({error}), not collected")
    return None, []
