"""--partitions: one namespace read as N change streams, each a share of its keys
(docs/architecture.md, "Partitioned streams"). The sample shop, every kind (copy, fills, recent,
aggregate), runs exactly with its busiest collections partitioned: by one instance, by two --ha
instances that each read part of the events, after a kill -9 of one of them, and across a change
of the partition count (a hand-over at the old layout's positions). A flag that names a
namespace no mapping reads, or instances that disagree, are refused with the reason."""
import json
import os
import subprocess
import threading
import time
import unittest

from tests.integration import aggregates
from tests.integration.harness import DENORMD, write_mappings, wait_until
from tests.integration.leases import LeaseHelpers
from tests.integration.mapping_changes import MappingChangeCase
from tests.integration.seed import order_item


class PartitionsTest(LeaseHelpers, MappingChangeCase):
    EMULATOR_ARGS = {"test_two_ha_instances_share_the_partitions_and_one_takes_all_after_a_kill9": (
        "--transaction-lifetime-limit-seconds", "10")}

    def setUp(self):
        super().setUp()
        self.mappings = write_mappings(self.dbname, kinds=("copy", "recent", "aggregate"))

    # ---- helpers -----------------------------------------------------------------------------
    def flags(self, orders=4, logmsgs=4, reviews=3):
        out = []
        for coll, n in (("orders", orders), ("logmsgs", logmsgs), ("reviews", reviews)):
            if n:
                out += ["--partitions", "%s.%s=%d" % (self.dbname, coll, n)]
        return out

    def seed(self):
        # Enough hosts that every partition of logmsgs lists some (4 fall into one of 4).
        self.shop.seed(hosts=16)
        for c in ("reviews", "orders"):  # the aggregate mappings read pre-images
            self.db.command({"collMod": c, "changeStreamPreAndPostImages": {"enabled": True}})

    def backfilled(self, d):
        for name in sorted(f[:-5] for f in os.listdir(self.mappings) if f.endswith(".json")):
            wait_until(lambda: d.metric_sum("denormd_backfill_progress", mapping=name) == 1, timeout=90,
                       message="the automatic backfill of %s done" % name)

    def applied(self, d):
        t = self.client.admin.command("ping")["operationTime"]
        wait_until(lambda: d.get("/applied?after=%d:%d&timeout=4" % (t.time, t.inc))[0] == 200,
                   timeout=90, interval=0, message="every change applied")

    def exact(self):
        self.assertEqual(self.shop.check(), [])
        self.assertEqual(aggregates.mismatches(self.db, self.mappings), [])

    def events_read(self, d, unit):
        return d.metric_sum("denormd_events_total", source="%s.%s" % (self.dbname, unit))

    def events_since(self, coll, since):
        """The change events of `coll` from cluster time `since` to now (what one stream of the
        whole namespace reads, before any filter)."""
        n = 0
        with self.db[coll].watch(start_at_operation_time=since, max_await_time_ms=200) as stream:
            while stream.try_next() is not None:
                n += 1
        return n

    def orders_streamed(self, n):
        """The shop seeded and backfilled, and one --ha instance (with the automatic backfill)
        streaming orders as n partitions."""
        self.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        d = self.instance("a", None, *self.flags(orders=n, logmsgs=0, reviews=0), auto_backfill=True)
        wait_until(lambda: "%s.orders#%d/%d" % (self.dbname, n - 1, n) in self.held_by(d), timeout=20,
                   message="orders streamed")
        return d

    def shown(self, d):
        """The namespaces (units) of `d`'s status API, by name."""
        code, body = d.get("/api/v1/status")
        self.assertEqual(code, 200, body)
        return {n["namespace"]: n for n in json.loads(body)["namespaces"]}

    def now(self):
        return self.client.admin.command("ping")["operationTime"]

    # ---- one instance ------------------------------------------------------------------------
    def test_one_instance_reads_partitions_and_every_kind_stays_exact(self):
        self.seed()
        d = self.start(*self.flags(), auto_backfill=True)
        self.backfilled(d)
        since = self.now()
        for _ in range(400):
            self.shop.random_change()
        # A delete without a pre-image (logmsgs keeps none) does not say which host listed the
        # log: every partition reads it and takes it out of its own hosts. One per host, hosts
        # of every partition.
        owners = {h["p"] for h in self.db.hosts.aggregate([{"$project": {"p": {"$abs": {"$mod": [
            {"$toHashedIndexKey": "$_id"}, 4]}}}}])}
        self.assertEqual(owners, {0, 1, 2, 3})
        for h in self.db.hosts.find():
            newest = self.db.logmsgs.find_one({"hostId": h["_id"]}, sort=[("time", -1)])
            self.db.logmsgs.delete_one({"_id": newest["_id"]})
        self.applied(d)
        self.exact()
        ids = {cp["_id"] for cp in self.db.denormd_checkpoints.find()}
        for coll, n in (("orders", 4), ("logmsgs", 4), ("reviews", 3)):
            units = {"%s.%s#%d/%d" % (self.dbname, coll, i, n) for i in range(n)}
            self.assertLessEqual(units, ids, coll)
            self.assertNotIn("%s.%s" % (self.dbname, coll), ids)
        # Each stream of orders reads its share, not the whole namespace.
        total = self.events_since("orders", since)
        self.assertGreater(total, 100)
        read = [d.metric_sum("denormd_events_total", source="%s.orders#%d/4" % (self.dbname, i))
                for i in range(4)]
        self.assertTrue(all(r > 0 for r in read), read)
        self.assertTrue(all(r < 0.75 * total for r in read), (read, total))
        self.assertEqual(d.metric_sum("denormd_deadletters_total"), 0)
        # The status names each partition with its position.
        rc, out, _ = self.cmd("status", *self.flags())
        self.assertEqual(rc, 0, out)
        for i in range(4):
            self.assertIn("%s.orders#%d/4" % (self.dbname, i), out)
        self.assertEqual(d.stop(), 0)

    def test_changing_the_partition_count_hands_over_without_loss(self):
        self.seed()
        d = self.start(*self.flags(orders=4, logmsgs=2, reviews=0), auto_backfill=True)
        self.backfilled(d)
        for _ in range(150):
            self.shop.random_change()
        self.applied(d)
        self.assertEqual(d.stop(), 0)
        # Changes while nothing runs, then another count: each new partition starts where the
        # old layout stood and applies every key's events its old owner had not.
        for layout in (dict(orders=2, logmsgs=3, reviews=2), dict(orders=0, logmsgs=0, reviews=0),
                       dict(orders=3, logmsgs=0, reviews=2)):
            for _ in range(150):
                self.shop.random_change()
            d = self.start(*self.flags(**layout))
            for _ in range(100):
                self.shop.random_change()
            self.applied(d)
            self.exact()
            self.assertIn("taking over from another layout", d.log())
            self.assertEqual(d.metric_sum("denormd_deadletters_total"), 0)
            self.assertEqual(d.stop(), 0)

    def test_a_partitions_flag_for_an_unwatched_or_malformed_namespace_is_refused(self):
        for flag, said in (("%s.nothing=4" % self.dbname, "no mapping reads %s.nothing" % self.dbname),
                           ("%s.orders=1" % self.dbname, "N from 2 to 64"),
                           ("orders=4", "DB.COLLECTION=N"),
                           ("%s.orders=x" % self.dbname, "DB.COLLECTION=N")):
            p = subprocess.run([DENORMD, "run", "--uri", self.uri, "--db", self.dbname, "--mappings",
                                self.mappings, "--metrics-addr", "127.0.0.1:0", "--partitions", flag],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn(said, p.stdout + p.stderr)
        rc, _, err = self.cmd("status", "--partitions", "%s.orders=2" % self.dbname,
                              "--partitions", "%s.orders=3" % self.dbname)
        self.assertEqual(rc, 2)
        self.assertIn("both 2 and 3", err)

    # ---- --ha --------------------------------------------------------------------------------
    def test_two_ha_instances_share_the_partitions_and_one_takes_all_after_a_kill9(self):
        self.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        flags = self.flags(orders=4, logmsgs=4, reviews=0)
        ds = {n: self.instance(n, None, *flags) for n in ("a", "b")}
        units = self.units(ds["a"])
        self.assertIn("%s.orders#3/4" % self.dbname, units)
        self.spread(ds, units)
        since = self.now()
        for _ in range(400):
            self.shop.random_change()
        for d in ds.values():
            self.applied(d)
        self.exact()
        # Any instance's API shows every partition as a unit, with the instance holding it.
        owners = self.owners(ds)
        orders = ["%s.orders#%d/4" % (self.dbname, i) for i in range(4)]
        for name, d in ds.items():
            wait_until(lambda: all("holder" in self.shown(d).get(u, {}) for u in orders), timeout=20,
                       message="every partition shown with its holder on " + name)
            shown = self.shown(d)
            self.assertEqual({u: [shown[u]["holder"]] for u in orders}, {u: owners[u] for u in orders})
        # Each instance read part of each partitioned namespace's events.
        for coll in ("orders", "logmsgs"):
            total = self.events_since(coll, since)
            for name, d in ds.items():
                read = sum(d.metric_sum("denormd_events_total", source="%s.%s#%d/4" % (self.dbname, coll, i))
                           for i in range(4))
                self.assertLess(read, 0.75 * total, (name, coll, read, total))
        # kill -9 of one: the other takes every partition and stays exact.
        victim = max(ds, key=lambda n: len(self.held_by(ds[n])))
        other = [n for n in ds if n != victim][0]
        done = threading.Event()
        worker = threading.Thread(target=lambda: ([self.shop.random_change() for _ in range(300)], done.set()))
        worker.start()
        time.sleep(0.3)
        ds[victim].kill9()
        worker.join()
        wait_until(lambda: units <= self.held_by(ds[other]), timeout=self.TTL_MS / 1000 + 25,
                   message="the survivor holds every unit")
        self.applied(ds[other])
        self.exact()
        self.assertEqual(ds[other].stop(), 0)

    def test_a_changed_mapping_is_backfilled_once_every_partition_runs_it(self):
        # With --ha the automatic backfill of a changed mapping waits until the streams of what
        # it reads run the new definition: for a partitioned namespace, every partition's.
        d = self.orders_streamed(3)
        self.add_mail_to_orders_customer()
        self.assertEqual(self.post_reload(d)[0], 200)
        self.mail_converges(d, lambda: None)
        self.assertEqual(d.stop(), 0)

    def test_a_mapping_removed_and_put_back_replays_on_every_partition(self):
        # Removed, each partition notes where it stopped applying it; put back with the same
        # definition, each replays from there what it missed (new orders filled, renames).
        d = self.orders_streamed(4)
        path = os.path.join(self.mappings, "orders-customer.json")
        with open(path) as f:
            kept = f.read()
        os.remove(path)
        self.assertEqual(self.post_reload(d)[0], 200)
        for _ in range(150):
            self.shop.random_change()
        # New orders written without their customer's copy: only the fill, replayed, writes it.
        for i in range(40):
            c = self.db.customers.find_one(skip=i % 30)
            p = self.db.products.find_one(skip=i % 20)
            self.db.orders.insert_one({"_id": 900000 + i, "customerId": c["_id"], "status": "NEW",
                                       "total": 10, "createdAt": 1, "items": [order_item(p, 1)]})
        with open(path, "w") as f:
            f.write(kept)
        self.assertEqual(self.post_reload(d)[0], 200)
        self.applied(d)
        self.assertIn("mappings put back replay the changes they missed", d.log())
        self.exact()
        self.assertEqual(d.stop(), 0)

    def test_instances_that_partition_a_namespace_differently_are_refused(self):
        self.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        a = self.instance("a", None, *self.flags(orders=4, logmsgs=0, reviews=0))
        wait_until(lambda: "%s.orders#0/4" % self.dbname in self.held_by(a), timeout=20,
                   message="a streams orders")
        b = self.daemon(self.uri, "--ha", "--instance-id", "b", "--lease-ttl-ms", str(self.TTL_MS),
                        *self.flags(orders=2, logmsgs=0, reviews=0), ready=False)
        got = {}

        def refused():
            got["r"] = b.get("/readyz")
            return got["r"][0] == 503 and "--partitions must be the same on every instance" in got["r"][1]
        wait_until(refused, timeout=20, message="b refusing (last: %r)" % (got.get("r"),))
        self.assertIn("%s.orders" % self.dbname, got["r"][1])
        self.assertFalse(any(u.startswith("%s.orders" % self.dbname) for u in self.held_by(b)))
        for _ in range(100):
            self.shop.random_change()
        self.applied(a)
        self.exact()
        self.assertIn("another layout of partitions", b.log())


if __name__ == "__main__":
    unittest.main()
