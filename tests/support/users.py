"""Ordinary users of this machine, for the tests of what people who are not root do: grade as themselves, use a
JupyterHub. Where the tests run as root, a test makes the users it needs (``useradd``) and gives them an install of
the course they can reach; where they do not, the suite itself is the one ordinary user it can be.

An install they can reach: the tests' own venv usually lies under a folder only its owner may enter (a fresh clone
in a private temporary folder, as CI makes it). So the users get a copy of it in an open folder, made of hard links
where the file system allows (a second or two), with the few files that name the old place rewritten: the venv's
``pyvenv.cfg``, its scripts' ``#!`` lines, the editable install's map to the ``autograder`` package (a copy of the
checkout's package and what it reads goes beside it), and, when the Python the venv was made from is private too
(pyenv under /root), the system's Python of the same version in its place (the packages are built for the version).
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHECKOUT = ("autograder", "pyproject.toml", "course", "editions")  # what the package reads of its checkout
ROOT = os.geteuid() == 0


def root_tools_on_path() -> None:
    """As root, put sbin on PATH: the tools that make users and network namespaces (useradd, ip) are there, on a
    root shell's PATH but not on the one CI gives a newcomer (``env -i PATH=/usr/bin:/bin``)."""
    if ROOT:
        os.environ["PATH"] = ":".join(dict.fromkeys([*os.environ["PATH"].split(":"), "/usr/sbin", "/sbin"]))


@dataclass
class User:
    """One user of the machine, and how the tests run a command as them."""

    name: str
    uid: int
    gid: int
    home: Path
    python: str
    """A Python with the course's packages that this user can run."""
    made: bool = False
    """The test made the account (and removes it)."""
    groups: list = field(default_factory=list)

    @property
    def env(self) -> dict:
        """A fresh login's environment: their home, a minimal PATH (no venv), nothing else."""
        return {"HOME": str(self.home), "PATH": "/usr/local/bin:/usr/bin:/bin", "USER": self.name}

    def argv(self, *command) -> list:
        """``command`` run as this user (as it is, when the suite is this user)."""
        if self.uid == os.geteuid():
            return [str(c) for c in command]
        groups = ["--groups=" + ",".join(map(str, self.groups))] if self.groups else ["--clear-groups"]
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", *groups, "--", *map(str, command)]

    def run(self, *command, cwd=None, env=None, timeout=900, check=False) -> subprocess.CompletedProcess:
        result = subprocess.run(  # from their home by default: a Python puts its working folder first on its path
            self.argv(*command), cwd=cwd or self.home, env=env or self.env, capture_output=True, text=True,
            timeout=timeout,
        )  # fmt: skip
        if check and result.returncode != 0:
            raise AssertionError(f"{self.name}: {command} failed:\n{result.stdout[-3000:]}\n{result.stderr[-4000:]}")
        return result

    def owns(self, path: Path) -> None:
        """Give ``path`` and everything under it (files the test made, never hard links) to this user."""
        for folder, dirs, files in os.walk(path):
            for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                os.lchown(name, self.uid, self.gid)


def can_make_users() -> bool:
    return ROOT and shutil.which("useradd") is not None and shutil.which("setpriv") is not None


def ordinary_user(name: str, install: Path, home: Path | None = None) -> User:
    """As root: the system user ``name`` (made, with a group of its own; or taken over from a run that was killed),
    whose home is ``home`` (made, theirs), and who runs the course from ``install`` (``reachable_install``). Not as
    root: the suite's own user."""
    if not ROOT:
        me = pwd.getpwuid(os.getuid())
        return User(me.pw_name, me.pw_uid, me.pw_gid, Path(home or me.pw_dir), sys.executable)
    home = Path(home or tempfile.mkdtemp(prefix=f"{name}-home-", dir="/var/tmp"))
    home.mkdir(parents=True, exist_ok=True)
    try:  # a run that was killed left its user: this run takes it over, with this home, and removes it after
        pwd.getpwnam(name)
        subprocess.run(["usermod", "--home", str(home), name], check=True, capture_output=True)
    except KeyError:  # its home in the user database too: what JupyterHub's spawner starts the user's server in
        account = [
            "--system",
            "--user-group",
            "--no-create-home",
            "--home-dir",
            str(home),
            "--shell",
            "/usr/sbin/nologin",
        ]
        subprocess.run(["useradd", *account, name], check=True, capture_output=True)
    entry = pwd.getpwnam(name)
    user = User(name, entry.pw_uid, entry.pw_gid, home, str(install / "venv" / "bin" / "python"), made=True)
    user.owns(home)
    home.chmod(0o700)
    return user


