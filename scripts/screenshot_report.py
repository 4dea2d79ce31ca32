#!/usr/bin/env python
"""Screenshots of a Snakemake HTML report, so it can be reviewed without a browser.

    python scripts/screenshot_report.py results/report.html screenshots/

Writes ``00_main.png`` (the page as it opens), ``01_results.png`` (the list of results) and one PNG per
figure or table view, named after the result (``NN_table1.html.png``, ``NN_curves_steps.png.png``, ...).

It drives headless Chromium (Debian package ``chromium``) over the Chrome DevTools protocol through a pipe
(``--remote-debugging-pipe``), so it needs no Python package beyond the standard library. The browser runs
with every network route closed: host names do not resolve, and the page's only route out is a local
listener that answers nothing and records every connection. ``tests/workflow/test_report_html.py`` uses the same
driver to check that the report renders completely offline.
"""
from __future__ import annotations

import base64
import fcntl
import json
import math
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
EXTRA_FLAGS: list[str] = []
DISABLED_FEATURES = ["Translate", "OptimizationHints", "MediaRouter", "InterestFeedContentSuggestions",
                     "NetworkTimeServiceQuerying", "PreconnectToSearch", "AimEligibilityService",
                     "AimServerEligibilityEnabled", "AimServerRequestOnStartupEnabled"]
LOCAL_SCHEMES = ("data:", "about:", "blob:")


class CDPError(RuntimeError):
    pass


