"""A class on a real JupyterHub, set up as docs/jupyterhub.md says (tests/slow/hub.py): an instructor and three
students who are system users of this machine, and one more user of the hub who is not in the course.

The round trip: the instructor releases Exercise 1 through nbgrader's exchange; ada fetches it in Chromium through
JupyterLab's Assignment List, types three answers and submits there; ben (twice: the second counts) and cleo (the
Russian edition, two days late) use nbgrader's command line as themselves, with what a terminal of their JupyterLab
has; the instructor grades straight from the exchange with ``backprop-ninja grade --from-exchange`` as themself and
releases the feedback; each student fetches their own page, in their language. The grades equal those of the same
notebooks graded from an LMS zip, per step. On the way, what a student tries against the exchange is refused, each by
nbgrader, the hub or the file system, and the test asserts each refusal.
"""

import csv
import datetime
import grp
import io
import json
import os
import shutil
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
from hub import Hub, nbgrader_config, timed
from support.course import ARTIFACTS, ASSIGNMENT, REPO, Course, FeedbackPage, run_grade, temporary_course
from support.edits import SECRETS
from support.users import can_make_users, ordinary_user, reachable_install, remove_user

from autograder.authoring.submissions import grade_id, solved

pytestmark = pytest.mark.skipif(
    not can_make_users(), reason="a hub's users are system users: making them needs root, useradd and setpriv"
)

NB = "ex1_atomic_backward"
TEACHER, ADA, BEN, CLEO, DAN = "bnhub_teacher", "bnhub_ada", "bnhub_ben", "bnhub_cleo", "bnhub_dan"
STUDENTS = [ADA, BEN, CLEO]
GROUP = "bnhub_course"  # the course's system group (docs/jupyterhub.md: the exchange's permissions)
PASSWORD = "ada-types-this-1"  # ada logs in to the hub with her account's password (PAM)
ADA_TYPES = {
    "answer_dlogprobs": "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -1.0 / n",
    "answer_dprobs": "dprobs = (1.0 / probs) * dlogprobs",
    "answer_dcounts_sum_inv": "dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)",
}
BEN_FIRST = {"answer_dprobs": "dprobs = -(1.0 / probs) * dlogprobs"}  # a sign: his second submission fixes it
LATE = "+2d"  # cleo's clock as she submits: two days after the due date (10% a started day: 20% off)
CELLS = "document.querySelectorAll('.jp-NotebookPanel .jp-Cell')"
LIST = "document.querySelector('#nbgrader-assignment-list')"
CTRL = 2


def button(text: str) -> str:
    return f"[...{LIST}.querySelectorAll('button')].find(b => b.textContent.trim() === '{text}')"


