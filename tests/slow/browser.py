"""A real headless Chromium, driven over its DevTools protocol."""

import base64
import json
import shutil
import subprocess
import time
from pathlib import Path


class Chromium:
    """Headless Chromium (Debian's ``chromium``) driven through the DevTools protocol: a websocket, no driver."""

    FLAGS = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-background-timer-throttling",
        "--disable-renderer-backgrounding",
        "--window-size=1400,1000",
    ]

    def __init__(self, profile: Path):
        import requests
        import websocket

        self.process = subprocess.Popen(
            [
                shutil.which("chromium"),
                *self.FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file, end = profile / "DevToolsActivePort", time.time() + 60
        while not (port_file.exists() and len(port_file.read_text().split()) == 2):
            assert time.time() < end and self.process.poll() is None, "Chromium did not start"
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        page = next(
            t for t in requests.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json() if t["type"] == "page"
        )
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        self.calls = 0

    def send(self, method, **params):
        self.calls += 1
        self.socket.send(json.dumps({"id": self.calls, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.calls:
                assert "error" not in message, message
                return message.get("result", {})

    def js(self, expression):
        return self.send("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def wait_for(self, expression, timeout=180):
        end = time.time() + timeout
        while not (value := self.js(expression)):
            assert time.time() < end, f"timed out waiting for {expression}"
            time.sleep(0.2)
        return value

    def key(self, key, code, keycode, modifiers=0, text=None):
        event = dict(key=key, code=code, windowsVirtualKeyCode=keycode, modifiers=modifiers)
        self.send("Input.dispatchKeyEvent", type="keyDown", **event, **({"text": text} if text else {}))
        self.send("Input.dispatchKeyEvent", type="keyUp", **event)

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        """A PNG of the viewport, or of the whole page (as tall as its content)."""
        params = {"format": "png"}
        if full_page:
            width, height = self.js("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params.update(
                captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", **params)["data"]))
        return path

    def close(self):
        self.socket.close()
        self.process.terminate()
        self.process.wait(30)
