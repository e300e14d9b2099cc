"""The operator's page and its API (docs/operator-page.md): GET /api/v1/status as scripts
use it, and the page at / as a person sees it, in headless Chromium (Debian's `chromium`,
installed by scripts/install-deps.sh). The browser test saves a screenshot next to the build
(operator-page.png), which docs/operator-page.png is a copy of."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from tests.integration.base import ShopTestCase
from tests.integration.harness import emulator_only, stop_within, wait_until

SOURCE_DIR = os.environ.get("DENORMD_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.environ.get("DENORMD_BUILD_DIR", "build")


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def page_dom(test, d, browser, screenshot=None, budget_ms=4000):
    """The page of denormd `d` as Chromium renders it once its first refresh has run."""
    url = "http://127.0.0.1:%d/" % d.port
    profile = tempfile.mkdtemp(prefix="denormd-chromium-")
    test.addCleanup(shutil.rmtree, profile, True)
    base = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--user-data-dir=" + profile, "--virtual-time-budget=%d" % budget_ms,
            "--window-size=1400,900"]
    if screenshot:
        subprocess.run(base + ["--screenshot=" + screenshot, url], capture_output=True, timeout=90, check=True)
    p = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=90)
    test.assertEqual(p.returncode, 0, p.stderr[-2000:])
    return p.stdout


def with_failing_code(db):
    """orders-customer with a computed field that fails on a customer whose code is not a number
    (one such update is one dead letter), and a `bio` a server refuses to copy into an order it
    would make larger than 16 MB."""
    with open(os.path.join(SOURCE_DIR, "mappings", "orders-customer.json")) as f:
        m = json.load(f)
    m["source"]["db"] = db
    m["target"]["db"] = db
    m["fields"]["code"] = {"$toInt": "$code"}
    m["fields"]["bio"] = "bio"
    return m


class OperatorPageTest(ShopTestCase):
    DB_PREFIX = "page_"

    def setUp(self):
        super().setUp()
        self.mappings = tempfile.mkdtemp(prefix="denormd-page-")
        self.addCleanup(shutil.rmtree, self.mappings, True)
        for name in sorted(os.listdir(os.path.join(SOURCE_DIR, "mappings"))):
            with open(os.path.join(SOURCE_DIR, "mappings", name)) as f:
                m = json.load(f)
            m["source"]["db"] = self.dbname
            m["target"]["db"] = self.dbname
            if name == "orders-customer.json":
                m = with_failing_code(self.dbname)
            with open(os.path.join(self.mappings, name), "w") as f:
                json.dump(m, f)

    def status(self, d):
        code, body = d.get("/api/v1/status")
        self.assertEqual(code, 200, body)
        return json.loads(body)

    def refuse_one(self):
        """A customer whose code is not a number: the next change of it is a dead letter."""
        c = self.db.customers.find_one()
        self.db.customers.update_one({"_id": c["_id"]}, {"$set": {"code": "not a number"}})
        return c["_id"]

    def test_the_api_lists_every_namespace_mapping_backfill_and_dead_letter(self):
        self.shop.seed()
        d = self.start(auto_backfill=True)
        names = sorted(f[:-5] for f in os.listdir(self.mappings))
        wait_until(lambda: all(m.get("backfill", {}).get("state") == "done" for m in self.status(d)["mappings"]),
                   timeout=60, message="every backfill done")
        st = self.status(d)
        self.assertEqual(sorted(m["name"] for m in st["mappings"]), names)
        watched = {n["namespace"] for n in st["namespaces"]}
        self.assertTrue({"%s.customers" % self.dbname, "%s.orders" % self.dbname} <= watched, watched)
        for n in st["namespaces"]:
            self.assertTrue(n["streaming"], n)
            self.assertEqual(n["history"], "reachable", n)
            self.assertGreaterEqual(n["lagSeconds"], 0)
        for m in st["mappings"]:
            self.assertRegex(m["fingerprint"], r"^[0-9a-f]{16}$")
            self.assertIn(m["kind"], ("copy", "recent", "aggregate"))
            self.assertEqual(m["deadLetters"], 0)
            self.assertEqual(m["writeAmplification"]["events"], 0, m)  # a backfill is no event
        self.assertTrue(st["lifecycle"])
        self.assertEqual(st["mappingsFolder"], self.mappings)
        self.assertNotIn(self.uri.split("//")[1].split("/")[0], json.dumps(st))  # no connection string

        customer = self.refuse_one()
        self.applied(d)
        st = self.status(d)
        by_name = {m["name"]: m for m in st["mappings"]}
        self.assertEqual(by_name["orders-customer"]["deadLetters"], 1)
        self.assertEqual(len(st["deadLetters"]), 1)
        letter = st["deadLetters"][0]
        self.assertEqual(letter["mapping"], "orders-customer")
        self.assertIn('computed field "code"', letter["reason"])
        self.assertIn("document %s" % customer, letter["reason"])
        # Which document and field, not the write's filter.
        self.assertEqual(letter["document"], "%s.customers _id %s" % (self.dbname, customer))
        self.assertEqual(letter["field"], "code")
        self.assertGreater(letter["atMs"], 0)
        # The lag is sampled every 5 s and kept for the sparkline.
        wait_until(lambda: len(self.status(d)["namespaces"][0]["lag"]) >= 2, timeout=15, message="two lag samples")
        self.assertEqual(d.stop(), 0)

    def test_a_backfill_shows_its_progress_moving(self):
        self.shop.seed(customers=3500, orders=200)
        # The backfill's writes held 50 ms each until the page is seen: its progress (stored per
        # batch) can be seen moving, in the API and on the page.
        self.fail_point(failCommands=["update"], blockConnection=True, blockTimeMS=50, mode="alwaysOn")
        d = self.start(auto_backfill=True)
        seen = {}  # mapping -> the document counts seen while its backfill ran

        def moved():
            for m in self.status(d)["mappings"]:
                b = m.get("backfill", {})
                if b.get("state") == "running":
                    seen.setdefault(m["name"], set()).add(b.get("documents", 0))
                    self.assertEqual(b.get("total"), 3500, m)
            return any(len(v) >= 2 for v in seen.values())
        wait_until(moved, timeout=60, interval=0.05, message="a backfill's progress moves")
        # The page shows a running backfill's bar part-way, and full once it is done.
        browser = chromium()
        running = None
        if browser is not None:
            html = self.dom(d, browser, budget_ms=500)
            running = re.search(r'data-backfill="running" data-progress="(\d+)"', html)
        self.client.admin.command({"configureFailPoint": "failCommand", "mode": "off"})
        wait_until(lambda: all(m.get("backfill", {}).get("state") == "done" for m in self.status(d)["mappings"]),
                   timeout=60, message="every backfill done")
        if browser is not None:
            self.assertIsNotNone(running, "the page showed no running backfill")
            self.assertLess(int(running.group(1)), 100)
            html = self.dom(d, browser, budget_ms=500)
            self.assertNotIn('data-backfill="running"', html)
            self.assertEqual(len(re.findall(r'data-backfill="done" data-progress="100"', html)),
                             len(os.listdir(self.mappings)))
        self.assertEqual(d.stop(), 0)

    def applied(self, d):
        t = self.client.admin.command("ping")["operationTime"]
        # Waits of 4 s each: the harness's HTTP client gives up after 5.
        wait_until(lambda: d.get("/applied?after=%d:%d&timeout=4" % (t.time, t.inc))[0] == 200,
                   timeout=60, interval=0, message="applied")

    def dom(self, d, browser, screenshot=None, budget_ms=4000):
        return page_dom(self, d, browser, screenshot, budget_ms)

    def test_the_page_in_a_browser(self):
        browser = chromium()
        if browser is None:
            self.fail("no chromium: scripts/install-deps.sh installs Debian's chromium package")
        self.shop.seed()
        d = self.start(auto_backfill=True)
        wait_until(lambda: all(m.get("backfill", {}).get("state") == "done" for m in self.status(d)["mappings"]),
                   timeout=60, message="every backfill done")
        self.refuse_one()
        # A write the server refuses: a 9 MB bio copied into an order that holds 9 MB already.
        big = self.db.customers.find_one({}, skip=1)
        self.db.orders.insert_one({"customerId": big["_id"], "status": "NEW", "blob": "x" * (9 << 20)})
        self.db.customers.update_one({"_id": big["_id"]}, {"$set": {"bio": "y" * (9 << 20)}})
        self.applied(d)
        refused = [x for x in self.status(d)["deadLetters"] if "computed field" not in x["reason"]]
        self.assertEqual(len(refused), 1, self.status(d)["deadLetters"])
        shot = os.path.join(os.path.abspath(BUILD_DIR), "operator-page.png")
        html = self.dom(d, browser, screenshot=shot)
        self.assertIn('data-loaded="true"', html, html[-3000:])
        st = self.status(d)
        for n in st["namespaces"]:
            self.assertRegex(html, r'data-namespace="%s" data-state="streaming"' % re.escape(n["namespace"]))
        for m in st["mappings"]:
            self.assertRegex(html, r'data-mapping="%s" data-backfill="done" data-progress="100"' % re.escape(m["name"]))
        # The documents written per change event: orders-customer's events wrote (the new
        # order's fill, the changes of its customers), shown as the API says.
        amp = {m["name"]: m["writeAmplification"] for m in st["mappings"]}
        self.assertGreaterEqual(amp["orders-customer"]["events"], 1, amp)
        row = re.search(r'<tr data-mapping="orders-customer".*?</tr>', html, re.S).group(0)
        shown = re.search(r'data-amplification="([^"]*)">([^<]*)<', row)
        self.assertIsNotNone(shown, row)
        self.assertGreaterEqual(float(shown.group(1)), 0)
        self.assertRegex(shown.group(2), r"^\d+\.\d \(\d+ events (in .+|since start)\)$")
        self.assertEqual(html.count('data-deadletter="orders-customer"'), 2, html[-4000:])
        self.assertIn("computed field", html)
        self.assertIn(refused[0]["reason"][:40].replace('"', "&quot;"), html)
        self.assertIn('id="reload-box">', html)  # shown: the daemon runs with --web-enable-lifecycle
        self.assertTrue(os.path.getsize(shot) > 10000, shot)

        # After a reload that adds a mapping, the page lists it.
        with open(os.path.join(self.mappings, "orders-customer.json")) as f:
            twin = json.load(f)
        twin["name"] = "orders-customer-twin"
        twin["into"] = "customerTwin"
        with open(os.path.join(self.mappings, "orders-customer-twin.json"), "w") as f:
            json.dump(twin, f)
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: "orders-customer-twin" in {m["name"] for m in self.status(d)["mappings"]},
                   timeout=30, message="the reload ran")
        html = self.dom(d, browser)
        self.assertIn('data-mapping="orders-customer-twin"', html)
        self.assertEqual(d.stop(), 0)

    def test_with_mongodb_unreachable_the_api_and_page_say_so_and_show_what_they_knew(self):
        """MongoDB gone: 200 with the last known values and their age, a banner saying since
        when, every namespace not streaming with why (the words of /readyz), the dead letters
        last read; a page opened now shows all of it, not empty tables."""
        if not emulator_only():
            self.skipTest("stops the test server")
        browser = chromium()
        if browser is None:
            self.fail("no chromium: scripts/install-deps.sh installs Debian's chromium package")
        self.shop.seed()
        d = self.start()
        self.refuse_one()
        self.applied(d)
        before = self.status(d)
        self.assertEqual(len(before["deadLetters"]), 1)
        self.assertEqual(before["health"]["state"], "ok", before["health"])
        self.assertTrue(before["mongodb"]["reachable"])
        # The page's amber and red are the alert rules' thresholds.
        with open(os.path.join(SOURCE_DIR, "deploy", "prometheus", "alerts.yml")) as f:
            rules = dict(re.findall(r"alert: (\w+)\n\s+expr: [^\n]*?([<>] \d+)\n", f.read()))
        t = before["thresholds"]
        self.assertEqual(rules["DenormdLagHigh"], "> %d" % t["lagWarnSeconds"])
        self.assertEqual(rules["DenormdLagCritical"], "> %d" % t["lagCriticalSeconds"])
        self.assertEqual(rules["DenormdHistoryHeadroomLow"], "< %d" % t["headroomWarnSeconds"])
        self.client.close()
        self.clean_up = lambda failed: None  # nothing left to clean on a stopped server
        self.emulator.stop()
        wait_until(lambda: not self.status(d)["mongodb"]["reachable"], timeout=20, message="unreachable seen")
        wait_until(lambda: d.get("/readyz")[0] == 503, timeout=20, message="not ready")
        st = self.status(d)
        self.assertFalse(st["mongodb"]["readable"])
        self.assertGreater(st["mongodb"]["sinceMs"], 0)
        self.assertGreater(st["mongodb"]["lastReadMs"], 0)
        self.assertEqual(st["health"]["state"], "critical")
        self.assertTrue(st["health"]["summary"].startswith("MongoDB cannot be reached; 0 of "), st["health"])
        readyz = d.get("/readyz")[1]
        for n in st["namespaces"]:
            self.assertFalse(n["streaming"], n)
            self.assertIn(n["namespace"], readyz)
            self.assertIn(n["state"], readyz)  # the watcher's own words
            self.assertGreaterEqual(n["serverReadAgeSeconds"], 0, n)
        self.assertEqual(st["deadLetters"], before["deadLetters"])
        self.assertEqual(sorted(m["name"] for m in st["mappings"]), sorted(m["name"] for m in before["mappings"]))
        html = self.dom(d, browser)
        self.assertIn('data-loaded="true"', html)
        self.assertRegex(html, r'<div id="health" data-state="critical">MongoDB cannot be reached')
        self.assertRegex(html, r'<div id="mongodb">MongoDB cannot be reached since ')
        for n in st["namespaces"]:
            self.assertRegex(html, r'data-namespace="%s" data-state="not-streaming"' % re.escape(n["namespace"]))
        self.assertNotIn('data-state="streaming"', html)
        self.assertEqual(html.count('data-deadletter="orders-customer"'), 1)
        self.assertEqual(stop_within(d, 6)[0], 0)

    def test_without_lifecycle_the_page_has_no_reload_button(self):
        browser = chromium()
        if browser is None:
            self.fail("no chromium: scripts/install-deps.sh installs Debian's chromium package")
        self.shop.seed()
        d = self.daemon(self.uri, lifecycle=False)
        self.assertFalse(self.status(d)["lifecycle"])
        html = self.dom(d, browser)
        self.assertIn('data-loaded="true"', html)
        self.assertIn('id="reload-box" hidden', html)
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