class Class:
    """The machine's side of the test: users, exchange, course, hub; each user's commands as they run them."""

    def __init__(self, folder: Path):
        self.folder, self.times, self.refusals, self.users, self.hub = folder, [], [], {}, None
        try:
            self.set_up(folder)
        except BaseException:
            self.close()
            raise

    def set_up(self, folder: Path) -> None:
        install = reachable_install(folder / "install")
        self.python, venv_bin = install / "venv" / "bin" / "python", install / "venv" / "bin"
        for name in (TEACHER, *STUDENTS, DAN):
            self.users[name] = ordinary_user(name, install)
        if subprocess.run(["getent", "group", GROUP], capture_output=True).returncode != 0:  # (else a killed run's)
            subprocess.run(["groupadd", "--system", GROUP], check=True, capture_output=True)
        gid = grp.getgrnam(GROUP).gr_gid
        for name in (TEACHER, *STUDENTS):
            subprocess.run(["usermod", "-a", "-G", GROUP, name], check=True, capture_output=True)
            self.users[name].groups = [gid]
        subprocess.run(["chpasswd"], input=f"{ADA}:{PASSWORD}\n", text=True, check=True, capture_output=True)
        # the exchange, as the page makes it
        self.exchange = folder / "exchange"
        self.exchange.mkdir()
        self.exchange.chmod(0o1777)
        self.course_x = self.exchange / ASSIGNMENT
        self.course_x.mkdir()
        os.chown(self.course_x, self.users[TEACHER].uid, gid)
        self.course_x.chmod(0o2750)
        self.etc = folder / "etc-jupyter"  # the machine's /etc/jupyter, for this test's users alone
        self.etc.mkdir()
        (self.etc / "nbgrader_config.py").write_text(nbgrader_config(self.exchange))
        # the instructor's course root: the repository's nbgrader_config.py and Exercise 1's source
        self.root = self.users[TEACHER].home / "backprop-ninja"
        self.root.mkdir()
        Course(self.root)
        for other in (self.root / "source" / ASSIGNMENT).glob("*.ipynb"):
            if other.stem != NB:
                other.unlink()
        self.users[TEACHER].owns(self.root)
        (folder / "hub").mkdir(mode=0o700)
        people = {"INSTRUCTORS": [TEACHER], "STUDENTS": STUDENTS, "OTHERS": [DAN]}
        self.hub = Hub(folder / "hub", venv_bin / "jupyterhub-singleuser", people, self.etc)
        self.envs = {n: self.hub.terminal_env(u, venv_bin, self.etc) for n, u in self.users.items()}

    def run(self, name: str, *command, cwd=None, check=True, faketime=None):
        user = self.users[name]
        prefix = ["faketime", "-f", faketime] if faketime else []
        return user.run(*prefix, *command, cwd=cwd or user.home, env=self.envs[name], check=check)

    def nbgrader(self, name: str, *args, **kwargs):
        return self.run(name, self.python, "-m", "nbgrader", *args, **kwargs)

    def student_nbgrader(self, name: str, verb: str, *args, **kwargs):
        return self.nbgrader(name, verb, ASSIGNMENT, "--course", ASSIGNMENT, *args, **kwargs)

    def refused(self, who: str, what: str, result, words: str) -> None:
        """Record an attempt and assert it failed with ``words`` in its own output."""
        said = (result.stdout + result.stderr).strip()
        self.refusals.append((who, what, next((line for line in said.splitlines() if words in line), said[-200:])))
        assert result.returncode != 0 and words in said, f"{who}: {what}: {result.returncode}\n{said[-2000:]}"

    def hand_in(self, name: str, nb) -> None:
        """Write ``nb`` over the student's fetched notebook, as their JupyterLab saves it."""
        path = self.users[name].home / ASSIGNMENT / f"{NB}.ipynb"
        path.parent.mkdir(exist_ok=True)  # (dan, not in the course, has a copy from elsewhere)
        nbformat.write(nb, path)
        self.users[name].owns(path.parent)

    def close(self) -> None:
        if self.hub:
            self.hub.close()
        for user in self.users.values():
            remove_user(user)
            if user.made:
                shutil.rmtree(user.home, ignore_errors=True)
        subprocess.run(["groupdel", GROUP], capture_output=True)


def release(code: str):
    path = REPO / ("release" if code == "en" else f"editions/{code}") / ASSIGNMENT / f"{NB}.ipynb"
    return nbformat.read(path, as_version=4)


def source():
    return nbformat.read(REPO / "source" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)


def in_browser(hub_class: Class, browser, screenshot: Path) -> dict:
    """ada's side in Chromium: log in, Fetch in the Assignment List, type her answers, save, Submit."""
    c, seen = hub_class, {}
    browser.send("Emulation.setFocusEmulationEnabled", enabled=True)  # headless: the page has the keyboard
    with timed(c.times, "ada: log in, her JupyterLab starts"):
        browser.send("Page.navigate", url=f"{c.hub.url}/hub/login")
        browser.wait_for("!!document.querySelector('#username_input')")
        browser.js(
            f"document.querySelector('#username_input').value = '{ADA}';"
            f"document.querySelector('#password_input').value = '{PASSWORD}';"
            "document.querySelector('#login_submit').click()"
        )
        browser.wait_for("!!window.jupyterapp && !!document.querySelector('.jp-LabShell')", 180)
    with timed(c.times, "ada: Fetch in the Assignment List"):
        browser.js("jupyterapp.commands.execute('nbgrader:open-assignment-list')")
        browser.wait_for(f"!!({button('Fetch')})", 120)
        browser.js(f"{button('Fetch')}.click()")
        browser.wait_for(f"!!({button('Submit')})", 120)
    with timed(c.times, "ada: types three answers, saves"):
        browser.js(f"jupyterapp.commands.execute('docmanager:open', {{path: '{ASSIGNMENT}/{NB}.ipynb'}})")
        browser.wait_for(f"{CELLS}.length > 40")
        cells = release("en").cells
        for gid, code in ADA_TYPES.items():
            index = next(i for i, cell in enumerate(cells) if grade_id(cell) == gid)
            for _ in range(3):  # (a notebook still settling may take the first keys elsewhere: type again)
                browser.js(
                    f"(() => {{ const nb = jupyterapp.shell.currentWidget.content; nb.activeCellIndex = {index};"
                    "nb.mode = 'edit'; nb.activeCell.editor.focus(); })()"
                )
                time.sleep(0.3)
                browser.key("a", "KeyA", 65, modifiers=CTRL)
                browser.send("Input.insertText", text=code)
                typed = browser.js("jupyterapp.shell.currentWidget.content.activeCell.model.sharedModel.getSource()")
                browser.key("Escape", "Escape", 27)
                if typed == code:
                    break
            assert typed == code, (gid, typed)
        browser.key("s", "KeyS", 83, modifiers=CTRL)
        browser.wait_for("!jupyterapp.shell.currentWidget.context.model.dirty")
    with timed(c.times, "ada: Submit in the Assignment List"):
        browser.js("jupyterapp.commands.execute('nbgrader:open-assignment-list')")
        browser.wait_for(f"!!({button('Submit')})")
        browser.js(f"{button('Submit')}.click()")
        browser.wait_for(f"!!({button('Fetch Feedback')}) || {LIST}.textContent.includes('feedback')", 120)
    return seen


