"""The OpenAPI document against itself and against a running `pushspool serve`. Run by
OpenAPIConformanceTests, which starts serve (SQLite registry, app users, a service token, the
dashboard's operators, `run` beside it sending to the fake providers) and passes what this needs
in a JSON file (argv[1]).

1. openapi-spec-validator: the document is valid OpenAPI 3.1, and serve answers it, byte for
   byte, at GET /v1/openapi.json.
2. schemathesis: every operation, from the document's examples, its coverage of each schema's
   edges, then fuzzing; bodies generated from the schemas. No 5xx, every answer's status,
   content type and body as documented. One pass per kind of credential (a credential of the
   wrong kind is a failed login, and failed logins throttle an address): each pass sends its own
   X-Forwarded-For (serve trusts 127.0.0.1 as a proxy here), so one pass's refusals never
   throttle another's. After each pass serve must still answer /healthz.

Prints one line per pass (operations tried, test cases, failures, seconds) and a total, then
PASSED or FAILED; exits 1 on any failure."""
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from openapi_spec_validator import validate
from openapi_spec_validator.readers import read_from_filename

cfg = json.load(open(sys.argv[1]))
BASE = cfg["base"]
STARTED = time.time()
failed = False


def say(line):
    print(f"[{time.time() - STARTED:6.1f} s] {line}", flush=True)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


OPENER = urllib.request.build_opener(NoRedirect)