class RecordingProxy:
    """A TCP listener on localhost used as the browser's only network route: it records the first line of
    every connection (e.g. ``CONNECT example.org:443``) and closes it, so any request fails fast."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            with conn:
                conn.settimeout(1.0)
                try:
                    first = conn.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
                except OSError:
                    first = ""
                self.connections.append(first or "(connection without a request line)")

    def close(self):
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


def _high_fd(fd: int) -> int:
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe; one page, flattened sessions.

    Records every network request any frame or worker of the page makes (``requests``), uncaught
    exceptions and console errors (``errors``), and every connection the page's browser context opened
    (``proxy.connections``; the browser's own background calls go to ``background_proxy`` instead).
    """

    def __init__(self, executable: str = CHROMIUM, width: int = 1600, height: int = 1000, timeout: float = 60):
        self.executable, self.width, self.height, self.timeout = executable, width, height, timeout
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.events: list[dict] = []
        self._next_id = 0
        self._responses: dict[int, dict] = {}
        self._buffer = b""

    # -- process --------------------------------------------------------------------------------------
    def __enter__(self):
        if not Path(self.executable).exists():
            raise FileNotFoundError(f"{self.executable} not found (Debian: apt-get install chromium)")
        # Two closed routes out. The report's page lives in its own browser context whose only route is
        # `proxy`, so every connection there comes from the page. The browser's own services (sign-in,
        # clock, messaging: they call out even with every background switch set) use `background_proxy`.
        self.proxy, self.background_proxy = RecordingProxy(), RecordingProxy()
        self.profile = tempfile.mkdtemp(prefix="report-chromium-")
        self._log = open(Path(self.profile) / "chromium.log", "w+b")  # a file: a full pipe would stall it
        cmd_r, self._cmd_w = os.pipe()
        self._resp_r, resp_w = os.pipe()
        # Above fd 9, so that the redirections onto fds 3 and 4 below (bash: dash knows only fds 0-9) cannot collide.
        cmd_r, resp_w = (_high_fd(fd) for fd in (cmd_r, resp_w))
        flags = [
            "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-extensions", "--disable-default-apps", "--disable-dev-shm-usage", "--mute-audio",
            "--disable-client-side-phishing-detection", "--disable-domain-reliability", "--no-pings",
            "--metrics-recording-only", "--disable-breakpad", "--safebrowsing-disable-auto-update",
            "--password-store=basic", "--disable-features=" + ",".join(DISABLED_FEATURES), *EXTRA_FLAGS,
            "--hide-scrollbars", f"--window-size={self.width},{self.height}",
            f"--user-data-dir={self.profile}", "--remote-debugging-pipe",
            f"--proxy-server=http://127.0.0.1:{self.background_proxy.port}", "--proxy-bypass-list=<-loopback>",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",  # and no name resolves
            "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        ]
        if os.geteuid() == 0:
            flags.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
        # The browser reads commands from fd 3 and writes replies to fd 4.
        launch = f'exec "$0" "$@" 3<&{cmd_r} 4>&{resp_w} {cmd_r}<&- {resp_w}>&-'
        self.proc = subprocess.Popen(["bash", "-c", launch, self.executable, *flags, "about:blank"],
                                     pass_fds=(cmd_r, resp_w), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self._log, start_new_session=True)
        os.close(cmd_r)
        os.close(resp_w)
        try:
            self._attach()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        try:
            if self.proc.poll() is None:
                try:
                    self.send("Browser.close", timeout=5)
                except (CDPError, OSError):
                    pass
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)  # the group of the browser started above
                    self.proc.wait(timeout=10)
        finally:
            for fd in (self._cmd_w, self._resp_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._log.close()
            self.proxy.close()
            self.background_proxy.close()
            shutil.rmtree(self.profile, ignore_errors=True)

    # -- protocol -------------------------------------------------------------------------------------
    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float | None = None) -> dict:
        self._next_id += 1
        msg_id = self._next_id
        message = {"id": msg_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._cmd_w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        while msg_id not in self._responses:
            self._read(deadline, f"reply to {method}")
        reply = self._responses.pop(msg_id)
        if "error" in reply:
            raise CDPError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def _read(self, deadline: float, what: str) -> None:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {what} from Chromium within the time limit")
            ready, _, _ = select.select([self._resp_r], [], [], left)
            if ready:
                chunk = os.read(self._resp_r, 1 << 20)
                if not chunk:
                    self._log.seek(0)
                    err = self._log.read().decode(errors="replace")[-2000:]
                    raise CDPError(f"Chromium closed the DevTools pipe (exit {self.proc.poll()}): {err}")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message = json.loads(raw)
        if "id" in message:
            self._responses[message["id"]] = message
        else:
            self._on_event(message)

    def _on_event(self, event: dict) -> None:
        method, params = event.get("method"), event.get("params", {})
        self.events.append(event)
        if method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
        elif method == "Network.webSocketCreated":
            self.requests.append(params["url"])
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.errors.append(f"exception: {details.get('exception', {}).get('description') or details['text']}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            self.errors.append("console.error: " + " ".join(str(a.get("value", a.get("description")))
                                                            for a in params.get("args", [])))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            self.errors.append(f"log: {params['entry']['text']} {params['entry'].get('url', '')}")
        elif method == "Target.attachedToTarget":
            # A frame in its own process (or a worker): watch its network too, then let it run.
            self._watch(params["sessionId"])
            self.send("Runtime.runIfWaitingForDebugger", session=params["sessionId"])

    def _watch(self, session: str) -> None:
        for domain in ("Network", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=session)
        self.send("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True},
                  session=session)

    def _attach(self) -> None:
        context = self.send("Target.createBrowserContext", {
            "proxyServer": f"http://127.0.0.1:{self.proxy.port}", "proxyBypassList": "<-loopback>"})
        target = self.send("Target.createTarget", {"url": "about:blank",
                                                   "browserContextId": context["browserContextId"]})
        self.session = self.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})[
            "sessionId"]
        self.send("Page.enable", session=self.session)
        self._watch(self.session)
        self.set_viewport()

    # -- page -----------------------------------------------------------------------------------------
    def set_viewport(self, height: int | None = None, width: int | None = None) -> None:
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": int(width or self.width), "height": int(height or self.height), "deviceScaleFactor": 1,
                   "mobile": False}, session=self.session)

    def navigate(self, url: str) -> None:
        self.send("Page.navigate", {"url": url}, session=self.session)
        self.wait_for(f"location.href === {json.dumps(url)} && document.readyState === 'complete'")

    def evaluate(self, expression: str, context: int | None = None):
        params = {"expression": expression, "returnByValue": True, "awaitPromise": True}
        if context is not None:
            params["contextId"] = context
        reply = self.send("Runtime.evaluate", params, session=self.session)
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            raise CDPError(f"{expression[:80]}...: {details.get('exception', {}).get('description', details['text'])}")
        return reply["result"].get("value")

    def wait_for(self, expression: str, timeout: float | None = None, context: int | None = None):
        """Poll ``expression`` in the page until it is truthy; returns its value."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            try:
                value = self.evaluate(expression, context)
            except CDPError:
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"page never satisfied: {expression}")
            self.pump(0.1)

    def pump(self, seconds: float) -> None:
        """Process events for ``seconds``."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                self._read(deadline, "event")
        except TimeoutError:
            pass

    def frame_context(self, url_prefix: str) -> int:
        """An isolated JavaScript world in the child frame whose URL starts with ``url_prefix``."""
        def children(node):
            for child in node.get("childFrames", []):
                yield child["frame"]
                yield from children(child)
        tree = self.send("Page.getFrameTree", session=self.session)["frameTree"]
        for frame in children(tree):
            if frame.get("url", "").startswith(url_prefix):
                return self.send("Page.createIsolatedWorld", {"frameId": frame["id"], "worldName": "check"},
                                 session=self.session)["executionContextId"]
        raise CDPError(f"no frame with URL {url_prefix[:60]}...")

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", {"format": "png"}, session=self.session)["data"]
        Path(path).write_bytes(base64.b64decode(data))

    def off_page_requests(self, page_url: str) -> list[str]:
        """Requests that left the report: anything but the report file itself and in-page data."""
        return [u for u in self.requests if u != page_url and not u.startswith(LOCAL_SCHEMES)]