def remove_user(user: User) -> None:
    """Remove an account the test made (and every process it left)."""
    if user.made:
        subprocess.run(["pkill", "-KILL", "-u", user.name], capture_output=True)
        subprocess.run(["userdel", user.name], capture_output=True)


def _runs(argv: list) -> bool:
    return subprocess.run(argv, capture_output=True, timeout=120).returncode == 0


def _copy_tree(source: str, target: Path) -> None:
    """Hard links where the file system allows, else a copy (either keeps modes: the files stay read-only)."""
    if subprocess.run(["cp", "-al", source, str(target)], capture_output=True).returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        subprocess.run(["cp", "-a", source, str(target)], check=True)


def _rewrite(path: Path, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in a file of the copy: a new file, never a write through a hard link."""
    text = path.read_bytes()
    if old.encode() in text:
        mode = path.stat().st_mode
        path.unlink()
        path.write_bytes(text.replace(old.encode(), new.encode()))
        path.chmod(mode & 0o7777)


def reachable_install(folder: Path, probe_uid: int = 65534) -> Path:
    """In ``folder`` (made open to all): ``venv/``, the tests' venv relocated there, and ``repo/``, the part of the
    checkout it runs (``CHECKOUT``). ``probe_uid`` is who must be able to run the Python it was made from (else
    the system's is used)."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    venv, repo = folder / "venv", folder / "repo"
    if venv.exists():
        return folder
    for part in CHECKOUT:
        if (REPO / part).is_dir():
            shutil.copytree(REPO / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(REPO / part, repo / part)
    probe = ["setpriv", f"--reuid={probe_uid}", f"--regid={probe_uid}", "--clear-groups", "--"]
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    base_python = Path(os.path.realpath(sys.executable))
    check = "import sys; sys.exit(sys.base_prefix != sys.argv[1])"  # (its own library, not another Python's)
    if not _runs([*probe, str(base_python), "-c", check, sys.base_prefix]):  # a private Python (pyenv in /root):
        public = shutil.which(version, path="/usr/local/bin:/usr/bin")  # the system's of the same version instead
        assert public, f"no {version} that other users can run, for the copy of the venv"
        base_python = Path(os.path.realpath(public))
    prefix = os.path.realpath(sys.prefix)  # a venv reached through a link (a clone's .venv -> the main checkout's):
    _copy_tree(prefix, venv)  # its files are copied; the link copied, every change below went into the venv itself
    for name in ("python", "python3", version):
        link = venv / "bin" / name
        if link.is_symlink():
            link.unlink()
            link.symlink_to(base_python)
    config = venv / "pyvenv.cfg"
    lines = [
        f"home = {base_python.parent}" if line.startswith("home =") else line
        for line in config.read_text().splitlines()
    ]
    config.unlink()
    config.write_text("\n".join(lines) + "\n")
    for script in (venv / "bin").iterdir():
        if script.is_file() and not script.is_symlink() and script.read_bytes()[:2] == b"#!":
            _rewrite(script, prefix, str(venv))
    for finder in venv.glob("lib/python*/site-packages/__editable__*"):  # the checkout it was installed from, which
        installed = re.search(r"'autograder': '([^']+)'", finder.read_text())  # a clone's venv may not be
        _rewrite(finder, installed.group(1) if installed else str(REPO / "autograder"), str(repo / "autograder"))
    return folder