def fetch_feedback_in_browser(c: Class, browser, screenshot: Path) -> str:
    """After the feedback's release: Fetch Feedback in ada's Assignment List; the list's text."""
    with timed(c.times, "ada: Fetch Feedback in the Assignment List"):
        browser.js("document.querySelector('#refresh_assignments_list').click()")
        browser.wait_for(f"!!({button('Fetch Feedback')}) && !{button('Fetch Feedback')}.disabled", 120)
        browser.js(f"{button('Fetch Feedback')}.click()")
        try:
            browser.wait_for(f"{LIST}.textContent.includes('view feedback')", 60)
        except AssertionError:
            browser.screenshot(screenshot)
            raise AssertionError(f"no feedback in ada's Assignment List:\n{browser.js(f'{LIST}.innerText')}") from None
    time.sleep(0.5)
    browser.screenshot(screenshot)
    return browser.js(f"{LIST}.innerText")


@pytest.fixture(scope="module")
def hub_class():
    folder = Path(tempfile.mkdtemp(prefix="hub-class-", dir="/var/tmp"))
    folder.chmod(0o755)
    c = None
    try:
        c = Class(folder)
        yield c
    finally:
        if c:
            c.close()
        if not os.environ.get("KEEP_TEST_COURSE"):
            shutil.rmtree(folder, ignore_errors=True)


def newest_cache(c: Class, name: str) -> Path:
    """The student's own record of their newest submission (nbgrader's cache in their home)."""
    cache = c.users[name].home / ".local" / "share" / "jupyter" / "nbgrader_cache" / ASSIGNMENT
    return max(cache.glob(f"{name}+{ASSIGNMENT}+*"), key=lambda p: p.name.split("+")[2])


@pytest.fixture(scope="module")
def round_trip(hub_class):
    """The whole class, step by step, timed; what each step left, for the tests below."""
    from browser import Chromium

    c, found = hub_class, {}
    teacher = lambda *args, **kw: c.nbgrader(TEACHER, *args, cwd=c.root, **kw)  # noqa: E731
    due = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=10)
    found["due"] = f"{due:%Y-%m-%d %H:%M:%S} UTC"
    with timed(c.times, "instructor: generate_assignment, due date, release_assignment"):
        teacher("generate_assignment", ASSIGNMENT, "--force")
        teacher("db", "assignment", "add", ASSIGNMENT, f"--duedate={found['due']}")
        teacher("release_assignment", ASSIGNMENT)
    with timed(c.times, "ben, cleo: nbgrader fetch_assignment"):
        for name in (BEN, CLEO):
            c.student_nbgrader(name, "fetch_assignment", check=True)
    browser = Chromium(c.folder / "chromium")
    try:
        in_browser(c, browser, ARTIFACTS / "hub_assignment_list.png")
        with timed(c.times, "ben: submits twice (a sign wrong, then fixed)"):
            c.hand_in(BEN, solved(release("en"), source(), BEN_FIRST))
            c.student_nbgrader(BEN, "submit", check=True)
            c.hand_in(BEN, solved(release("en"), source()))
            c.student_nbgrader(BEN, "submit", check=True)
        with timed(c.times, "cleo: the Russian edition, submitted two days late"):
            c.hand_in(CLEO, solved(release("ru"), source()))
            c.student_nbgrader(CLEO, "submit", check=True, faketime=LATE)
        with timed(c.times, "what students try against the exchange (refusals)"):
            found["forged"] = try_to_break(c)
        with timed(c.times, "instructor: backprop-ninja grade --from-exchange"):
            grade = c.run(TEACHER, c.python, "-m", "autograder.cli", "grade", "--from-exchange", "--quiet", cwd=c.root)
            assert grade.returncode == 0, grade.stdout[-3000:] + grade.stderr[-5000:]
            found["grade"] = grade
        with timed(c.times, "instructor: nbgrader release_feedback"):
            teacher("release_feedback", ASSIGNMENT, check=True)
        with timed(c.times, "ben, cleo: nbgrader fetch_feedback"):
            for name in (BEN, CLEO):
                c.student_nbgrader(name, "fetch_feedback", check=True)
        found["ada_list"] = fetch_feedback_in_browser(c, browser, ARTIFACTS / "hub_assignment_list.png")
    finally:
        browser.close()
    found["pages"] = {
        name: list((c.users[name].home / ASSIGNMENT / "feedback").glob(f"*/{NB}.html")) for name in STUDENTS
    }
    with timed(c.times, "the same notebooks graded from an LMS zip"):
        found["zip_grades"] = graded_from_zip(c, found["due"])
    print("\nthe round trip, step by step:")
    for what, seconds in c.times:
        print(f"  {seconds:6.1f} s  {what}")
    print("the refusals:")
    for who, what, said in c.refusals:
        print(f"  {who}: {what}\n      -> {said}")
    return found


