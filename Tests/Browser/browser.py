"""Headless Chromium for the repository's browser tests, driven by selenium through Debian's
chromium and chromium-driver (no driver download): a window of a given size, the console and
the network as Chrome logged them, and screenshots. Shared by every browser test here."""
import json
import os
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = os.environ.get("PUSHSPOOL_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("PUSHSPOOL_CHROMEDRIVER", "/usr/bin/chromedriver")


def open_chromium(width=1440, height=1000):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={width},{height}", "--force-device-scale-factor=1", "--lang=en-US"]:
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    return driver


def console_errors(driver):
    """SEVERE console entries since the last call (the log is drained by reading it)."""
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def failed_requests(driver, origin):
    """Responses from `origin` with a status of 400 or more, and requests to it that failed
    outright, since the last call (the performance log is drained by reading it)."""
    failed = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message.get("method") == "Network.responseReceived":
            response = params.get("response", {})
            if response.get("url", "").startswith(origin) and response.get("status", 0) >= 400:
                failed.append(f"{response.get('status')} {response.get('url')}")
        elif message.get("method") == "Network.loadingFailed" and not params.get("canceled"):
            failed.append(f"failed: {params.get('errorText')} (request {params.get('requestId')})")
    return failed


def resize(driver, width, height):
    driver.set_window_size(width, height)


def screenshot(driver, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    driver.save_screenshot(path)