CONTENT = "#app > div > div.grow"  # Snakemake's content pane, beside the navigation bar

_SHOW_RESULTS_JS = """
(() => {
  const category = %s, cats = Object.keys(categories);
  app.setView({navbarMode: "menu"});
  return new Promise(resolve => setTimeout(() => {
    const label = cats.length == 1 ? "Results" : category;
    const item = [...document.querySelectorAll("nav li a")].find(a => a.textContent.trim() === label);
    if (!item) { resolve(false); return; }
    item.click();
    resolve(true);
  }, 50));
})()
"""

_ROW_JS = """
(() => {
  const path = %s, entry = results[path];
  const wanted = entry.labels ? Object.values(entry.labels).map(String) : [path];
  for (const row of document.querySelectorAll("nav table tbody tr")) {
    const cells = [...row.querySelectorAll("td")];
    if (JSON.stringify(cells.slice(0, -1).map(c => c.textContent.trim())) === JSON.stringify(wanted))
      return cells[cells.length - 1].querySelector("a");
  }
  return null;
})()
"""


class Report:
    """Snakemake's HTML report open in a Browser, driven through its own navigation."""

    def __init__(self, browser: Browser, path: Path):
        self.browser, self.path = browser, Path(path).resolve()
        self.url = self.path.as_uri()

    def open(self) -> None:
        self.browser.navigate(self.url)
        self.browser.wait_for("typeof app !== 'undefined' && document.querySelectorAll('nav li a').length > 0")
        self.browser.pump(0.5)  # let the opening view (workflow graph or metadata) draw

    def results(self) -> dict[str, dict]:
        """Every result in the report: path -> name, mime type, category, subcategory, labels, data URI."""
        return self.browser.evaluate("""(() => {
          const out = {};
          for (const [cat, subs] of Object.entries(categories))
            for (const [sub, paths] of Object.entries(subs))
              for (const p of paths)
                out[p] = {name: results[p].name, mime: results[p].mime_type, category: cat, subcategory: sub,
                          labels: results[p].labels, data_uri: results[p].data_uri};
          return out;
        })()""")

    def show_list(self, category: str, subcategory: str) -> None:
        b = self.browser
        if not b.evaluate(_SHOW_RESULTS_JS % json.dumps(category)):
            raise CDPError(f"no menu entry for category {category!r}")
        b.wait_for("document.querySelector('nav li a, nav table') !== null")
        if b.evaluate("app.state.navbarMode") == "category":
            b.evaluate(f"""[...document.querySelectorAll("nav li a")]
                .find(a => a.textContent.trim() === {json.dumps(subcategory)}).click()""")
        b.wait_for("document.querySelector('nav table tbody tr') !== null")

    def view_button(self, path: str) -> dict | None:
        """The eye button of a result in the results list: its href and whether it downloads."""
        return self.browser.evaluate(f"""(() => {{ const a = {_ROW_JS % json.dumps(path)};
            return a && {{href: a.getAttribute('href'), download: a.getAttribute('download')}}; }})()""")

    def show(self, path: str) -> None:
        """Click the result's eye button, as a reader would."""
        clicked = self.browser.evaluate(f"""(() => {{ const a = {_ROW_JS % json.dumps(path)};
            if (!a) return false; a.click(); return true; }})()""")
        if not clicked:
            raise CDPError(f"no row for {path} in the results list")

    def image(self, data_uri: str) -> dict:
        """State of the figure shown in the content pane, once it has loaded."""
        return self.browser.wait_for(f"""(() => {{
            const img = document.querySelector({json.dumps(CONTENT + " img")});
            if (!img || img.getAttribute('src') !== {json.dumps(data_uri)} || !img.complete) return null;
            const box = img.getBoundingClientRect();
            return {{naturalWidth: img.naturalWidth, naturalHeight: img.naturalHeight,
                     width: box.width, height: box.height}};
        }})()""")

    def table(self, data_uri: str) -> dict:
        """The table of the HTML view shown in the content pane: header, cells (text and title), size."""
        b = self.browser
        b.wait_for(f"""(() => {{ const f = document.querySelector({json.dumps(CONTENT + " iframe")});
            return f && f.getAttribute('src') === {json.dumps(data_uri)}; }})()""")
        box = b.evaluate(f"""(() => {{ const r = document.querySelector({json.dumps(CONTENT + " iframe")})
            .getBoundingClientRect(); return {{left: r.left, width: r.width, height: r.height}}; }})()""")
        deadline = time.monotonic() + b.timeout
        while True:
            try:
                context = b.frame_context(data_uri[:200])
                found = b.evaluate("""(() => {
                  const t = document.querySelector('table');
                  if (document.readyState !== 'complete' || !t) return null;
                  const cells = r => [...r.children].map(c => ({text: c.textContent, title: c.getAttribute('title')}));
                  const box = t.getBoundingClientRect();
                  return {header: [...t.querySelectorAll('thead th')].map(th => th.textContent),
                          rows: [...t.querySelectorAll('tbody tr')].map(cells),
                          width: box.width, height: box.height,
                          page_width: document.documentElement.scrollWidth,
                          page_height: document.documentElement.scrollHeight};
                })()""", context)
            except CDPError:
                found = None
            if found:
                found["frame"] = box
                return found
            if time.monotonic() > deadline:
                raise TimeoutError("the table view never loaded its table")
            b.pump(0.1)


