"""The operators' dashboard in a real browser (headless Chromium), against `pushspool serve` and
`pushspool run` sending to the fake APNs and FCM servers. Run by DashboardBrowserTests, which
starts them and passes what this needs in a JSON file (argv[1]). Prints one line per check and
exits 1 at the first that fails.

What it shows: an operator logs in; a 20,000-device campaign's progress bar moves, it is paused,
seen paused, resumed, and ends with the counts of its result log's summary; another is
cancelled; a composed job shows its audience and APNs and FCM payloads (and HMS and ADM bodies
when those boxes are ticked), is sent and arrives at
the fakes; a tracked job's funnel moves when events are posted; the System page shows the FCM
provider's connection and the campaign's failed answers with their meaning, as `status --json`
does. And that strings from jobs are
text (no dialog, no element made from them), another site cannot pause a job or frame the page,
app users' Basic and bearer tokens are refused, the cookie is HttpOnly and SameSite=Strict; no
page logs a console error or a failed request; every page is photographed at 1440 and 390 px."""
import base64
import http.server
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request

from selenium.common.exceptions import NoAlertPresentException, NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402

cfg = json.load(open(sys.argv[1]))
STARTED = time.time()
BASE = cfg["base"]
XSS = ["<img src=x onerror=alert(1)>", "</script><script>alert(2)</script>"]


def check(ok, what):
    what = f"[{time.time() - STARTED:5.1f} s] {what}"
    if not ok:
        print(f"FAILED: {what}", flush=True)
        sys.exit(1)
    print(f"ok: {what}", flush=True)


def wait_for(fn, what, timeout=30, poll=0.2):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = fn()
            if last:
                return last
        except (StaleElementReferenceException, NoSuchElementException, LookupError, ValueError):
            pass
        time.sleep(poll)
    check(False, f"{what} (within {timeout} s; last saw {last!r})")