def request(method, path, headers=None, body=None):
    req = urllib.request.Request(BASE + path, data=body, method=method, headers=headers or {})
    try:
        with OPENER.open(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


# 1. The document.
spec, _ = read_from_filename(cfg["document"])
validate(spec)
say(f"ok: openapi-spec-validator: {cfg['document']} is valid OpenAPI {spec['openapi']}")
status, _, served = request("GET", "/v1/openapi.json")
if status != 200 or served != open(cfg["document"], "rb").read():
    say(f"FAILED: GET /v1/openapi.json answered {status}, not the repository's document")
    sys.exit(1)
say("ok: GET /v1/openapi.json serves the repository's document byte for byte")

# Data the document's examples name, so that the examples reach answers with bodies
# (a job's status, a device), not only their 404s.
bearer = {"Authorization": "Bearer " + cfg["bearer"], "Content-Type": "application/json"}
seed = [
    ("PUT", "/v1/devices/example-device", {"platform": "fcm", "handle": "fcm-example-1", "tags": ["username:alice", "example"]}),
    ("PUT", "/v1/devices/example-device-2", {"platform": "apns", "handle": "a" * 64, "tags": ["example"], "lang": "fr"}),
    ("POST", "/v1/jobs", {"id": "example-job", "to_tag": "example", "pns": ["fcm", "apns"], "message": "hello", "track": True}),
]
# Two of alice's iPhones, and a secure and a tracked job that `run` sends them: the fake APNs
# server keeps each token's last payload, which holds the notification id apps fetch and report.
phones = {"secure": "a" * 64, "tracked": "b" * 64}
for kind, token in phones.items():
    seed.append(("PUT", f"/v1/devices/example-{kind}-phone", {"platform": "apns", "handle": token, "tags": ["username:alice", f"example-{kind}"]}))
seed.append(("POST", "/v1/jobs", {"id": "example-secure", "to_tag": "example-secure", "pns": "apns", "message": "your code is 1234", "secure": True}))
seed.append(("POST", "/v1/jobs", {"id": "example-tracked", "to_tag": "example-tracked", "pns": "apns", "message": "hello", "track": True}))
for method, path, body in seed:
    status, _, text = request(method, path, bearer, json.dumps(body).encode())
    if status not in (200, 202):
        say(f"FAILED: seeding {method} {path}: {status} {text[:200]!r}")
        sys.exit(1)
deadline = time.time() + 60
while time.time() < deadline:
    states = [json.loads(request("GET", f"/v1/jobs/example-{k}", bearer)[2]).get("state") for k in phones]
    if states == ["done", "done"]:
        break
    time.sleep(0.2)
sent = json.load(open(cfg["apns_state"])).get("lastHeaders", {})
notification_ids = [sent.get(phones["secure"], {}).get("payload", {}).get("secureId"),
                    sent.get(phones["tracked"], {}).get("payload", {}).get("notification_id")]
if None in notification_ids:
    say(f"FAILED: the secure and tracked pushes did not reach the fake APNs server (jobs: {states})")
    sys.exit(1)
# Half the requests to a route with an id or an app name one that exists (schemathesis' config,
# read from the working directory), so answers with bodies are checked too, not only the 404s.
known = {
    "notifications": (r"/notifications/\{id\}", "path.id", notification_ids),
    "jobs": (r"/jobs/\{id\}", "path.id", ["example-job", "example-secure", "example-tracked"]),
    "devices": (r"/(devices|register)/\{id\}", "path.id", ["example-device", "example-secure-phone", "example-tracked-phone"]),
    "apps": (r"^/apps/\{app\}/", "path.app", cfg["apps"]),
}
with open("schemathesis.toml", "w") as f:
    for name, (paths, parameter, values) in known.items():
        f.write(f"[dictionaries.{name}]\nvalues = {json.dumps(values)}\n\n")
    for name, (paths, parameter, values) in known.items():
        f.write(f"[[operations]]\ninclude-path-regex = {json.dumps(paths)}\n"
                f"parameters = {{ {json.dumps(parameter)} = {{ dictionary = {json.dumps(name)}, probability = 0.5 }} }}\n\n")
say(f"ok: seeded devices, jobs and {len(notification_ids)} notifications sent through run to the fake APNs server")
# The operator's session for the dashboard's pass.
status, headers, _ = request("POST", "/ui/login", {"Content-Type": "application/x-www-form-urlencoded"},
                             urllib.parse.urlencode({"user": cfg["operator"][0], "password": cfg["operator"][1]}).encode())
cookie = re.search(r"pushspool_session=([^;]+)", headers.get("Set-Cookie", ""))
if status != 303 or not cookie:
    say(f"FAILED: operator login answered {status}")
    sys.exit(1)
session = "pushspool_session=" + cookie.group(1)
status, _, body = request("GET", "/ui/api/session", {"Cookie": session})
csrf = json.loads(body)["csrf"]

passes = [
    # name, operations (path regex), credentials (schemathesis options)
    ("services (bearer)", r"^/(v1/|metrics$|healthz$)", ["-H", "Authorization: Bearer " + cfg["bearer"]]),
    ("app users (Basic)", r"^/(api|apps)/", ["-a", f"{cfg['app_user'][0]}:{cfg['app_user'][1]}"]),
    ("app users on /v1/notifications (Basic)", r"^/v1/notifications/", ["-a", f"{cfg['app_user'][0]}:{cfg['app_user'][1]}"]),
    ("operators (session, CSRF token)", r"^/ui(/(api|assets)/.*|/login)?$", ["-H", "Cookie: " + session, "-H", "X-CSRF-Token: " + csrf]),
    # Last: logging out ends the session the pass before used.
    ("logout", r"^/ui/logout$", ["-H", "Cookie: " + session, "-H", "X-CSRF-Token: " + csrf]),
]
# Every operation of the document is in some pass.
operations_in_document = {(m, p) for p, item in spec["paths"].items() for m in item if m in ("get", "put", "post", "delete")}
covered = {(m, p) for (m, p) in operations_in_document if any(re.search(rx, p) for _, rx, _ in passes)}
if covered != operations_in_document:
    say(f"FAILED: operations no pass tries: {sorted(operations_in_document - covered)}")
    sys.exit(1)
say(f"ok: the passes cover all {len(operations_in_document)} operations of the document")
# Beyond the answers' own conformance: a method the path does not take is 405 (never 5xx or
# 501), a request without its credentials is 401, and documented headers are as documented.
CHECKS = ",".join(["not_a_server_error", "status_code_conformance", "content_type_conformance", "response_schema_conformance",
                   "response_headers_conformance", "unsupported_method", "missing_required_header"])
totals = {"operations": 0, "cases": 0, "failures": 0}
for i, (name, paths, credentials) in enumerate(passes):
    started = time.time()
    report = os.path.join(cfg["report_dir"], f"pass-{i}.json")
    argv = ["schemathesis", "run", cfg["document"], "--url", BASE,
            "--include-path-regex", paths,
            "--checks", CHECKS,
            "--phases", "examples,coverage,fuzzing" + (",stateful" if cfg.get("stateful") else ""), "-n", str(cfg["max_examples"]), "--seed", str(cfg["seed"]),
            "--workers", str(cfg["workers"]), "--request-timeout", "15", "--no-color",
            "--generation-database", "none", "--suppress-health-check", "all",
            "-H", f"X-Forwarded-For: 198.51.100.{10 + i}",
            "--report", "json", "--report-json-path", report] + credentials
    r = subprocess.run(argv, capture_output=True, text=True, timeout=cfg["pass_timeout"])
    out = r.stdout + r.stderr
    # What the pass did, from schemathesis' own report (its summary on stdout is for people).
    try:
        summary = json.load(open(report))
        operations, generated = summary["operations"]["tested"], summary["test_cases"]["generated"]
    except (OSError, ValueError, KeyError):
        operations, generated = 0, 0
    totals["operations"] += operations
    totals["cases"] += generated
    alive, _, _ = request("GET", "/healthz")
    ok = r.returncode == 0 and alive == 200 and operations > 0
    if not ok:
        failed = True
        totals["failures"] += 1
        print(out[-12000:], flush=True)
    say(f"{'ok' if ok else 'FAILED'}: pass {name}: {operations} operations, {generated} test cases, "
        f"exit {r.returncode}, /healthz {alive}, {time.time() - started:.1f} s")

say(f"total: {len(operations_in_document)} operations tried ({totals['operations']} over the passes), {totals['cases']} test cases generated, "
    f"{totals['failures']} passes failed")
print(f"{'FAILED' if failed else 'PASSED'} in {time.time() - STARTED:.1f} s", flush=True)
sys.exit(1 if failed else 0)