def try_to_break(c: Class) -> Path:
    """What students try against the exchange, each refused by the hub, nbgrader or the file system; ben's
    submission in ada's name, which nbgrader accepts (the grader refuses it: test_the_grader_refuses_...)."""
    inbound, instructor_source = c.course_x / "inbound", c.root / "source" / ASSIGNMENT / f"{NB}.ipynb"
    c.refused(BEN, "lists the exchange's inbound", c.run(BEN, "ls", inbound, check=False), "Permission denied")
    c.refused(
        BEN, "reads the instructor's source", c.run(BEN, "cat", instructor_source, check=False), "Permission denied"
    )
    c.refused(BEN, "reads the gradebook", c.run(BEN, "cat", c.root / "gradebook.db", check=False), "Permission denied")
    c.refused(
        BEN,
        "writes over the release in the exchange",
        c.run(BEN, "cp", "/dev/null", c.course_x / "outbound" / ASSIGNMENT / f"{NB}.ipynb", check=False),
        "Permission denied",
    )
    c.refused(
        BEN,
        "renames the course's folder in the exchange",
        c.run(BEN, "mv", c.course_x, c.exchange / "elsewhere", check=False),
        "Operation not permitted",
    )
    c.refused(DAN, "nbgrader fetch_assignment", c.student_nbgrader(DAN, "fetch_assignment", check=False), "access")
    c.hand_in(DAN, solved(release("en"), source()))
    c.refused(DAN, "nbgrader submit", c.student_nbgrader(DAN, "submit", check=False), "access")
    c.refused(
        DAN,
        "nbgrader submit, told not to ask the hub",
        c.student_nbgrader(DAN, "submit", "--Authenticator.plugin_class=nbgrader.auth.NoAuthPlugin", check=False),
        "CRITICAL",
    )
    c.refused(
        DAN, "writes into inbound", c.run(DAN, "mkdir", inbound / f"{DAN}+{ASSIGNMENT}+x", check=False), "Permission"
    )
    joined = c.hub.call(
        "POST", f"groups/nbgrader-{ASSIGNMENT}/users", c.envs[DAN]["JUPYTERHUB_API_TOKEN"], json={"users": [DAN]}
    )
    c.refusals.append((DAN, "joins the course's group on the hub", f"{joined.status_code} {joined.reason}"))
    assert joined.status_code in (403, 404), joined.text
    files = c.hub.call("GET", "", c.envs[DAN]["JUPYTERHUB_API_TOKEN"])  # (a check that the token itself works)
    assert files.ok
    opened = requests_get(f"{c.hub.url}/user/{ADA}/api/contents/{ASSIGNMENT}", c.envs[DAN]["JUPYTERHUB_API_TOKEN"])
    c.refusals.append((DAN, "opens ada's folder through her JupyterLab", f"{opened.status_code} {opened.reason}"))
    assert opened.status_code in (403, 404), opened.text
    as_ada = c.student_nbgrader(BEN, "submit", f"--student={ADA}", check=False)
    c.refused(BEN, "nbgrader submit --student=ada", as_ada, f"Not able to get Jupyterhub user: {ADA}")
    before = set(os.listdir(inbound))  # (as root)
    no_hub = "--Authenticator.plugin_class=nbgrader.auth.NoAuthPlugin"
    forged = c.student_nbgrader(BEN, "submit", f"--student={ADA}", no_hub, check=True)  # nbgrader takes it
    (made,) = set(os.listdir(inbound)) - before
    c.refusals.append((BEN, "nbgrader submit --student=ada, told not to ask the hub", f"accepted by nbgrader: {made}"))
    assert forged.returncode == 0 and made.startswith(f"{ADA}+")
    return inbound / made


