"""denormd backfill, verify and status, end to end: the real binary against the test server
(or DENORMD_TEST_URI)."""
import json
import math
import re
import signal
import subprocess
import unittest

import pymongo

from tests.integration.base import ShopTestCase
from tests.integration.harness import DENORMD, emulator_only, wait_until, write_mappings
from tests.integration.seed import CITIES, OPEN, when


class OperationsTest(ShopTestCase):
    DB_PREFIX = "ops_"
    EMULATOR_ARGS = {"test_status_reports_checkpoints_and_lost_history": ("--oplog-max-events", "50")}

    def verify_json(self, *args):
        rc, out, err = self.cmd("verify", "--json", *args)
        self.assertIn(rc, (0, 3), err)
        return rc, json.loads(out)

    # ---- helpers ------------------------------------------------------------------------------
    def scramble_everything(self):
        """Makes every copy and every recent array wrong (open orders only: delivered ones keep
        their snapshot by design)."""
        db = self.db
        for o in db.orders.find({}, {"status": 1, "items": 1}):
            update = {"$set": {"items": [dict(i, product={"title": "stale", "sku": "stale"})
                                         for i in o["items"]]}}
            if o["status"] in OPEN:
                if o["_id"] % 3 == 0:
                    update["$unset"] = {"customer": ""}
                else:
                    update["$set"]["customer"] = {"name": "stale", "email": "stale", "city": "stale"}
            db.orders.update_one({"_id": o["_id"]}, update)
        db.logmsgs.update_many({}, {"$set": {"host": {"name": "stale", "ipaddr": "0.0.0.0"}}})
        bogus = [{"bogus": True}]
        db.products.update_many({}, {"$set": {"recentReviews": bogus}})
        db.hosts.update_many({}, {"$set": {"recentLogs": bogus}})
        db.customers.update_many({}, {"$set": {"recentOrders": bogus}})

    # -----------------------------------------------------------------------------------------
    def test_backfill_repairs_a_dataset_where_every_dependent_is_wrong(self):
        self.shop.seed()
        self.scramble_everything()
        diffs = self.shop.check()
        self.assertGreater(len(diffs), 300)
        rc, out, err = self.cmd("backfill")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.shop.check(), [])
        for name in ("orders-customer", "orders-items-product", "logmsgs-host", "products-recent-reviews",
                     "hosts-recent-logs", "customers-recent-orders"):
            self.assertRegex(out, r"(?m)^%s: [\d,]+ document\(s\), done$" % name)
            progress = self.db.denormd_backfill.find_one({"_id": name})
            self.assertTrue(progress["done"], progress)
        self.assertEqual(self.db.denormd_backfill.find_one({"_id": "orders-customer"})["documents"], 40)
        self.assertEqual(self.db.denormd_backfill.find_one({"_id": "hosts-recent-logs"})["documents"], 4)
        self.assertIn("done in", err)  # the progress log line of each mapping
        # And verify agrees with the oracle.
        rc, report = self.verify_json()
        self.assertEqual(rc, 0, report)
        self.assertTrue(report["clean"])

        # A finished backfill starts over when run again (rule: done -> fresh).
        rc, out, err = self.cmd("backfill", "--mapping", "orders-customer")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.strip(), "orders-customer: 40 document(s), done")
        self.assertNotIn("continuing", err)

    def test_backfill_retries_transient_errors(self):
        self.shop.seed(customers=5, products=5, orders=20, hosts=2, logs=20, reviews=20)
        self.scramble_everything()
        try:
            self.client.admin.command({"configureFailPoint": "failCommand", "mode": {"times": 4},
                                       "data": {"failCommands": ["update", "find"], "errorCode": 91,
                                                "appName": "denormd"}})
        except pymongo.errors.OperationFailure as e:
            self.skipTest("the server does not allow fail points (enableTestCommands): %s" % e)
        rc, out, err = self.cmd("backfill")
        self.assertEqual(rc, 0, err)
        self.assertIn("transient failure; continuing after the last stored batch", err)
        self.assertEqual(self.shop.check(), [])

    def test_backfill_killed_half_way_continues_after_the_last_batch(self):
        # 10,000 customers with 2 orders each: refilling every customer's recent orders takes
        # a few seconds, long enough to kill it half-way.
        customers, orders = 10000, 20000
        db = self.db
        db.customers.insert_many([{"_id": i, "name": "Customer %d" % i, "email": "c%d@example.com" % i,
                                   "address": {"city": CITIES[i % len(CITIES)]}, "recentOrders": [{"stale": 1}]}
                                  for i in range(1, customers + 1)])
        db.orders.insert_many([{"_id": i, "customerId": (i + 1) // 2, "status": "NEW", "total": i % 500,
                                "createdAt": when(i), "customer": {"name": "stale"}, "items": []}
                               for i in range(1, orders + 1)])
        db.orders.create_index("customerId")
        both = ["--mapping", "customers-recent-orders", "--mapping", "orders-customer"]
        argv = [DENORMD, "backfill", "--uri", self.uri, "--db", self.dbname, "--mappings", self.mappings, *both]
        first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            def half_way():
                p = db.denormd_backfill.find_one({"_id": "customers-recent-orders"})
                return p is not None and p["documents"] >= 2000
            wait_until(half_way, timeout=120, interval=0.02, message="a few batches of customers-recent-orders")
            first.send_signal(signal.SIGKILL)
        finally:
            first.kill()
            out1, err1 = first.communicate()
        self.outputs.append((argv[1:], first.returncode, out1, err1))
        self.assertEqual(first.returncode, -signal.SIGKILL)
        killed = db.denormd_backfill.find_one({"_id": "customers-recent-orders"})
        self.assertFalse(killed["done"], "the backfill finished before it could be killed: make the dataset bigger")
        done_before = killed["documents"]
        self.assertLess(done_before, customers)
        # Batches are contiguous in _id order: the stored key is the last customer done.
        self.assertEqual(killed["lastKey"], done_before)
        # Writes of the batch in flight may have landed without their progress: redone, harmless.
        refilled = db.customers.count_documents({"recentOrders.stale": {"$exists": False}})
        self.assertGreaterEqual(refilled, done_before)
        self.assertLessEqual(refilled, done_before + 500)
        self.assertIsNone(db.denormd_backfill.find_one({"_id": "orders-customer"}))

        rc, out, err = self.cmd("backfill", *both)
        self.assertEqual(rc, 0, err)
        self.assertRegex(err, r"continuing an unfinished backfill .*mapping=customers-recent-orders.*after=%d\b"
                         % done_before)
        # This run walked only what the first had not finished: no completed range twice.
        m = re.search(r"(?m)^customers-recent-orders: ([\d,]+) document\(s\) "
                      r"\(continued after _id (\d+); ([\d,]+) in all\), done$", out)
        self.assertIsNotNone(m, out)
        self.assertEqual(int(m.group(1).replace(",", "")), customers - done_before)
        self.assertEqual(int(m.group(2)), done_before)
        self.assertEqual(int(m.group(3).replace(",", "")), customers)
        self.assertRegex(out, r"(?m)^orders-customer: 10,000 document\(s\), done$")
        final = db.denormd_backfill.find_one({"_id": "customers-recent-orders"})
        self.assertTrue(final["done"])
        self.assertEqual(final["documents"], customers)
        self.assertEqual(final["startedAt"], killed["startedAt"])
        wrong = [c["_id"] for c in db.customers.find({}, {"recentOrders": 1})
                 if c["recentOrders"] != [{"orderId": i, "total": i % 500, "status": "NEW", "createdAt": when(i)}
                                          for i in (2 * c["_id"], 2 * c["_id"] - 1)]]
        self.assertEqual(wrong[:5], [])
        wrong = [o["_id"] for o in db.orders.find({}, {"customer": 1, "customerId": 1})
                 if o["customer"] != {"name": "Customer %d" % o["customerId"], "email": "c%d@example.com" % o["customerId"],
                                      "city": CITIES[o["customerId"] % len(CITIES)]}]
        self.assertEqual(wrong[:5], [])

    def test_verify_reports_exactly_the_injected_drift_and_repair_clears_it(self):
        self.shop.seed()
        self.shop.fill_recent_arrays()
        rc, report = self.verify_json()
        self.assertEqual(rc, 0, report)
        db = self.db
        open_orders = [o["_id"] for o in db.orders.find({"status": {"$in": OPEN}}, {"_id": 1}).sort("_id", 1)]
        delivered = db.orders.find_one({"status": "DELIVERED"})
        # Injected drift, per mapping.
        db.orders.update_one({"_id": open_orders[0]}, {"$set": {"customer.name": "wrong"}})
        db.orders.update_one({"_id": open_orders[1]}, {"$unset": {"customer.email": ""}})
        db.orders.update_one({"_id": open_orders[2]}, {"$set": {"customer.city": "wrong", "customer.name": "x"}})
        db.orders.update_one({"_id": delivered["_id"]}, {"$set": {"customer.name": "snapshot"}})  # not drift: where
        db.orders.update_one({"_id": open_orders[3]}, {"$set": {"items.0.product.sku": "wrong"}})
        db.logmsgs.update_one({"_id": 17}, {"$set": {"host.ipaddr": "1.2.3.4"}})
        db.logmsgs.update_one({"_id": 18}, {"$set": {"host.extra": "x"}})  # not a copied field: not drift
        with_reviews = db.products.find_one({"recentReviews.1": {"$exists": True}})
        db.products.update_one({"_id": with_reviews["_id"]}, {"$pop": {"recentReviews": 1}})
        with_orders = db.customers.find_one({"recentOrders.0": {"$exists": True}})
        db.customers.update_one({"_id": with_orders["_id"]}, {"$set": {"recentOrders.0.total": -1}})
        # A dependent whose source is gone: onSourceDelete "keep" allows it.
        db.orders.insert_one({"_id": 999999, "customerId": 424242, "status": "NEW", "total": 1,
                              "createdAt": when(1), "customer": {"name": "gone"}, "items": []})
        expected = {
            "orders-customer": sorted(open_orders[:3]),
            "orders-items-product": [open_orders[3]],
            "logmsgs-host": [17],
            "products-recent-reviews": [with_reviews["_id"]],
            "customers-recent-orders": [with_orders["_id"]],
            "hosts-recent-logs": [],
        }

        rc, report = self.verify_json()
        self.assertEqual(rc, 3, report)
        self.assertFalse(report["clean"])
        self.assertEqual(report["drifted"], 7)
        by_name = {m["mapping"]: m for m in report["mappings"]}
        self.assertEqual(set(by_name), set(expected))
        for name, ids in expected.items():
            self.assertEqual(by_name[name]["drifted"], len(ids), by_name[name])
            self.assertEqual(sorted(e["_id"] for e in by_name[name]["examples"]), ids, by_name[name])
        paths = {e["_id"]: e["paths"] for e in by_name["orders-customer"]["examples"]}
        self.assertEqual(paths[open_orders[0]], ["customer.name"])
        self.assertEqual(paths[open_orders[1]], ["customer.email"])
        self.assertEqual(sorted(paths[open_orders[2]]), ["customer.city", "customer.name"])
        self.assertEqual(by_name["orders-items-product"]["examples"][0]["paths"], ["items.0.product.sku"])
        self.assertEqual(by_name["logmsgs-host"]["examples"][0]["paths"], ["host.ipaddr"])
        self.assertEqual(by_name["orders-customer"]["orphaned"], 1)
        self.assertTrue(by_name["orders-customer"]["orphansAllowed"])
        self.assertEqual(by_name["orders-customer"]["orphanExamples"], [{"_id": 999999, "keys": [424242]}])
        rc, text, _ = self.cmd("verify")
        self.assertEqual(rc, 3)
        self.assertIn("drift: 7 dependent(s) in 5 of 6 mapping(s)", text)
        self.assertIn("not drift", text)
        # --mapping narrows the check.
        rc, report = self.verify_json("--mapping", "logmsgs-host")
        self.assertEqual((rc, [m["mapping"] for m in report["mappings"]], report["drifted"]), (3, ["logmsgs-host"], 1))

        rc, report = self.verify_json("--repair")
        self.assertEqual(rc, 3, report)
        self.assertEqual(report["repaired"], 7)
        self.assertEqual({m["mapping"]: m["repaired"] for m in report["mappings"]},
                         {name: len(ids) for name, ids in expected.items()})
        rc, report = self.verify_json()
        self.assertEqual(rc, 0, report)
        self.assertEqual(report["drifted"], 0)
        self.assertEqual({m["mapping"]: m for m in report["mappings"]}["orders-customer"]["orphaned"], 1)
        # Only what was found was written: the orphan and the delivered snapshot are untouched.
        self.assertEqual(db.orders.find_one({"_id": 999999})["customer"], {"name": "gone"})
        self.assertEqual(db.orders.find_one({"_id": delivered["_id"]})["customer"]["name"], "snapshot")
        self.assertEqual(db.logmsgs.find_one({"_id": 18})["host"]["extra"], "x")
        db.orders.delete_one({"_id": 999999})
        db.logmsgs.update_one({"_id": 18}, {"$unset": {"host.extra": ""}})
        db.orders.update_one({"_id": delivered["_id"]}, {"$set": {"customer": self.shop.delivered_snapshots[delivered["_id"]]}})
        self.assertEqual(self.shop.check(), [])

    def test_verify_compares_values_as_mongodb_does(self):
        """A copied NaN equals itself and an int 5 equals a double 5.0, as MongoDB's equality
        has it: verify used to find a NaN copy drifted on every run (exit 3) and repair it
        again, and a rechecked refill of a NaN never ended."""
        self.mappings = write_mappings(self.dbname, names=["logmsgs-host", "customers-recent-orders",
                                                           "customers-spent"])
        self.shop.seed()
        db = self.db
        nan_host, int_host = [h["_id"] for h in db.hosts.find({}, {"_id": 1}).sort("_id", 1).limit(2)]
        db.hosts.update_one({"_id": nan_host}, {"$set": {"ipaddr": float("nan")}})
        db.hosts.update_one({"_id": int_host}, {"$set": {"ipaddr": 5}})
        # The copies: repaired once, then in line, also where they hold 5.0 for the host's 5.
        rc, report = self.verify_json("--repair", "--mapping", "logmsgs-host")
        self.assertEqual((rc, report["repaired"] > 0), (3, True), report)
        self.assertTrue(math.isnan(db.logmsgs.find_one({"hostId": nan_host})["host"]["ipaddr"]))
        db.logmsgs.update_many({"hostId": int_host}, {"$set": {"host.ipaddr": 5.0}})
        self.assertGreater(db.logmsgs.count_documents({"host.ipaddr": {"$type": "double"}, "hostId": int_host}), 0)
        for _ in range(2):
            rc, report = self.verify_json("--mapping", "logmsgs-host")
            self.assertEqual((rc, report["drifted"]), (0, 0), report)
        # A recent array and a sum holding NaN: repaired once (and the repair ends), then in line.
        # The newest order of its customer is in their recent orders and counts in totalSpent.
        newest = next(db.orders.find({"status": {"$ne": "CANCELLED"}}).sort("createdAt", -1).limit(1))
        db.orders.update_one({"_id": newest["_id"]}, {"$set": {"total": float("nan")}})
        rc, out, err = self.cmd("verify", "--json", "--repair", timeout=60)
        self.assertEqual(rc, 3, err)
        self.assertGreater(json.loads(out)["repaired"], 0)
        for _ in range(2):
            rc, report = self.verify_json()
            self.assertEqual((rc, report["drifted"]), (0, 0), report)
        customer = db.customers.find_one({"_id": newest["customerId"]})
        self.assertTrue(math.isnan(customer["recentOrders"][0]["total"]), customer)
        self.assertTrue(math.isnan(customer["totalSpent"]), customer)

    def test_usage_errors_exit_2(self):
        rc, _, err = self.cmd("backfill", "--mapping", "no-such-mapping")
        self.assertEqual(rc, 2)
        self.assertIn('no mapping named "no-such-mapping"', err)
        self.assertIn("orders-customer", err)  # the list of names
        rc, _, err = self.cmd("verify", "--mapping", "nope")
        self.assertEqual(rc, 2)
        p = subprocess.run([DENORMD, "status", "--mappings", self.mappings], capture_output=True, text=True,
                           timeout=30, env={"PATH": "/usr/bin:/bin"})
        self.assertEqual(p.returncode, 2)
        self.assertIn("no MongoDB URI", p.stderr)

    def test_status_reports_checkpoints_and_lost_history(self):
        if not emulator_only():
            self.skipTest("needs the emulator's --oplog-max-events")
        self.shop.seed(customers=5, products=5, orders=10, hosts=2, logs=10, reviews=10)
        self.shop.fill_recent_arrays()
        rc, out, err = self.cmd("status")
        self.assertEqual(rc, 0, err)
        self.assertIn("%s.customers: no checkpoint" % self.dbname, out)

        d = self.start()
        for _ in range(10):
            self.shop.random_change()
        sources = ["customers", "products", "hosts", "reviews", "logmsgs", "orders"]
        # Quiet sources get their checkpoint too (the stream's post-batch token).
        wait_until(lambda: self.db.denormd_checkpoints.count_documents({}) == len(sources), timeout=30,
                   message="a checkpoint for every source")
        self.assertEqual(d.stop(), 0)

        rc, out, err = self.cmd("status")
        self.assertEqual(rc, 0, err)
        for s in sources:
            self.assertRegex(out, r"(?m)^%s\.%s: checkpoint saved \S+ \(\S+ ago\)" % (self.dbname, s))
        self.assertEqual(out.count("history: reaches back to the checkpoint"), 6, out)
        rc, out, err = self.cmd("status", "--json")
        self.assertEqual(rc, 0, err)
        report = {s["source"]: s for s in json.loads(out)["sources"]}
        self.assertEqual(set(report), {"%s.%s" % (self.dbname, s) for s in sources})
        for s in report.values():
            self.assertTrue(s["checkpoint"])
            self.assertEqual(s["history"], "reachable")
            self.assertIn("_data", s["token"])
            self.assertLess(s["ageSeconds"], 120)

        # More changes than the server keeps while denormd is down: history no longer reaches back.
        for i in range(60):
            self.db.customers.update_one({"_id": 1}, {"$set": {"name": "Renamed %d" % i}})
        rc, out, err = self.cmd("status", "--json")
        self.assertEqual(rc, 0, err)
        report = {s["source"]: s for s in json.loads(out)["sources"]}
        customers = report["%s.customers" % self.dbname]
        self.assertEqual(customers["history"], "lost", customers)
        self.assertIn("286", customers["detail"])
        self.assertLessEqual(customers["headroomSeconds"], 0, customers)  # the oldest kept entry passed it
        rc, out, err = self.cmd("status")
        self.assertIn("%s.customers: checkpoint saved" % self.dbname, out)
        self.assertIn("history: LOST", out)


if __name__ == "__main__":
    unittest.main()