def call(method, path, headers=None, body=None):
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(BASE + path, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


BEARER = {"Authorization": "Bearer " + cfg["bearer"], "Content-Type": "application/json"}
BASIC = {"Authorization": "Basic " + base64.b64encode(f"{cfg['app_user'][0]}:{cfg['app_user'][1]}".encode()).decode()}


def submit(job):
    status, _, body = call("POST", "/v1/jobs", BEARER, job)
    check(status == 202, f"job {job['id']} queued through POST /v1/jobs ({status} {body[:200]!r})")


def job_status(job_id):
    status, _, body = call("GET", f"/v1/jobs/{job_id}", BEARER)
    return json.loads(body) if status == 200 else {}


def summary(job_id):
    with open(os.path.join(cfg["results_dir"], f"{job_id}.jsonl")) as f:
        return json.loads(f.read().strip().split("\n")[-1])


def fake_state(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def clean(driver, what):
    """No console error and no failed request since the last check."""
    errors = browser.console_errors(driver)
    check(not errors, f"{what}: no console error {errors}")
    failed = browser.failed_requests(driver, BASE)
    check(not failed, f"{what}: no failed request {failed}")


def shots(driver, name, width):
    browser.screenshot(driver, os.path.join(cfg["shots_dir"], f"{name}-{width}.png"))


def state_of(driver):
    return driver.find_element(By.CSS_SELECTOR, "h1 .state").get_attribute("data-state")


def confirm(driver, button_id):
    driver.find_element(By.ID, button_id).click()
    wait_for(lambda: driver.find_element(By.ID, "confirm-yes").is_displayed(), f"a confirmation for {button_id}", 5)
    driver.find_element(By.ID, "confirm-yes").click()


def no_dialog(driver):
    try:
        driver.switch_to.alert
        return False
    except NoAlertPresentException:
        return True


# ---- Before the browser: jobs that must have run, and the door's refusals ----
submit({"id": "tracked", "to_tag": "tracked", "pns": ["apns"], "message": "tracked hello", "track": True})
submit({"id": "xss", "to_tag": "xss", "pns": ["fcm"], "message": XSS[0] + " " + XSS[1], "title": XSS[1],
        "data": {"html": XSS[0], "script": XSS[1]}})
wait_for(lambda: job_status("tracked").get("state") == "done" and job_status("xss").get("state") == "done", "the tracked and xss jobs to end", 60)

for path in ["/ui/", "/ui/api/jobs", "/ui/api/system"]:
    for name, headers in [("an app user's Basic", BASIC), ("a bearer token", BEARER)]:
        status, _, _ = call("GET", path, headers)
        check(status in (401, 403), f"{path} refuses {name} ({status})")
status, headers, _ = call("GET", "/ui/login")
check(headers.get("Content-Security-Policy") == "default-src 'self'; frame-ancestors 'none'", "the policy is on the page")

driver = browser.open_chromium(1440, 1000)
try:
    # ---- Log in ----
    driver.get(BASE + "/ui/")
    wait_for(lambda: "/ui/login" in driver.current_url, "no session: the login form")
    driver.find_element(By.ID, "user").send_keys(cfg["operator"][0])
    driver.find_element(By.ID, "password").send_keys(cfg["operator"][1])
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait_for(lambda: driver.find_element(By.ID, "who").text == cfg["operator"][0], "logged in as the operator")
    cookie = driver.get_cookie("pushspool_session")
    check(cookie is not None and cookie.get("httpOnly") is True and cookie.get("sameSite") == "Strict",
          f"the session cookie is HttpOnly and SameSite=Strict ({ {k: cookie.get(k) for k in ['httpOnly', 'sameSite', 'path']} if cookie else None})")
    check(driver.execute_script("return document.cookie").find("pushspool_session") < 0, "scripts cannot read the session cookie")
    clean(driver, "login")

    # ---- A 20,000-device campaign, live ----
    submit({"id": "black-friday", "to_tag": "bf", "pns": ["apns", "fcm"], "message": "Black Friday: 40% off", "spread_over_seconds": 20})
    submit({"id": "cancel-me", "to_tag": "later", "pns": ["fcm"], "message": "later", "spread_over_seconds": 600})
    submit({"id": "csrf-target", "to_tag": "later", "pns": ["fcm"], "message": "target", "spread_over_seconds": 600})
    driver.get(BASE + "/ui/#/campaigns")
    wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, 'tr[data-id="black-friday"]'), "the campaign in the list")
    wait_for(lambda: driver.find_element(By.CSS_SELECTOR, 'tr[data-id="black-friday"]').get_attribute("data-state") == "running",
             "the campaign listed as running", 20)
    shots(driver, "campaigns", 1440)
    driver.get(BASE + "/ui/#/campaign/black-friday")

    def progress():
        return float(driver.find_element(By.CSS_SELECTOR, "#job-progress progress").get_attribute("value") or 0)
    first = wait_for(lambda: progress() > 0 and progress(), "the progress bar to start", 30)
    second = wait_for(lambda: progress() > first and progress(), "the progress bar to move without a reload", 10)
    check(second > first, f"the progress bar moved: {first:.0f} → {second:.0f}")
    confirm(driver, "pause")
    wait_for(lambda: state_of(driver) == "paused", "the campaign shown paused", 20)
    check(job_status("black-friday").get("state") == "paused", "GET /v1/jobs says paused too")
    held = progress()
    time.sleep(2)
    check(progress() == held, "a paused campaign's progress stands still")
    confirm(driver, "resume")
    wait_for(lambda: driver.find_element(By.ID, "action-message").text.startswith("resume requested"), "the resume acknowledged", 20)
    check(True, f"{driver.find_element(By.ID, 'action-message').text}; GET /v1/jobs: {job_status('black-friday').get('state')}")
    wait_for(lambda: state_of(driver) == "running", "the campaign running again", 30)
    wait_for(lambda: state_of(driver) == "done", "the campaign to end", 180, 0.5)
    shots(driver, "campaign", 1440)
    check(driver.find_element(By.ID, "action-message").text == "", "no resume notice left on the ended campaign")
    end = summary("black-friday")
    counts = {dt.text: dd.text for dt, dd in zip(driver.find_elements(By.CSS_SELECTOR, "#counts dt"), driver.find_elements(By.CSS_SELECTOR, "#counts dd"))}

    def shown(label):
        return int(counts[label].replace(",", ""))
    check(shown("Delivered") == end["delivered"] and shown("Failed") == end["failed"] and shown("Unregistered") == end["unregistered"],
          f"the page's counts are the result log's summary ({counts} vs {end})")
    check(end["delivered"] + end["failed"] + end["unregistered"] == 20000, f"20,000 outcomes ({end})")
    reasons = driver.find_element(By.ID, "failures").text
    check(end["failed"] == 10 and end["unregistered"] == 20 and "SENDER_ID_MISMATCH" in reasons and "another Firebase project" in reasons
          and "INVALID_ARGUMENT" in reasons and "malformed" in reasons and "UNREGISTERED" in reasons,
          f"what was not delivered, by reason, with what it means: {reasons[:300]!r}")
    clean(driver, "the campaign page")

    # ---- Cancel another ----
    driver.get(BASE + "/ui/#/campaign/cancel-me")
    wait_for(lambda: state_of(driver) in ("running", "waiting", "waiting to resume"), "cancel-me started", 30)
    confirm(driver, "cancel")
    wait_for(lambda: state_of(driver) == "cancelled", "cancel-me shown cancelled", 30)
    clean(driver, "cancelling")

    # ---- The funnel of a tracked job moves when events are posted ----
    driver.get(BASE + "/ui/#/campaign/tracked")
    wait_for(lambda: "received 0" in driver.find_element(By.ID, "funnel-numbers").text, "the tracked job's funnel before any event")
    apns = fake_state(cfg["apns_state"]).get("lastHeaders", {})
    ids = [apns[t]["payload"]["notification_id"] for t in cfg["tracked_tokens"] if t in apns]
    check(len(ids) == len(cfg["tracked_tokens"]), f"each tracked push carried its id ({len(ids)})")
    events = [{"id": i, "type": "received"} for i in ids] + [{"id": i, "type": "opened"} for i in ids[:2]]
    status, _, body = call("POST", "/v1/events", BEARER, events)
    check(status == 200, f"events posted ({status} {body[:200]!r})")
    text = wait_for(lambda: (lambda t: "received 5" in t and "opened 2" in t and t)(driver.find_element(By.ID, "funnel-numbers").text),
                    "the funnel to move without a reload", 10)
    check(True, f"funnel now: {text}")
    clean(driver, "the funnel")

    # ---- Strings from a job are text ----
    driver.get(BASE + "/ui/#/campaign/xss")
    wait_for(lambda: XSS[0] in driver.find_element(By.ID, "job-fields").text, "the xss job's message shown")
    fields = driver.find_element(By.ID, "job-fields").text
    check(all(s in fields for s in XSS), "both strings shown as text, as written")
    check(not driver.find_elements(By.CSS_SELECTOR, 'img[src="x"]') and len(driver.find_elements(By.TAG_NAME, "script")) == 2,
          "no element was made from them")
    driver.get(BASE + "/ui/#/campaigns?q=xss")
    wait_for(lambda: XSS[1] in driver.find_element(By.ID, "campaign-table").text, "the xss job listed with its title as text")
    check(not driver.find_elements(By.CSS_SELECTOR, 'img[src="x"]') and no_dialog(driver), "the list made nothing of them and showed no dialog")
    clean(driver, "hostile strings")

    # ---- Compose, preview, send ----
    driver.get(BASE + "/ui/#/compose")
    Select(driver.find_element(By.ID, "c-kind")).select_by_value("tags")
    driver.find_element(By.ID, "c-audience").send_keys("vip && (")
    driver.find_element(By.ID, "c-message").send_keys("Composed for VIPs")
    wait_for(lambda: driver.find_element(By.ID, "problem-audience").text.startswith("tags:"), "a bad expression's problem beside its field")
    check(not driver.find_element(By.ID, "send").is_enabled(), "nothing can be sent meanwhile")
    audience = driver.find_element(By.ID, "c-audience")
    audience.clear()
    audience.send_keys("vip")
    wait_for(lambda: driver.find_element(By.CSS_SELECTOR, "#audience-total strong").text == "50", "the audience count: 50 devices")
    check(driver.find_element(By.ID, "problem-audience").text == "", "the problem gone once fixed")
    payloads = {b.get_attribute("data-platform"): b.find_element(By.TAG_NAME, "pre").text
                for b in driver.find_elements(By.CSS_SELECTOR, ".payload-block")}
    check(json.loads(payloads["apns"]) == {"aps": {"alert": "Composed for VIPs"}}, f"the APNs payload as sent: {payloads.get('apns')}")
    check("Composed for VIPs" in payloads["fcm"] and json.loads(payloads["fcm"])["message"]["data"]["message"] == "Composed for VIPs",
          f"the FCM payload as sent: {payloads.get('fcm')}")
    # Huawei and Amazon are offered too: ticked, their bodies show beside the others'; unticked again.
    def blocks():
        return {b.get_attribute("data-platform"): b.find_element(By.TAG_NAME, "pre").text
                for b in driver.find_elements(By.CSS_SELECTOR, ".payload-block")}
    for p in ("hms", "adm"):
        driver.find_element(By.ID, "c-pns-" + p).click()
    wait_for(lambda: {"hms", "adm"} <= set(blocks()), "the HMS and ADM bodies in the preview")
    shown = blocks()
    check("Composed for VIPs" in json.loads(json.loads(shown["hms"])["message"]["data"])["message"],
          f"the HMS body as sent, its tokens left out: {shown.get('hms')}")
    check(json.loads(shown["adm"])["data"]["message"] == "Composed for VIPs", f"the ADM body as sent: {shown.get('adm')}")
    for p in ("hms", "adm"):
        driver.find_element(By.ID, "c-pns-" + p).click()
    wait_for(lambda: set(blocks()) == {"apns", "fcm"}, "back to APNs and FCM")
    shots(driver, "compose", 1440)
    # The fakes' counts just before sending: what arrives after is the composed job's.
    before = (fake_state(cfg["apns_state"]).get("tokensDelivered", 0), fake_state(cfg["fcm_state"]).get("delivered", 0))
    driver.find_element(By.ID, "send").click()
    check("50 devices" in wait_for(lambda: driver.find_element(By.ID, "confirm-text").text, "the confirmation"), "the confirmation names 50 devices")
    driver.find_element(By.ID, "confirm-send").click()
    composed = wait_for(lambda: driver.find_element(By.ID, "queued-link").text, "queued")
    wait_for(lambda: job_status(composed).get("state") == "done", "the composed job to end", 60)
    wait_for(lambda: fake_state(cfg["apns_state"]).get("tokensDelivered", 0) - before[0] == 25
             and fake_state(cfg["fcm_state"]).get("delivered", 0) - before[1] == 25, "25 at the fake APNs and 25 at the fake FCM", 20)
    clean(driver, "compose")

    # ---- Devices and system ----
    driver.get(BASE + "/ui/#/devices")
    import subprocess
    registered = int(subprocess.run(cfg["cli"] + ["devices", "--count", "--config", cfg["config"]], capture_output=True, text=True, check=True).stdout.strip())
    wait_for(lambda: driver.find_element(By.ID, "device-total").text.replace(",", "") == str(registered),
             f"every device counted, as `devices --count` says ({registered})")
    driver.find_element(By.ID, "d-tags").send_keys("vip")
    wait_for(lambda: driver.find_element(By.ID, "device-total").text == "50", "the expression box counts")
    shots(driver, "devices", 1440)
    driver.get(BASE + "/ui/#/system")
    wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#system .card"), "the system page")
    # The FCM provider's connection and the failed answers of the campaign (10 malformed tokens,
    # 10 gone, 10 of another project), each with its meaning, as `status --json` has them.
    meanings = {"INVALID_ARGUMENT": "malformed", "UNREGISTERED": "gone", "SENDER_ID_MISMATCH": "another Firebase project"}

    def fcm_card():
        card = driver.find_element(By.CSS_SELECTOR, '#system .provider[data-provider="fcm"]')
        rows = [{k: tr.find_element(By.CLASS_NAME, k).text for k in ["code", "reason", "meaning", "count"]}
                for tr in card.find_elements(By.CSS_SELECTOR, ".recent-errors tr.recent-error")]
        return {"connections": int(card.find_element(By.CLASS_NAME, "connections").text.replace(",", "")),
                "failed": int(card.find_element(By.CLASS_NAME, "failed").text.replace(",", "")), "rows": rows}

    def status_fcm():
        out = subprocess.run(cfg["cli"] + ["status", "--json", "--config", cfg["config"]], capture_output=True, text=True, check=True).stdout
        fcm = [p for p in json.loads(out)["providers"] if p["provider"] == "fcm"][0]
        return {"connections": fcm["connections"], "failed": sum(fcm["errors_total"].values()),
                "newest": [fcm["recent_errors"][0]["code"], fcm["recent_errors"][0]["reason"] or "—"] if fcm["recent_errors"] else None}

    def agree():
        page, cli = fcm_card(), status_fcm()
        newest = [page["rows"][0]["code"], page["rows"][0]["reason"]] if page["rows"] else None
        same = page["connections"] == cli["connections"] and page["failed"] == cli["failed"] and newest == cli["newest"]
        return same and (page, cli)
    page, cli = wait_for(agree, "the FCM provider's figures on the page equal `status --json`'s", 20, 0.5)
    check(page["connections"] >= 1 and page["failed"] >= 30,
          f"the FCM provider: {page['connections']} connection(s), {page['failed']} failed answers, as `status --json` says ({cli})")
    shown = [(r["reason"], r["meaning"]) for r in page["rows"] if r["reason"] in meanings]
    check(shown and all(meanings[reason] in meaning for reason, meaning in shown),
          f"its recent errors with what they mean: {shown[:3]}")
    page_text = driver.find_element(By.ID, "system").text
    check(not any(h in page_text for h in ["invalid-1", "gone-11", "mismatch-21", "fcm-tok-"]), "no handle on the system page")
    shots(driver, "system", 1440)
    clean(driver, "devices and system")

    # ---- 390 px ----
    browser.resize(driver, 390, 844)
    for name, hash_ in [("campaigns", "#/campaigns"), ("campaign", "#/campaign/black-friday"), ("compose", "#/compose"),
                        ("devices", "#/devices"), ("system", "#/system")]:
        driver.get(BASE + "/ui/" + hash_)
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "main section h1"), f"{name} at 390 px")
        time.sleep(1.6)
        width = driver.execute_script("return document.documentElement.scrollWidth")
        check(width <= 390, f"{name} fits 390 px ({width})")
        shots(driver, name, 390)
    clean(driver, "390 px")
    browser.resize(driver, 1440, 1000)

    if cfg.get("docs_dir"):
        import shutil
        shutil.copy(os.path.join(cfg["shots_dir"], "campaign-1440.png"), os.path.join(cfg["docs_dir"], "dashboard-campaign.png"))
        shutil.copy(os.path.join(cfg["shots_dir"], "campaigns-390.png"), os.path.join(cfg["docs_dir"], "dashboard-phone.png"))
        print("ok: the README's two screenshots written", flush=True)

    # ---- Another site: it can neither pause a job nor frame the page ----
    csrf_before = job_status("csrf-target").get("state")
    pages = {
        "/pause.html": f"""<!doctype html><form id=f method=post action="{BASE}/ui/api/jobs/csrf-target/pause"></form>
<script>fetch("{BASE}/ui/api/jobs/csrf-target/pause", {{method: "POST", credentials: "include", mode: "no-cors"}}).finally(() => document.getElementById("f").submit());</script>""",
        "/frame.html": f"""<!doctype html><iframe id=x src="{BASE}/ui/" width=600 height=400></iframe>""",
    }

    class Attacker(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            page = pages.get(self.path, "").encode()
            self.send_response(200 if page else 404)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass
    attacker = http.server.HTTPServer(("127.0.0.1", 0), Attacker)
    threading.Thread(target=attacker.serve_forever, daemon=True).start()
    other = f"http://localhost:{attacker.server_address[1]}"
    driver.get(other + "/pause.html")
    time.sleep(2)
    check(job_status("csrf-target").get("state") == csrf_before != "paused", f"another site's page could not pause a job ({job_status('csrf-target').get('state')})")
    browser.console_errors(driver)
    driver.get(other + "/frame.html")
    time.sleep(1.5)
    refused = [e["message"] for e in driver.get_log("browser") if "frame-ancestors" in e["message"] or "Refused to frame" in e["message"]]
    check(refused, f"the browser refused to frame /ui/ ({refused[:1]})")
    attacker.shutdown()
    browser.failed_requests(driver, BASE)
    call("POST", "/v1/jobs/csrf-target/cancel", BEARER)

    # ---- Logout ends the session on the server ----
    driver.get(BASE + "/ui/#/campaigns")
    wait_for(lambda: driver.find_element(By.ID, "who").text, "back on the dashboard")
    value = driver.get_cookie("pushspool_session")["value"]
    driver.find_element(By.ID, "logout").click()
    wait_for(lambda: "/ui/login" in driver.current_url, "the login form after logout")
    status, _, _ = call("GET", "/ui/api/session", {"Cookie": f"pushspool_session={value}"})
    check(status == 401, f"the old cookie is refused after logout ({status})")
    check(no_dialog(driver), "no dialog was ever opened")
finally:
    driver.quit()
print(f"PASSED in {time.time() - STARTED:.0f} s", flush=True)