def requests_get(url: str, token: str):
    import requests

    return requests.get(url, headers={"Authorization": f"token {token}"}, timeout=60, allow_redirects=False)


def graded_from_zip(c: Class, due: str) -> dict:
    """Each student's last submitted notebook and its time, from their own home (what they saved, nbgrader's cache),
    as an LMS zip, graded in another course: grades.csv's rows."""
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as z:
        for name in STUDENTS:
            newest = newest_cache(c, name)
            z.writestr(f"{name}/{NB}.ipynb", (newest / f"{NB}.ipynb").read_bytes())
            z.writestr(f"{name}/timestamp.txt", (newest / "timestamp.txt").read_bytes())
    with temporary_course("hub-zip-", only=NB) as course:
        course.nbgrader("db", "assignment", "add", ASSIGNMENT, f"--duedate={due}")
        (course.root / "class.zip").write_bytes(data.getvalue())
        run_grade(course.root, "--from", str(course.root / "class.zip"), "--quiet", "--no-feedback")
        return rows(course.root / "grades.csv")


def rows(path: Path) -> dict:
    with open(path, newline="", encoding="utf-8-sig") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def test_the_round_trip_grades_what_each_student_submitted_as_a_zip_would(round_trip, hub_class):
    hub = rows(hub_class.root / "grades.csv")
    assert set(hub) == set(STUDENTS)
    steps = [k for k in hub[ADA] if ":" in k]
    assert len(steps) == 27  # the 26 gradients, and dC again with index_add_
    for name in STUDENTS:
        for column in [*steps, "total", "late_penalty"]:
            assert hub[name][column] == round_trip["zip_grades"][name][column], (name, column)
    assert float(hub[BEN]["total"]) == float(hub[BEN]["max_total"])  # his second, fixed submission
    assert float(hub[CLEO]["late_penalty"]) == pytest.approx(0.2 * float(hub[CLEO]["max_total"]))
    typed = {f"{NB}:test_d{g.split('_d', 1)[1]}" for g in ADA_TYPES}  # her three steps earn their points, no more
    assert {k: hub[ADA][k] for k in steps} == {k: hub[BEN][k] if k in typed else "0" for k in steps}


def test_the_grader_refuses_a_submission_made_in_another_students_name(round_trip, hub_class):
    problems = json.loads((hub_class.root / "problems.json").read_text())
    forged = [p for p in problems if p["problem"] == "not_their_submission"]
    assert [(p["student"], round_trip["forged"].name in p["detail"]) for p in forged] == [(BEN, True)]
    submitted = hub_class.root / "submitted" / ADA / ASSIGNMENT / f"{NB}.ipynb"
    assert submitted.read_bytes() == (newest_cache(hub_class, ADA) / f"{NB}.ipynb").read_bytes()
    late = [p for p in problems if p["problem"] == "late_submission"]
    assert [p["student"] for p in late] == [CLEO]


def test_each_student_fetches_their_own_page_in_their_language(round_trip, hub_class):
    for name in STUDENTS:
        (page,) = round_trip["pages"][name]
        graded = hub_class.root / "feedback" / name / ASSIGNMENT / f"{NB}.html"
        assert page.read_bytes() == graded.read_bytes(), name  # theirs: the page the grader made for them
        assert page.stat().st_uid == hub_class.users[name].uid
        text = page.read_text()
        assert ('<html lang="ru">' in text) == (name == CLEO), name
        assert not [s for s in SECRETS if s in FeedbackPage(text).text.split("</style>")[-1]], name
    ru = FeedbackPage(round_trip["pages"][CLEO][0].read_text())
    assert ru.rows and all(r.mark == "✔" for r in ru.rows)
    ada = FeedbackPage(round_trip["pages"][ADA][0].read_text())
    assert [r.mark for r in ada.rows].count("✔") == 3
    assert "view feedback" in round_trip["ada_list"]


def test_the_exchange_refuses_what_students_try(round_trip, hub_class):
    # the assertions are made as each attempt runs (try_to_break); here, that all of them ran
    assert len(hub_class.refusals) == 13, hub_class.refusals
    outbound = (hub_class.course_x / "outbound" / ASSIGNMENT / f"{NB}.ipynb").read_text()
    assert not [s for s in SECRETS if s in outbound]  # what students can read holds no solution
