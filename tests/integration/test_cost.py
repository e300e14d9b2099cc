"""`denormd cost` (docs/cost.md): on the sample shop with one customer given 5,000 open orders,
the fan-out names that customer first, the bytes the copies add are what the documents say,
and with a workload under `run` the traffic gives write amplification and a read/update
ratio; `/metrics` has denormd_fanout per mapping, exact for one change. And what it says when
it cannot measure: the server unreachable, a mapping that does not exist, `top` refused, the
metrics page unreachable, a collection larger than the sample size."""
import json
import random
import subprocess
import threading
import time

import bson
import pymongo

from tests.integration.base import ShopTestCase
from tests.integration.harness import DENORMD, emulator_only, free_port, wait_until, write_mappings
from tests.integration.seed import OPEN, customer_snapshot, order, order_item

HEAVY = 7          # the customer given the orders
HEAVY_ORDERS = 5000


class CostTest(ShopTestCase):
    DB_PREFIX = "cost_"
    EMULATOR_ARGS = {"test_top_refused_leaves_the_traffic_out_and_says_why": ("--auth",)}

    def heavy_shop(self, db=None):
        """The shop, and customer HEAVY with HEAVY_ORDERS more open orders."""
        db = self.db if db is None else db
        self.shop.db = db
        self.shop.seed()
        c = db.customers.find_one({"_id": HEAVY})
        p = db.products.find_one({"_id": 1})
        docs = [order(500000 + i, c, [order_item(p, 1)], OPEN[i % 3], self.shop._tick())
                for i in range(HEAVY_ORDERS)]
        for i in range(0, len(docs), 1000):
            db.orders.insert_many(docs[i:i + 1000])

    def open_orders(self, customer):
        return self.db.orders.count_documents({"customerId": customer,
                                               "status": {"$nin": ["DELIVERED", "CANCELLED"]}})

    def cost(self, *args, mappings=None, uri=None):
        argv = [DENORMD, "cost", "--uri", uri or self.uri, "--db", self.dbname,
                "--mappings", mappings or self.mappings, *args]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=180)
        self.outputs.append((argv[1:], p.returncode, p.stdout, p.stderr))
        return p.returncode, p.stdout, p.stderr

    def cost_json(self, *args, **kw):
        rc, out, err = self.cost("--json", *args, **kw)
        self.assertEqual(rc, 0, err)
        return {m["mapping"]: m for m in json.loads(out)["mappings"]}

    def added_bytes_oracle(self):
        """What orders-customer's copies weigh, from the documents: per open order of an existing
        customer, the BSON element {customer: <its snapshot>}."""
        customers = {c["_id"]: c for c in self.db.customers.find()}
        total = 0
        for o in self.db.orders.find({"status": {"$nin": ["DELIVERED", "CANCELLED"]}}, {"customerId": 1}):
            c = customers.get(o.get("customerId"))
            if c is not None:
                total += len(bson.encode({"customer": customer_snapshot(c)})) - 5
        return total

    def applied(self, d):
        t = self.client.admin.command("ping")["operationTime"]
        wait_until(lambda: d.get("/applied?after=%d:%d&timeout=4" % (t.time, t.inc))[0] == 200,
                   timeout=60, interval=0, message="applied")

    def test_the_heavy_customer_leads_the_fan_out_and_a_workload_gives_a_verdict(self):
        self.heavy_shop()
        every_kind = write_mappings(self.dbname, kinds=("copy", "recent", "aggregate"))
        found = self.cost_json("--sample-seconds", "1", mappings=every_kind)
        self.assertEqual(sorted(found), ["customers-recent-orders", "customers-spent", "hosts-recent-logs",
                                         "logmsgs-host", "orders-customer", "orders-items-product",
                                         "products-rating", "products-recent-reviews"])
        oc = found["orders-customer"]
        heavy = self.open_orders(HEAVY)
        self.assertGreaterEqual(heavy, HEAVY_ORDERS)
        f = oc["fanOut"]
        self.assertEqual(f["max"], heavy, f)
        self.assertEqual(f["top"][0], {"key": HEAVY, "dependents": heavy}, f)
        self.assertGreater(f["top"][0]["dependents"], f["top"][1]["dependents"])
        self.assertEqual(f["p99"], heavy)  # fewer than 100 customers: the largest is the p99
        self.assertLess(f["p50"], 20)
        self.assertEqual(f["dependents"], self.db.orders.count_documents(
            {"status": {"$nin": ["DELIVERED", "CANCELLED"]}, "customerId": {"$ne": None}}))
        self.assertFalse(f["read"]["sampled"])
        # The bytes: each copy's weight is measured on the customers, so the heavy customer's
        # copies count at the mean customer's weight; within 10% of the documents' own.
        oracle = self.added_bytes_oracle()
        self.assertGreater(oc["addedBytes"], 0)
        self.assertLess(abs(oc["addedBytes"] - oracle), oracle * 0.1, (oc["addedBytes"], oracle))
        # The other kinds: the heavy customer leads its children too.
        for name in ("customers-recent-orders", "customers-spent"):
            self.assertEqual(found[name]["fanOut"]["top"][0]["key"], HEAVY, found[name])
            self.assertGreaterEqual(found[name]["fanOut"]["max"], HEAVY_ORDERS)
            self.assertGreater(found[name]["addedBytes"], 0)
        largest = found["customers-recent-orders"]["bytes"]["largestParents"]
        self.assertEqual(len(largest), 3, largest)
        biggest = max(len(bson.encode(c)) for c in self.db.customers.find())
        self.assertEqual(largest[0]["bytes"], biggest)
        # Without denormd, the changes come from `top`: every write to the source.
        self.assertTrue(oc["traffic"]["changesFrom"].startswith("top"), oc["traffic"])

        # Under `run`, with customers renamed and orders read meanwhile.
        d = self.start()
        updated, stop = [], threading.Event()

        def workload():
            r = random.Random(5)
            while not stop.is_set():
                who = r.choice([i for i in range(1, 41) if i != HEAVY])
                self.db.customers.update_one({"_id": who}, {"$set": {"name": "Renamed %d" % r.randint(1, 10**6)}})
                updated.append(who)
                for _ in range(10):
                    list(self.db.orders.find({"customerId": r.randint(1, 40)}).limit(5))
                time.sleep(0.02)
        t = threading.Thread(target=workload)
        t.start()
        try:
            time.sleep(1)
            found = self.cost_json("--metrics-url", "http://127.0.0.1:%d/metrics" % d.port,
                                   "--sample-seconds", "6")
        finally:
            stop.set()
            t.join()
        traffic = found["orders-customer"]["traffic"]
        self.assertTrue(traffic["changesFrom"].startswith("denormd"), traffic)
        self.assertGreater(traffic["changesPerSecond"], 0, traffic)
        self.assertGreater(traffic["targetReadsPerSecond"], traffic["changesPerSecond"], traffic)
        self.assertAlmostEqual(traffic["readUpdateRatio"],
                               traffic["targetReadsPerSecond"] / traffic["changesPerSecond"], delta=0.05)
        # Each rename writes that customer's open orders: between the fewest and the most.
        counts = [self.open_orders(c) for c in set(updated)]
        self.assertGreaterEqual(traffic["writeAmplification"], min(counts) - 0.001, (traffic, counts))
        self.assertLessEqual(traffic["writeAmplification"], max(counts) + 0.001, (traffic, counts))
        self.assertEqual(traffic["amplificationFrom"], "denormd, during the window")
        self.assertRegex(found["orders-customer"]["verdict"], r"^(worth it|borderline|think again): ")
        self.assertIn("x as often as", found["orders-customer"]["verdict"])

        # /metrics: denormd_fanout for every mapping, and one rename of the heavy customer is
        # one event that wrote each of its open orders.
        self.applied(d)
        for name in ("orders-customer", "orders-items-product", "logmsgs-host", "customers-recent-orders",
                     "hosts-recent-logs", "products-recent-reviews"):
            self.assertIn(("denormd_fanout_count", frozenset({("mapping", name)})), d.metrics(), name)
        before = (d.metric_sum("denormd_fanout_count", mapping="orders-customer"),
                  d.metric_sum("denormd_fanout_sum", mapping="orders-customer"))
        self.db.customers.update_one({"_id": HEAVY}, {"$set": {"name": "The heavy one"}})
        self.applied(d)
        after = (d.metric_sum("denormd_fanout_count", mapping="orders-customer"),
                 d.metric_sum("denormd_fanout_sum", mapping="orders-customer"))
        self.assertEqual(after[0] - before[0], 1)
        self.assertEqual(after[1] - before[1], heavy)
        self.assertEqual(d.stop(), 0)

    def test_a_large_collection_is_sampled_and_the_output_says_so(self):
        self.heavy_shop()
        found = self.cost_json("--sample-size", "1000", "--sample-seconds", "1")
        f = found["orders-customer"]["fanOut"]
        total = self.db.orders.count_documents({})
        self.assertEqual(f["read"], {"collection": "%s.orders" % self.dbname, "documents": total,
                                     "read": 1000, "sampled": True, "scale": round(total / 1000, 3)})
        # ~97% of the orders are the heavy customer's open ones: the estimate is near the count.
        self.assertEqual(f["top"][0]["key"], HEAVY)
        self.assertLess(abs(f["max"] - self.open_orders(HEAVY)), 1000, f)
        rc, out, err = self.cost("--sample-size", "1000", "--sample-seconds", "1", "--mapping", "orders-customer")
        self.assertEqual(rc, 0, err)
        self.assertIn("read a sample of 1,000 of the %s in %s.orders" % (format(total, ","), self.dbname), out)
        self.assertRegex(out, r"(?m)^  verdict: ")

    def test_failures_are_named_and_the_rest_is_still_reported(self):
        self.shop.seed()
        # A mapping that does not exist: named, with the ones that do; exit 2.
        rc, out, err = self.cost("--mapping", "orders-custmer")
        self.assertEqual(rc, 2)
        self.assertIn('no mapping named "orders-custmer"', err)
        self.assertIn("orders-customer", err)
        # The server unreachable: said with where, exit 1 as the other commands.
        dead = "mongodb://127.0.0.1:%d/?replicaSet=rs0" % free_port()
        rc, out, err = self.cost("--timeout", "2", uri=dead)
        self.assertEqual(rc, 1, err)
        self.assertIn("error: cannot reach MongoDB at mongodb://127.0.0.1:", err)
        self.assertEqual(out, "")
        # The metrics page unreachable: the traffic says so, everything else is there.
        url = "http://127.0.0.1:%d/metrics" % free_port()
        found = self.cost_json("--metrics-url", url, "--sample-seconds", "1")
        oc = found["orders-customer"]
        self.assertGreater(oc["fanOut"]["max"], 0)
        self.assertGreater(oc["addedBytes"], 0)
        missing = " ".join(oc["traffic"]["missing"])
        self.assertIn("denormd's metrics: GET %s" % url, missing)
        self.assertTrue(oc["traffic"]["changesFrom"].startswith("top"), oc["traffic"])

    def test_top_refused_leaves_the_traffic_out_and_says_why(self):
        if not emulator_only():
            self.skipTest("needs the test server's --auth")
        # The first user through the localhost exception, then one who may read and write the
        # shop's database but not run `top`.
        self.client.admin.command("createUser", "root", pwd="rootpw", roles=["root"])
        host = self.uri.split("//")[1].split("/")[0]
        self.client.close()
        self.client = pymongo.MongoClient("mongodb://root:rootpw@%s/?replicaSet=rs0&authSource=admin" % host)
        self.db = self.client[self.dbname]
        self.client.admin.command("createUser", "app", pwd="apppw",
                                  roles=[{"role": "readWrite", "db": self.dbname}])
        self.heavy_shop(self.db)
        app = "mongodb://app:apppw@%s/?replicaSet=rs0&authSource=admin" % host
        found = self.cost_json("--sample-seconds", "1", uri=app)
        oc = found["orders-customer"]
        self.assertEqual(oc["fanOut"]["top"][0]["key"], HEAVY)
        self.assertGreater(oc["addedBytes"], 0)
        self.assertIn("refused top", oc["traffic"]["error"])
        self.assertIn("(code 13)", oc["traffic"]["error"])
        self.assertTrue(oc["verdict"].startswith("no verdict: "), oc["verdict"])
        self.assertNotIn("apppw", json.dumps(found))
