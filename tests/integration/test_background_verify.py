"""`denormd run --verify-interval`: the background verify finds a dependent changed behind
denormd's back, counts it, logs it once and repairs it (or leaves it with --verify-no-repair),
and does not count changes the stream has yet to apply. Also `verify --repair`'s guard against
the stream writing between its read and its write."""
import math
import re
import subprocess
import threading
import time

from tests.integration.base import ShopTestCase
from tests.integration.harness import DENORMD, emulator_only, wait_until
from tests.integration.seed import OPEN

MAPPINGS = ["orders-customer", "orders-items-product", "logmsgs-host", "products-recent-reviews",
            "customers-recent-orders", "hosts-recent-logs"]


class BackgroundVerifyTest(ShopTestCase):
    DB_PREFIX = "bgverify_"

    def last_passes(self, d):
        return {dict(ls)["mapping"]: v for (n, ls), v in d.metrics().items()
                if n == "denormd_verify_last_pass_timestamp_seconds"}

    def wait_for_pass(self, d, after, timeout=30):
        """Waits until every mapping has had a full pass that finished after `after` (epoch s)."""
        wait_until(lambda: set(self.last_passes(d)) == set(MAPPINGS)
                   and min(self.last_passes(d).values()) > after,
                   timeout=timeout, message="a full background verify pass over every mapping")

    def drift_lines(self, d):
        return [line for line in d.log().splitlines() if "drift found" in line]

    def tamper(self):
        """Changes three dependents behind denormd's back; returns {mapping: _id}."""
        db = self.db
        order = db.orders.find_one({"status": {"$in": OPEN}}, sort=[("_id", 1)])
        db.orders.update_one({"_id": order["_id"]}, {"$set": {"customer.name": "behind its back"}})
        db.logmsgs.update_one({"_id": 17}, {"$set": {"host.ipaddr": "6.6.6.6"}})
        product = db.products.find_one({"recentReviews.1": {"$exists": True}}, sort=[("_id", 1)])
        db.products.update_one({"_id": product["_id"]}, {"$pop": {"recentReviews": 1}})
        return {"orders-customer": order["_id"], "logmsgs-host": 17, "products-recent-reviews": product["_id"]}

    def test_a_dependent_changed_behind_its_back_is_found_repaired_counted_and_logged_once(self):
        self.shop.seed()
        self.shop.fill_recent_arrays()
        d = self.start("--verify-interval", "3s")
        self.wait_for_pass(d, 0)
        self.assertEqual(d.metric_sum("denormd_drift_found_total"), 0)
        tampered_at = time.time()
        drifted = self.tamper()
        # Found and repaired within the interval (one pass after the change, plus its confirmation).
        wait_until(lambda: self.shop.check() == [], timeout=3 + 5, interval=0.25,
                   message="the tampered dependents repaired")
        self.assertLess(time.time() - tampered_at, 3 + 5)
        for name, _id in drifted.items():
            self.assertEqual(d.metric_sum("denormd_drift_found_total", mapping=name), 1, name)
            self.assertEqual(d.metric_sum("denormd_drift_repaired_total", mapping=name), 1, name)
        self.assertEqual(d.metric_sum("denormd_drift_found_total"), 3)
        lines = self.drift_lines(d)
        self.assertEqual(len(lines), 3, lines)
        fields = {"orders-customer": "customer.name", "logmsgs-host": "host.ipaddr",
                  "products-recent-reviews": "recentReviews"}
        for name, _id in drifted.items():
            [line] = [l for l in lines if "mapping=%s " % name in l]
            self.assertIn("drift found; repairing it", line)
            self.assertIn("_id=%s" % _id, line)
            self.assertIn("fields=%s" % fields[name], line)
        # Another full pass: nothing new.
        self.wait_for_pass(d, time.time())
        self.assertEqual(d.metric_sum("denormd_drift_found_total"), 3)
        self.assertEqual(len(self.drift_lines(d)), 3)
        self.assertEqual(d.stop(), 0)

    def test_a_drifted_dependent_holding_a_nan_is_found(self):
        # The confirmation asks whether the dependent is as it was at the last read; with `==` a
        # NaN is never equal to itself, so such a dependent never counted as drift.
        self.shop.seed()
        d = self.start("--verify-interval", "2s")
        order = self.db.orders.find_one({"status": {"$in": OPEN}}, sort=[("_id", 1)])
        self.db.customers.update_one({"_id": order["customerId"]}, {"$set": {"email": float("nan")}})
        def copied():
            email = self.db.orders.find_one({"_id": order["_id"]})["customer"]["email"]
            return isinstance(email, float) and math.isnan(email)
        wait_until(copied, timeout=10, message="the NaN copied")
        self.wait_for_pass(d, time.time())
        found = d.metric_sum("denormd_drift_found_total", mapping="orders-customer")
        self.db.orders.update_one({"_id": order["_id"]}, {"$set": {"customer.name": "behind its back"}})
        wait_until(lambda: d.metric_sum("denormd_drift_found_total", mapping="orders-customer") == found + 1,
                   timeout=15, message="the drift found")
        wait_until(lambda: self.db.orders.find_one({"_id": order["_id"]})["customer"]["name"] != "behind its back",
                   timeout=10, message="the drift repaired")
        self.assertEqual(d.stop(), 0)

    def test_with_no_repair_drift_is_counted_and_logged_once_but_left(self):
        self.shop.seed()
        self.shop.fill_recent_arrays()
        d = self.start("--verify-interval", "2s", "--verify-no-repair")
        self.wait_for_pass(d, 0)
        drifted = self.tamper()
        wait_until(lambda: d.metric_sum("denormd_drift_found_total") == 3, timeout=2 + 5,
                   message="the drift counted")
        # Two more passes: still there, not counted or logged again.
        self.wait_for_pass(d, time.time())
        self.wait_for_pass(d, time.time())
        self.assertEqual(d.metric_sum("denormd_drift_found_total"), 3)
        self.assertEqual(d.metric_sum("denormd_drift_repaired_total"), 0)
        lines = self.drift_lines(d)
        self.assertEqual(len(lines), 3, lines)
        for line in lines:
            self.assertIn("drift found; left as it is (--verify-no-repair)", line)
        self.assertEqual(self.db.orders.find_one({"_id": drifted["orders-customer"]})["customer"]["name"],
                         "behind its back")
        self.assertEqual(self.db.logmsgs.find_one({"_id": 17})["host"]["ipaddr"], "6.6.6.6")
        self.assertEqual(len(self.shop.check()), 3)
        self.assertEqual(d.stop(), 0)

    def test_a_burst_of_legitimate_changes_during_passes_is_not_drift(self):
        self.shop.seed()
        self.shop.fill_recent_arrays()
        # Passes back to back (the shop is small) while the sources change as fast as they can.
        d = self.start("--verify-interval", "1s", "--log-level", "debug")
        self.wait_for_pass(d, 0)
        started = time.time()
        done = threading.Event()
        changes = [0]

        def burst():
            while not done.is_set():
                self.shop.random_change()
                changes[0] += 1

        threads = [threading.Thread(target=burst)]
        for t in threads:
            t.start()
        try:
            time.sleep(10)
        finally:
            done.set()
            for t in threads:
                t.join()
        self.converge()
        self.wait_for_pass(d, time.time())
        passes_during = [p for p in self.last_passes(d).values() if p > started]
        self.assertEqual(len(passes_during), len(MAPPINGS))
        suspects = sum(int(n) for n in re.findall(r"in flight, not drift.*?dependents=(\d+)", d.log()))
        self.assertEqual(d.metric_sum("denormd_drift_found_total"), 0,
                         "%d changes, %d suspects cleared\n%s" % (changes[0], suspects, "\n".join(self.drift_lines(d))))
        self.assertEqual(self.drift_lines(d), [])
        self.assertGreater(changes[0], 200)
        print("burst: %d changes; %d suspects found in flight and cleared" % (changes[0], suspects))
        self.assertEqual(d.stop(), 0)

    def test_a_bad_interval_is_a_usage_error_naming_the_flag_and_value(self):
        for value, why in (("soon", "not \"soon\""), ("500ms", "from 1s to 7d"), ("30m1h", "not \"30m1h\"")):
            p = subprocess.run([DENORMD, "run", "--uri", self.uri, "--mappings", self.mappings,
                                "--verify-interval", value], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("--verify-interval must be a duration from 1s to 7d such as 90s, 10m or 1h30m, "
                          "not \"%s\"" % value, p.stderr)
            self.assertIn(why, p.stderr)
        p = subprocess.run([DENORMD, "run", "--uri", self.uri, "--mappings", self.mappings, "--verify-no-repair"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--verify-no-repair is for --verify-interval", p.stderr)

    def test_a_verify_repair_does_not_leave_a_value_older_than_the_stream_wrote(self):
        if not emulator_only():
            self.skipTest("needs the test server's blockConnection fail point")
        self.shop.seed()
        db = self.db
        order = db.orders.find_one({"status": {"$in": OPEN}}, sort=[("_id", 1)])
        db.orders.update_one({"_id": order["_id"]}, {"$set": {"customer.name": "drifted"}})
        # verify --repair reads the drift and the source, then its write waits 2 s; meanwhile the
        # customer is renamed and the copy written as the stream would write it.
        self.fail_point(failCommands=["update"], blockConnection=True, blockTimeMS=2000,
                        namespace="%s.orders" % self.dbname, mode={"times": 1})
        argv = [DENORMD, "verify", "--uri", self.uri, "--db", self.dbname, "--mappings", self.mappings,
                "--mapping", "orders-customer", "--repair"]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1)
        db.customers.update_one({"_id": order["customerId"]}, {"$set": {"name": "renamed"}})
        db.orders.update_many({"customerId": order["customerId"], "status": {"$in": OPEN}},
                              {"$set": {"customer.name": "renamed"}})
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 3, out + err)
        self.assertEqual(db.orders.find_one({"_id": order["_id"]})["customer"]["name"], "renamed")
