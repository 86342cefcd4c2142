"""A real JupyterHub on loopback, set up as docs/jupyterhub.md says: its two configuration files are taken from that
page's code blocks, with only the names and paths at their top replaced by the test's, and a few lines added for a
machine shared with other tests (free ports, the hub's files in the test's folder, an admin token for the test)."""

import re
import secrets
import subprocess
import sys
import time
from pathlib import Path

import requests
from support.course import NEWCOMER_ENV, REPO, free_port, wait_until

DOC = REPO / "docs" / "jupyterhub.md"
PROXY = REPO / ".venv" / "chp" / "node_modules" / ".bin" / "configurable-http-proxy"
ADMIN = "hub-test-admin"  # the test's service: makes tokens, as an admin would for a terminal's nbgrader


def doc_block(first_line: str) -> str:
    """The page's Python block that contains ``first_line``."""
    blocks = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), re.M | re.S)
    found = [b for b in blocks if first_line in b]
    assert len(found) == 1, f"{DOC} has {len(found)} python blocks with {first_line!r}"
    return found[0]


def with_settings(block: str, settings: dict) -> str:
    """``block`` with each ``NAME = ...`` line at its top set to ``settings[NAME]``."""
    for name, value in settings.items():
        block, n = re.subn(rf"^{name} = .*$", f"{name} = {value!r}", block, count=1, flags=re.M)
        assert n == 1, f"the page's configuration has no {name} = line"
    return block


def nbgrader_config(exchange: Path) -> str:
    """/etc/jupyter/nbgrader_config.py as the page has it, with the test's exchange."""
    block = doc_block("c.Exchange.root")
    assert block.count('"/srv/nbgrader/exchange"') == 1
    return block.replace('"/srv/nbgrader/exchange"', repr(str(exchange)))


class Hub:
    """JupyterHub as root, its proxy and users' servers on loopback; ``close()`` stops them all."""

    def __init__(self, folder: Path, singleuser: Path, people: dict, config_path: Path):
        """``people``: the page's INSTRUCTORS, STUDENTS and OTHERS; ``config_path``: the folder of the machine's
        nbgrader_config.py, which each user's server gets as JUPYTER_CONFIG_PATH (the machine's own /etc/jupyter
        stays untouched)."""
        self.folder, self.port, self.token = folder, free_port(), secrets.token_hex(32)
        self.url, self.api = f"http://127.0.0.1:{self.port}", f"http://127.0.0.1:{self.port}/hub/api"
        config = with_settings(
            doc_block("c.JupyterHub.load_groups"), {**people, "SINGLEUSER": str(singleuser), "PROXY": str(PROXY)}
        )
        hub_port, proxy_api = free_port(), free_port()
        config += f"""
# the test's own: free ports on loopback, the hub's files here, its admin service, a JupyterLab that runs offline
# and shows its app object to the test's browser
c.JupyterHub.bind_url = "{self.url}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_port}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api}"
c.JupyterHub.services = [{{"name": "{ADMIN}", "api_token": "{self.token}"}}]
c.JupyterHub.load_roles = [{{"name": "{ADMIN}", "services": ["{ADMIN}"], "scopes": ["admin:users", "tokens"]}}]
c.Spawner.environment = {{"JUPYTER_CONFIG_PATH": "{config_path}"}}
c.Spawner.args = [
    "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.expose_app_in_browser=True"
]
"""
        (folder / "jupyterhub_config.py").write_text(config)
        self.log = open(folder / "jupyterhub.log", "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", "jupyterhub_config.py"],
            cwd=folder,
            env=NEWCOMER_ENV,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_until(self._up, 120, "the hub to answer")
        except BaseException:
            self.close()
            raise

    def _up(self) -> bool:
        assert self.process.poll() is None, self.log_tail()
        try:
            return requests.get(f"{self.api}/", timeout=5).ok
        except requests.ConnectionError:
            return False

    def log_tail(self) -> str:
        return (self.folder / "jupyterhub.log").read_text(errors="replace")[-4000:]

    def call(self, method: str, path: str, token: str = None, **kwargs) -> requests.Response:
        headers = {"Authorization": f"token {token or self.token}"}
        return requests.request(method, f"{self.api}/{path}", headers=headers, timeout=120, **kwargs)

    def user_token(self, name: str) -> str:
        """A token of ``name``'s with what their server's token may do (what a terminal of theirs has)."""
        scopes = ["users:activity!user", "read:users:groups!user", "access:servers!user"]
        answer = self.call("POST", f"users/{name}/tokens", json={"scopes": scopes, "expires_in": 7200})
        assert answer.ok, (answer.status_code, answer.text)
        return answer.json()["token"]

    def terminal_env(self, user, venv_bin: Path, config_path: Path) -> dict:
        """What a terminal in ``user``'s JupyterLab has: their login's variables, the course's Python first on
        PATH, the machine's nbgrader_config.py, and the hub's variables that nbgrader asks the hub with."""
        return {
            **user.env,
            "PATH": f"{venv_bin}:{user.env['PATH']}",
            "JUPYTER_CONFIG_PATH": str(config_path),
            "JUPYTERHUB_USER": user.name,
            "JUPYTERHUB_API_URL": self.api,
            "JUPYTERHUB_API_TOKEN": self.user_token(user.name),
        }

    def close(self) -> None:
        self.process.terminate()  # the hub stops every user's server and its proxy as it ends
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def timed(times: list, what: str):
    """A context that appends (what, seconds) to ``times``."""

    class Step:
        def __enter__(self):
            self.start = time.perf_counter()

        def __exit__(self, *exc):
            times.append((what, time.perf_counter() - self.start))
            print(f"{times[-1][1]:6.1f} s  {what}", flush=True)

    return Step()
