"""What travels between ``grade --scheduler`` and a Dask worker, and what each side refuses.

``CourseBundle`` (the course, once per worker), ``StudentJob`` (one student's notebooks, the timestamp as UTC) and
``StudentOutputs`` (what grading gave, by name); ``check_job``, ``version_differences`` and ``check_outputs``
refuse what is not the course's (docs/design/cluster.md).
"""

import dataclasses
import functools
import hashlib
import pickle
import platform
import re
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path, PurePosixPath

import nbformat

from ..intake.prepare import STAGED
from ..intake.repair import MAX_BYTES
from ..workers.pool import GraderSettings
from ..workers.worker import WorkerResult

PACKAGE = Path(__file__).resolve().parent.parent  # the autograder package: its code is part of the version
MAX_TIMESTAMP_BYTES = 1000
SAFE_STUDENT = re.compile(r"[^/\\\0]{1,255}")


class Refused(ValueError):
    """Input a worker or the coordinator will not take; the message says what is wrong with it."""


class WorkerRefused(RuntimeError):
    """A Dask worker must not grade this course: it runs other versions than the coordinator (grades could
    differ), or it has no sandbox."""


@functools.cache  # the code this process loaded, not what was edited on disk since
def code_version() -> str:
    """A digest of the autograder package's files (code, templates, names.txt): equal when the code is."""
    digest = hashlib.sha256()
    for path in sorted(p for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def versions() -> dict:
    """What must be the same wherever the class is graded: this project (version and code), torch, nbgrader,
    Python."""
    return {
        "backprop-ninja": f"{version('backprop-ninja')} (code {code_version()})",
        "torch": version("torch"),
        "nbgrader": version("nbgrader"),
        "python": ".".join(platform.python_version_tuple()[:2]),
    }


def version_differences(coordinator: dict, worker: dict) -> list:
    """One line per difference, e.g. ``torch 2.12.0 on the worker, 2.13.0 on the coordinator``."""
    return [
        f"{name} {worker.get(name, 'missing')} on the worker, {coordinator.get(name, 'missing')} on the coordinator"
        for name in sorted(set(coordinator) | set(worker))
        if coordinator.get(name) != worker.get(name)
    ]


def grade_ids(nb) -> list:
    return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")]


@dataclass(frozen=True)
class CourseBundle:
    """The course as a Dask worker needs it; ``digest`` names it (a worker keeps one private copy per digest)."""

    assignment: str
    notebooks: tuple
    """The assignment's notebook names: the only ones a job may carry."""
    cells: dict
    """notebook -> the grade_ids of its release: the only nbgrader cells a job's notebook may have."""
    config: bytes
    """nbgrader_config.py."""
    gradebook: bytes
    """The template gradebook (``gradebook.make_template``): the assignment, no student."""
    source: dict
    """Every file of source/<assignment>/ (nbgrader copies the ones that are not notebooks next to each
    autograded notebook): relative path -> bytes."""
    settings: GraderSettings
    versions: dict
    """The coordinator's ``versions()``."""
    digest: str = field(default="", compare=False)

    @classmethod
    def build(cls, root: Path, assignment: str, notebooks: list, settings: GraderSettings, template: Path):
        release = root / "release" / assignment
        cells = {n: tuple(grade_ids(nbformat.read(release / f"{n}.ipynb", as_version=4))) for n in notebooks}
        folder = root / "source" / assignment
        source = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
        config, gradebook = (root / "nbgrader_config.py").read_bytes(), template.read_bytes()
        bundle = cls(assignment, tuple(notebooks), cells, config, gradebook, source, settings, versions())
        return dataclasses.replace(bundle, digest=hashlib.sha256(pickle.dumps(bundle)).hexdigest())


@dataclass(frozen=True)
class StudentJob:
    """One student to grade: their staged notebooks and timestamp.txt."""

    student: str
    course: str
    """The ``CourseBundle.digest`` of the course they are graded in."""
    notebooks: dict
    """notebook name -> the staged notebook's bytes."""
    timestamp: bytes | None = None

    @classmethod
    def staged(cls, root: Path, assignment: str, student: str, course: str) -> "StudentJob":
        folder = root / STAGED / student / assignment
        notebooks = {p.stem: p.read_bytes() for p in sorted(folder.glob("*.ipynb"))}
        stamp = folder / "timestamp.txt"
        return cls(student, course, notebooks, submission_time(stamp.read_bytes()) if stamp.is_file() else None)


def submission_time(data: bytes) -> bytes:
    """timestamp.txt as nbgrader on this machine reads it, written as UTC (``2026-12-16 09:00:00.000000 UTC``):
    a worker reads the same instant whatever its clock (dateutil fills a missing date or year from today), time
    zone database or locale. What nbgrader cannot read is sent as it is, to fail there as it would here."""
    from nbgrader.utils import parse_utc

    try:
        when = parse_utc(data.decode("utf-8").strip())
    except (ValueError, OverflowError, UnicodeDecodeError):
        return data
    return f"{when:%Y-%m-%d %H:%M:%S.%f} UTC".encode() if when else data


@dataclass
class StudentOutputs:
    """What grading one student on a Dask worker gave."""

    result: WorkerResult | None
    """The worker's answer; None when it died or ran out of time (and was stopped), as in a local run."""
    files: dict = field(default_factory=dict)
    """Path under the course root (``autograded/<student>/<assignment>/...``, ``feedback/...``) -> (its
    permission bits, its bytes): nbgrader makes autograded notebooks read-only, and so are the copies."""
    host: str = ""
    """The host that graded them: its hostname and address (``remote.grade``)."""
    seconds: float = 0.0
    """How long the student's task took there, whatever its result (a student stopped at a limit included)."""


def check_job(bundle: CourseBundle, job: StudentJob) -> None:
    """Refused unless ``job`` is this course's: a safe student id and the course's notebooks, each valid."""
    if job.course != bundle.digest:
        raise Refused(f"the job is for course {job.course[:12]}, this worker has {bundle.digest[:12]}")
    if not SAFE_STUDENT.fullmatch(job.student) or job.student in (".", ".."):
        raise Refused(f"{job.student[:80]!r} is not a student's folder name")
    if job.timestamp is not None and len(job.timestamp) > MAX_TIMESTAMP_BYTES:
        raise Refused(f"timestamp.txt is {len(job.timestamp)} bytes, over {MAX_TIMESTAMP_BYTES}")
    if not job.notebooks:
        raise Refused("the job has no notebook")
    for name, data in job.notebooks.items():
        if name not in bundle.notebooks:
            raise Refused(f"{name[:80]!r} is not one of the course's notebooks ({', '.join(bundle.notebooks)})")
        if len(data) > MAX_BYTES:
            raise Refused(f"{name}: {len(data) / 2**20:.0f} MB, over the {MAX_BYTES / 2**20:.0f} MB limit")
        try:
            nb = nbformat.reads(data.decode("utf-8"), as_version=4)
            nbformat.validate(nb)
        except Exception as error:  # noqa: BLE001 (whatever the bytes are, the answer is: not a notebook)
            raise Refused(f"{name}: not a valid notebook ({type(error).__name__}: {str(error)[:200]})") from None
        ids = grade_ids(nb)
        foreign = sorted(set(ids) - set(bundle.cells[name]))
        if foreign or len(ids) != len(set(ids)):
            raise Refused(f"{name}: nbgrader cells that are not the release's, or twice: {foreign[:5] or ids[:5]}")


def check_outputs(files: dict, student: str, assignment: str) -> None:
    """Refused unless every path is inside the student's autograded/ or feedback/ folder of the assignment."""
    for name in files:
        path = PurePosixPath(name)
        inside = path.parts[1:3] == (student, assignment) and path.parts[0] in ("autograded", "feedback")
        if path.is_absolute() or ".." in path.parts or len(path.parts) < 4 or not inside:
            raise Refused(f"a worker sent {name[:200]!r} for {student}: outside their folders")
