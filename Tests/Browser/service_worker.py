#!/usr/bin/env python3
"""Runs examples/clients/web in headless Chromium against a running `pushspool serve`.

The site (index.html, service-worker.js) is served from a local origin that also forwards /api/
and /v1/ to serve, as nginx does in production, so the worker calls serve on its own origin.
Steps: sign in (credentials kept, worker active), allow notifications (Browser.grantPermissions),
deliver {"secureId": ID} to the worker (ServiceWorker.deliverPushMessage: no push service needed),
then wait for the worker's fetch of the content, the notification it shows, and its `received`
report. Prints one JSON object: each step with ok and detail, the requests forwarded to serve
(method, path, status: never a header or a body), the notifications shown, the console's errors.
Exit status 0 when every step that a headless browser can do succeeded, 1 otherwise, 2 when
the browser could not be started.
"""
import argparse, http.server, json, os, threading, time, urllib.error, urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
import websocket  # websocket-client, installed with selenium

parser = argparse.ArgumentParser()
parser.add_argument("--serve", required=True, help="serve's base URL, e.g. http://127.0.0.1:8080")
parser.add_argument("--site", required=True, help="the folder of index.html and service-worker.js")
parser.add_argument("--user", required=True)
parser.add_argument("--password", required=True)
parser.add_argument("--id", required=True, help="the notification id the push carries")
parser.add_argument("--chromium", default="/usr/bin/chromium")
parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
parser.add_argument("--headless", action="store_true",
                    help="no display needed, but Chromium then keeps no list of shown notifications (run under xvfb-run instead)")
args = parser.parse_args()

forwarded = []  # (method, path, status)