def _file_name(index: int, name: str) -> str:
    return f"{index:02d}_" + "".join(c if c.isalnum() or c in "._-" else "_" for c in name) + ".png"


def screenshot_report(report_path: Path, out_dir: Path, executable: str = CHROMIUM) -> list[Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with Browser(executable) as browser:
        report = Report(browser, report_path)
        report.open()
        browser.screenshot(out_dir / "00_main.png")
        written.append(out_dir / "00_main.png")
        index = 1
        results = report.results()
        for (category, subcategory) in sorted({(r["category"], r["subcategory"]) for r in results.values()}):
            report.show_list(category, subcategory)
            browser.pump(0.2)
            name = "01_results.png" if index == 1 else _file_name(index, f"results_{category}_{subcategory}")
            browser.screenshot(out_dir / name)
            written.append(out_dir / name)
            index += 1
            for path, result in sorted(results.items()):
                if (result["category"], result["subcategory"]) != (category, subcategory):
                    continue
                if result["mime"].startswith("image/"):
                    report.show(path)
                    report.image(result["data_uri"])
                elif result["mime"] == "text/html":
                    report.show(path)
                    # Large enough to show the whole table: the view fills the window beside the navigation
                    # bar (whose width follows the window's) and scrolls what does not fit.
                    height, width = browser.height, browser.width
                    for _ in range(4):
                        table = report.table(result["data_uri"])
                        frame = table["frame"]
                        more_h = table["page_height"] - frame["height"]
                        more_w = table["page_width"] - frame["width"]
                        if (more_h < 2 and more_w < 2) or height >= 8000 or width >= 4000:
                            break
                        height = min(height + max(0, math.ceil(more_h)), 8000)
                        width = min(width + max(0, math.ceil(more_w) + 10), 4000)
                        browser.set_viewport(height, width)
                        browser.pump(0.2)
                    browser.pump(0.3)
                else:
                    continue  # CSV, JSON...: Snakemake offers these as downloads, nothing to look at
                browser.pump(0.2)
                target = out_dir / _file_name(index, result["name"])
                browser.screenshot(target)
                browser.set_viewport()
                written.append(target)
                index += 1
        off_page = browser.off_page_requests(report.url)
        if off_page or browser.proxy.connections:
            print(f"warning: the report tried to reach the network: {off_page + browser.proxy.connections}",
                  file=sys.stderr)
    return written


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[0] + "\n\nusage: python scripts/screenshot_report.py REPORT.html OUT_DIR",
              file=sys.stderr)
        return 2
    for path in screenshot_report(Path(argv[0]), Path(argv[1])):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