class Site(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")}
        request = urllib.request.Request(args.serve + self.path, data=body, headers=headers, method=self.command)
        try:
            with urllib.request.urlopen(request, timeout=10) as r:
                status, data, kind = r.status, r.read(), r.headers.get("Content-Type", "")
        except urllib.error.HTTPError as e:
            status, data, kind = e.code, e.read(), e.headers.get("Content-Type", "")
        forwarded.append({"method": self.command, "path": self.path.split("?")[0], "status": status})
        self.answer(status, data, kind)

    def answer(self, status, data, kind):
        self.send_response(status)
        self.send_header("Content-Type", kind or "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.startswith(("/api/", "/v1/")):
            return self.forward()
        name = {"/": "index.html", "/index.html": "index.html", "/service-worker.js": "service-worker.js"}.get(self.path)
        if name is None:
            return self.answer(404, b"not here", "text/plain")
        with open(os.path.join(args.site, name), "rb") as f:
            # A worker script must come as JavaScript, or the browser refuses to register it.
            self.answer(200, f.read(), "text/javascript" if name.endswith(".js") else "text/html; charset=utf-8")

    do_POST = do_PUT = do_DELETE = forward


site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
threading.Thread(target=site.serve_forever, daemon=True).start()
origin = f"http://127.0.0.1:{site.server_address[1]}"

steps = []


def step(name, ok, detail=""):
    steps.append({"step": name, "ok": bool(ok), "detail": detail})
    return ok


def wait(predicate, seconds=15):
    end = time.time() + seconds
    while time.time() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    return predicate()


options = webdriver.ChromeOptions()
options.binary_location = args.chromium
# A real window (under Xvfb in tests): headless Chromium accepts showNotification but keeps
# nothing that getNotifications() could list, so the step "shows the notification" cannot be seen.
for a in (("--headless=new",) if args.headless else ()) + ("--no-sandbox", "--disable-dev-shm-usage", "--window-size=1440,1000"):
    options.add_argument(a)
options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
try:
    driver = webdriver.Chrome(service=Service(args.chromedriver), options=options)
except Exception as e:  # noqa: BLE001 - any failure to start is reported as such
    print(json.dumps({"steps": [{"step": "start the browser", "ok": False, "detail": str(e).splitlines()[0]}]}))
    raise SystemExit(2)

notifications = []
try:
    driver.set_script_timeout(20)
    driver.get(origin + "/index.html")
    try:
        # The example page's own signIn: resolves once the worker is active.
        signed = driver.execute_async_script(
            "signIn(arguments[0], arguments[1]).then(() => arguments[2](true), (e) => arguments[2](String(e)))", args.user, args.password)
        step("sign in: credentials kept, service worker active", signed is True, "" if signed is True else str(signed))
    except Exception as e:  # noqa: BLE001
        step("sign in: credentials kept, service worker active", False, str(e).splitlines()[0])

    # The DevTools protocol on the browser's own endpoint: permissions, then the page's session.
    address = driver.capabilities["goog:chromeOptions"]["debuggerAddress"]
    with urllib.request.urlopen(f"http://{address}/json/version") as r:
        cdp = websocket.create_connection(json.load(r)["webSocketDebuggerUrl"], timeout=15, suppress_origin=True)
    counter = [0]
    events = []

    def command(method, params=None, session=None):
        counter[0] += 1
        message = {"id": counter[0], "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        cdp.send(json.dumps(message))
        while True:
            reply = json.loads(cdp.recv())
            if reply.get("id") == counter[0]:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            events.append(reply)

    command("Browser.grantPermissions", {"origin": origin, "permissions": ["notifications"]})
    permission = driver.execute_script("return Notification.permission")
    step("allow notifications (Browser.grantPermissions)", permission == "granted", permission)

    page = next(t for t in command("Target.getTargets")["targetInfos"] if t["type"] == "page" and t["url"].startswith(origin))
    session = command("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
    command("ServiceWorker.enable", session=session)

    def registration():
        for e in events:
            if e.get("method") == "ServiceWorker.workerRegistrationUpdated":
                for r in e["params"]["registrations"]:
                    if r["scopeURL"].startswith(origin) and not r["isDeleted"]:
                        return r["registrationId"]
        try:
            events.append(json.loads(cdp.recv()))
        except websocket.WebSocketTimeoutException:
            pass
        return None

    registration_id = wait(registration)
    if step("find the worker's registration (ServiceWorker.workerRegistrationUpdated)", registration_id, str(registration_id)):
        command("ServiceWorker.deliverPushMessage",
                {"origin": origin, "registrationId": registration_id, "data": json.dumps({"secureId": args.id})}, session=session)
        step("deliver the push (ServiceWorker.deliverPushMessage)", True)

        fetched = wait(lambda: [f for f in forwarded if f["method"] == "GET" and f["path"].endswith(args.id)])
        step("the worker fetches the content", fetched and fetched[0]["status"] == 200, json.dumps(fetched))

        def shown():
            found = driver.execute_async_script(
                "navigator.serviceWorker.ready.then((r) => r.getNotifications())"
                ".then((ns) => arguments[0](ns.map((n) => ({title: n.title, body: n.body, tag: n.tag}))), (e) => arguments[0]([]))")
            return found or None

        notifications = wait(shown) or []
        step("the worker shows the notification", len(notifications) == 1, json.dumps(notifications) if notifications or not args.headless else
             "headless Chromium lists no shown notification (getNotifications() is empty there): run this under a display, e.g. xvfb-run")

        received = wait(lambda: [f for f in forwarded if f["method"] == "POST" and f["path"].endswith(f"{args.id}/events")])
        step("the worker reports received", received and received[0]["status"] == 200, json.dumps(received))
    # The notification is drawn by the browser outside any page, and DevTools has no command that
    # clicks one: `notificationclick` (and so the `opened` report) cannot be caused from here.
    steps.append({"step": "the user opens the notification (notificationclick → opened)", "ok": None,
                  "detail": "not possible from a test: DevTools has no command to click a notification, and no page can reach it"})
    cdp.close()
except Exception as e:  # noqa: BLE001
    step("drive the browser", False, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
finally:
    console = [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    driver.quit()
    site.shutdown()

print(json.dumps({"steps": steps, "forwarded": forwarded, "notifications": notifications, "console_errors": console}))
raise SystemExit(0 if all(s["ok"] is not False for s in steps) else 1)
