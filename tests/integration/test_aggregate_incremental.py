"""The aggregate kind in incremental mode end to end, on the sample it is made for: hosts keep
the count, byte total and average size of their log messages (one-to-squillions), applied as
deltas that each host applies once. Exact after every kind of change, a replay, a kill -9; O(1)
per event under a parent with 100,000 children; refused to start without pre- and
post-images; repaired by verify and backfill."""
import decimal
import json
import random
import time

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.timestamp import Timestamp

from tests.integration.base import ShopTestCase
from tests.integration.harness import mapping_folder, wait_until
from tests.integration.test_aggregate import (backfill_restores_every_parent, kill9_mid_workload_then_restart,
                                              verify_finds_drift_and_repair_fixes_it)

MAPPING = {
    "name": "hosts-log-count", "kind": "aggregate", "mode": "incremental",
    "source": {"collection": "logmsgs", "parentKey": "hostId", "filter": {"level": {"$ne": "debug"}}},
    "target": {"collection": "hosts"},
    "into": "logs",
    "fields": {"count": {"$count": {}}, "bytes": {"$sum": "bytes"}, "avgBytes": {"$avg": "bytes"}},
    "fillNewTargets": True,
}
HOSTS = 8


def number(v):
    """A BSON number as a Decimal, whatever its type (an incremental sum keeps the widest type it
    has seen; a fresh $group may report a narrower one)."""
    if isinstance(v, Decimal128):
        return v.to_decimal()
    return decimal.Decimal(repr(v)) if isinstance(v, float) else decimal.Decimal(v)


MISSING = "(missing)"


def same(a, b):
    if a is None or b is None or a is MISSING or b is MISSING:
        return a is b
    x, y = number(a), number(b)
    return abs(x - y) <= decimal.Decimal("1e-9") * max(1, abs(x), abs(y))


class IncrementalAggregateTest(ShopTestCase):
    def setUp(self):
        super().setUp()
        m = dict(MAPPING, source=dict(MAPPING["source"], db=self.dbname),
                 target=dict(MAPPING["target"], db=self.dbname))
        self.mappings = mapping_folder(m)
        self.rng = random.Random(self._testMethodName)
        self.next_id = 1

    def create(self, images=True, hosts=HOSTS):
        for name in ("hosts", "logmsgs"):
            self.db.create_collection(name, changeStreamPreAndPostImages={"enabled": images})
        self.db.logmsgs.create_index("hostId")
        self.db.hosts.insert_many([{"_id": i, "name": "h%d" % i} for i in range(1, hosts + 1)])

    def size(self):
        """Byte counts of every numeric type, and now and then none or not a number."""
        n = self.rng.randint(1, 2000)
        return self.rng.choice([n, n, Int64(n), float(n) + 0.5, Decimal128(str(n)), None, "big"])

    def log(self, host=None):
        i = self.next_id
        self.next_id += 1
        doc = {"_id": i, "hostId": host or self.rng.randint(1, HOSTS), "message": "m%d" % i,
               "level": self.rng.choice(["info", "info", "warn", "debug"])}
        b = self.size()
        if b is not None:
            doc["bytes"] = b
        return doc

    def change(self):
        ids = [d["_id"] for d in self.db.logmsgs.find({}, {"_id": 1}).limit(500)]
        r = self.rng.random()
        if r < 0.4 or not ids:
            self.db.logmsgs.insert_one(self.log())
            return
        i = self.rng.choice(ids)
        if r < 0.55:
            b = self.size()
            self.db.logmsgs.update_one({"_id": i}, {"$set": {"bytes": b}} if b is not None else {"$unset": {"bytes": ""}})
        elif r < 0.65:
            self.db.logmsgs.update_one({"_id": i}, {"$set": {"hostId": self.rng.randint(1, HOSTS)}})
        elif r < 0.75:
            self.db.logmsgs.update_one({"_id": i}, {"$set": {"level": self.rng.choice(["info", "debug"])}})
        elif r < 0.8:
            doc = self.log()
            doc.pop("_id")
            self.db.logmsgs.replace_one({"_id": i}, doc)
        elif r < 0.85:
            self.db.logmsgs.update_one({"_id": i}, {"$set": {"message": "irrelevant"}})
        else:
            self.db.logmsgs.delete_one({"_id": i})

    def expected(self):
        groups = {g["_id"]: g for g in self.db.logmsgs.aggregate([
            {"$match": {"level": {"$ne": "debug"}}},
            {"$group": {"_id": "$hostId", "count": {"$sum": 1}, "bytes": {"$sum": "$bytes"},
                        "avgBytes": {"$avg": "$bytes"}}}])}
        out = {}
        for h in self.db.hosts.find({}, {"_id": 1}):
            # No matching child: no average; children but none with a number: null ($group's).
            g = groups.get(h["_id"], {"count": 0, "bytes": 0, "avgBytes": MISSING})
            out[h["_id"]] = {k: g[k] for k in ("count", "bytes", "avgBytes")}
        return out

    def actual(self):
        return {h["_id"]: {k: h.get("logs", {}).get(k, MISSING) for k in ("count", "bytes", "avgBytes")}
                for h in self.db.hosts.find({}, {"logs": 1})}

    def exact(self):
        want, have = self.expected(), self.actual()
        return want.keys() == have.keys() and all(
            same(have[h][k], want[h][k]) for h in want for k in want[h])

    def converge(self, timeout=60):
        wait_until(self.exact, timeout=timeout, interval=0.25, message="every host's log figures exact")

    def commands(self, name):
        return self.client.admin.command("serverStatus")["metrics"]["commands"].get(name, {}).get("total", 0)

    def exact_types(self):
        """Exact, and each figure of the type a fresh $group gives (int, Int64, float, Decimal128)."""
        want, have = self.expected(), self.actual()
        return self.exact() and all(type(have[h][k]) is type(want[h][k]) for h in want for k in want[h])

    def test_a_running_sum_that_changes_type_has_the_type_a_fresh_group_gives(self):
        """Deltas keep the widest type a sum has seen ($add's rule); MongoDB's $group gives the type
        of the children there are now. An int32 sum that overflowed to an int64 and came back,
        and an int64, a double or a decimal child that came and left, must leave the type a fresh
        aggregate gives, checked after every change."""
        self.create(hosts=1)
        d = self.start()
        steps = [("insert", 1, 2000000000), ("insert", 2, 2000000000), ("delete", 2, None),
                 ("insert", 3, Int64(5)), ("delete", 3, None), ("insert", 4, 2.5), ("insert", 5, 1.5),
                 ("delete", 4, None), ("update", 5, 7), ("insert", 6, Decimal128("1")),
                 ("insert", 7, 0.5), ("delete", 6, None), ("delete", 7, None)]
        for op, i, b in steps:
            if op == "insert":
                self.db.logmsgs.insert_one({"_id": i, "hostId": 1, "level": "info", "bytes": b})
            elif op == "update":
                self.db.logmsgs.update_one({"_id": i}, {"$set": {"bytes": b}})
            else:
                self.db.logmsgs.delete_one({"_id": i})
            try:
                wait_until(self.exact_types, timeout=20, interval=0.1, message="exact figures of $group's type")
            except AssertionError:
                self.fail("after %s %d: have %r, a fresh $group gives %r" % (op, i, self.actual(), self.expected()))
        self.assertEqual(d.stop(), 0)

    def test_every_kind_of_change_applies_once_and_verify_agrees(self):
        self.create()
        self.db.logmsgs.insert_many([self.log() for _ in range(150)])
        rc, out, err = self.cmd("backfill")
        self.assertEqual(rc, 0, err)
        self.assertTrue(self.exact())
        d = self.start()
        for _ in range(300):
            self.change()
        # A host whose messages all go: count and bytes 0, no average.
        self.db.logmsgs.insert_one(self.log(host=1))
        self.db.logmsgs.delete_many({"hostId": 1})
        # A host inserted after its messages (fillNewTargets: computed from a snapshot).
        self.db.logmsgs.insert_one(dict(self.log(host=HOSTS + 1), level="warn", bytes=Int64(7)))
        self.db.hosts.insert_one({"_id": HOSTS + 1, "name": "late"})
        self.db.logmsgs.insert_one(dict(self.log(host=HOSTS + 1), level="warn", bytes=3))
        self.converge()
        host1 = self.db.hosts.find_one({"_id": 1})["logs"]
        # 0, though maybe as a decimal or double: a running sum keeps the widest type it saw.
        self.assertTrue(same(host1["count"], 0) and same(host1["bytes"], 0), host1)
        self.assertNotIn("avgBytes", host1)
        self.assertEqual(self.db.hosts.find_one({"_id": HOSTS + 1})["logs"]["count"], 2)
        rc, out, err = self.cmd("verify", "--json")
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(json.loads(out)["drifted"], 0)
        self.assertEqual(d.metric_sum("denormd_deadletters_total"), 0)

    def test_replaying_everything_again_changes_nothing(self):
        self.create()
        self.assertEqual(self.cmd("backfill")[0], 0)
        d = self.start()
        time.sleep(1.1)  # cluster times have second resolution
        # From the next second on (--start-at has second resolution): the changes only, not the
        # hosts' inserts, which a replay would (rightly) answer with a fresh recompute.
        began = int(time.time())
        for _ in range(200):
            self.change()
        self.converge()
        self.assertEqual(d.stop(), 0)
        before = list(self.db.hosts.find({}, sort=[("_id", 1)]))
        kept = self.events_kept_since(began)
        self.assertGreater(kept, 100)  # most of the 200 changes; the filters drop the rest
        d2 = self.start("--start-at", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(began)))
        wait_until(lambda: d2.metric_sum("denormd_events_total") >= kept, timeout=60, message="events replayed")
        wait_until(lambda: d2.metric_sum("denormd_lag_seconds") == 0, timeout=30, message="replay caught up")
        # Every host had seen every replayed event: no delta was applied twice, nothing changed.
        self.assertEqual(d2.metric_sum("denormd_documents_modified_total"), 0)
        self.assertEqual(d2.stop(), 0)
        self.assertEqual(list(self.db.hosts.find({}, sort=[("_id", 1)])), before)
        self.assertTrue(self.exact())

    def test_events_of_one_transaction_share_a_cluster_time_and_all_apply(self):
        """A transaction's events share one cluster time and differ only in their resume tokens.
        1,500 logs of one host in one transaction reach denormd in two batches (it reads 1,000 at
        a time), so the host's position after the first batch has the second batch's cluster
        time: only the token tells the events after it from those before (a guard on the cluster
        time alone would drop the last 500)."""
        self.create()
        self.assertEqual(self.cmd("backfill")[0], 0)
        d = self.start()
        docs = [dict(self.log(host=1), level="info", bytes=1) for _ in range(1500)]

        def work(session):
            self.db.logmsgs.insert_many(docs, session=session)
            self.db.logmsgs.insert_one(dict(self.log(host=2), level="warn", bytes=7), session=session)
            self.db.logmsgs.update_one({"_id": docs[0]["_id"]}, {"$set": {"bytes": 100}}, session=session)
        with self.client.start_session() as session:
            session.with_transaction(work)
        with self.db.watch(start_at_operation_time=Timestamp(int(time.time()) - 120, 0),
                           max_await_time_ms=100) as stream:
            times = {e["clusterTime"] for e in iter(stream.try_next, None)
                     if e["ns"]["coll"] == "logmsgs" and "txnNumber" in e}
        self.assertEqual(len(times), 1, "the transaction's events share one cluster time")
        self.converge()
        self.assertEqual(self.actual()[1]["count"], 1500)
        self.assertEqual(number(self.actual()[1]["bytes"]), 1599)
        self.assertEqual(self.actual()[2]["count"], 1)
        self.assertEqual(d.stop(), 0)

    def insert_logs(self, n):
        self.db.logmsgs.insert_many([self.log() for _ in range(n)])

    def test_kill9_mid_workload_then_restart_converges_exactly(self):
        kill9_mid_workload_then_restart(self, self.insert_logs)

    def test_a_parent_with_100000_children_costs_one_update_per_batch_and_no_read(self):
        self.create(hosts=2)
        for start in range(0, 100000, 10000):
            self.db.logmsgs.insert_many([{"_id": 10**6 + i, "hostId": 1, "level": "info", "bytes": 1}
                                         for i in range(start, start + 10000)])
        self.assertEqual(self.cmd("backfill")[0], 0)
        self.assertEqual(self.db.hosts.find_one({"_id": 1})["logs"]["count"], 100000)
        # Without the history-headroom probe, whose two finds of the oplog (at start, then every
        # 30 s) land inside the window below when the machine is busy.
        d = self.start("--headroom-interval-ms", "0")
        aggregates = self.commands("aggregate")
        finds = self.commands("find")
        for i in range(50):
            self.db.logmsgs.insert_one({"_id": i, "hostId": 1, "level": "info", "bytes": 2})
        self.db.logmsgs.delete_one({"_id": 10**6})
        # Waited for through the metrics endpoint: the test's own reads would count as finds.
        wait_until(lambda: d.metric_sum("denormd_events_total", source=self.dbname + ".logmsgs") >= 51
                   and d.metric_sum("denormd_lag_seconds") == 0, timeout=30, message="the deltas applied")
        # Nothing read the children (or the parent): the deltas were written blind.
        self.assertEqual(self.commands("aggregate") - aggregates, 0)
        self.assertEqual(self.commands("find") - finds, 0)
        self.assertEqual(self.db.hosts.find_one({"_id": 1})["logs"]["count"], 100049)
        self.assertEqual(self.db.hosts.find_one({"_id": 1})["logs"]["bytes"], 100000 - 1 + 100)
        self.assertLessEqual(d.metric_sum("denormd_writes_total", mapping="hosts-log-count"),
                             d.metric_sum("denormd_batch_events_count"))
        self.assertTrue(self.exact())

    def test_without_images_run_and_check_refuse_to_start_and_say_how_to_fix_it(self):
        self.create(images=False)
        rc, out, err = self.cmd("check")
        self.assertEqual(rc, 2, out + err)
        self.assertIn(self.dbname + ".logmsgs does not keep pre- and post-images", err)
        self.assertIn("hosts-log-count", err)
        self.assertIn('collMod: "logmsgs", changeStreamPreAndPostImages: {enabled: true}', err)
        rc, out, err = self.cmd("run", "--metrics-addr", "127.0.0.1:0", timeout=60)
        self.assertEqual(rc, 2, out + err)
        self.assertIn("cannot apply a change without them", out + err)
        # The parents too: their pre-images tell the application's replacements from ours.
        self.assertIn(self.dbname + ".hosts does not keep pre- and post-images", err)
        self.assertIn("cannot tell a parent the application replaced from their own write", err)
        self.db.command({"collMod": "logmsgs", "changeStreamPreAndPostImages": {"enabled": True}})
        rc, out, err = self.cmd("check")
        self.assertEqual(rc, 2, out + err)
        self.assertNotIn(".logmsgs does not keep", err)
        self.db.command({"collMod": "hosts", "changeStreamPreAndPostImages": {"enabled": True}})
        rc, out, err = self.cmd("check")
        self.assertEqual(rc, 0, out + err)

    def test_verify_finds_drift_and_repair_and_backfill_fix_it(self):
        verify_finds_drift_and_repair_fixes_it(self, self.insert_logs, self.db.hosts, "logs")
        # Repaired hosts carry a position again: deltas after it apply once.
        d = self.start()
        for _ in range(60):
            self.change()
        self.converge()
        self.assertEqual(d.stop(), 0)
        backfill_restores_every_parent(self, self.db.hosts, "logs")

    def caught_up(self, d, events):
        # Every change so far applied (GET /applied: the lag gauge is set once a second, so a
        # gauge still 0 from before an event was read does not say it was applied).
        t = self.client.admin.command("ping")["operationTime"]
        wait_until(lambda: d.metric_sum("denormd_events_total", source=self.dbname + ".logmsgs") >= events
                   and d.get("/applied?after=%d:%d&timeout=4" % (t.time, t.inc))[0] == 200,
                   timeout=30, interval=0, message="the events applied")

    def test_one_parent_under_1_1L_and_1_0_in_one_batch_counts_every_child(self):
        self.create(hosts=2)
        self.assertEqual(self.cmd("backfill")[0], 0)
        d = self.start()
        self.assertEqual(d.stop(), 0)
        # Written while denormd is stopped: the next start reads all nine in one batch.
        keys = [1, Int64(1), 1.0]
        self.db.logmsgs.insert_many([{"_id": i, "hostId": keys[i % 3], "level": "info", "bytes": 10}
                                     for i in range(9)])
        d = self.start()
        self.caught_up(d, 9)
        logs = self.db.hosts.find_one({"_id": 1})["logs"]
        self.assertEqual((logs["count"], logs["bytes"]), (9, 90), logs)
        # A key that only changes type stays with its parent.
        self.db.logmsgs.update_one({"_id": 0}, {"$set": {"hostId": Int64(1)}})
        self.db.logmsgs.update_one({"_id": 1}, {"$set": {"hostId": 1.0}})
        self.caught_up(d, 11)
        logs = self.db.hosts.find_one({"_id": 1})["logs"]
        self.assertEqual((logs["count"], logs["bytes"]), (9, 90), logs)
        self.assertTrue(self.exact())

    def test_a_nan_or_infinite_child_that_goes_leaves_the_sum_of_the_others(self):
        self.create(hosts=2)
        self.assertEqual(self.cmd("backfill")[0], 0)
        d = self.start()
        self.db.logmsgs.insert_many([{"_id": i, "hostId": 1, "level": "info", "bytes": 10} for i in range(3)])
        for i, bad in enumerate([float("nan"), float("inf"), Decimal128("-Infinity")]):
            self.db.logmsgs.insert_one({"_id": 100 + i, "hostId": 1, "level": "info", "bytes": bad})
            self.db.logmsgs.insert_one({"_id": 200 + i, "hostId": 2, "level": "info", "bytes": bad})
        self.db.logmsgs.update_one({"_id": 200}, {"$set": {"bytes": 5}})
        self.caught_up(d, 10)
        self.db.logmsgs.delete_many({"_id": {"$in": [100, 101, 102, 201, 202]}})
        self.caught_up(d, 15)
        for host, (count, total) in {1: (3, 30), 2: (1, 5)}.items():
            wait_until(lambda: self.db.hosts.find_one({"_id": host})["logs"]["bytes"] == total,
                       timeout=30, message="host %d's bytes back to %d" % (host, total))
            logs = self.db.hosts.find_one({"_id": host})["logs"]
            self.assertEqual((logs["count"], logs["bytes"]), (count, total), logs)
        self.assertTrue(self.exact())

    def test_children_without_a_number_average_to_null_and_no_children_to_nothing(self):
        self.create(hosts=2)
        self.assertEqual(self.cmd("backfill")[0], 0)
        d = self.start()
        self.db.logmsgs.insert_one({"_id": 1, "hostId": 1, "level": "info", "bytes": "n/a"})
        self.caught_up(d, 1)
        logs = self.db.hosts.find_one({"_id": 1})["logs"]
        self.assertEqual((logs["count"], logs["bytes"], logs.get("avgBytes", MISSING)), (1, 0, None), logs)
        # A number that comes and goes leaves null again; the last child going leaves none.
        self.db.logmsgs.insert_one({"_id": 2, "hostId": 1, "level": "info", "bytes": 4})
        self.caught_up(d, 2)
        self.assertEqual(self.db.hosts.find_one({"_id": 1})["logs"]["avgBytes"], 4)
        self.db.logmsgs.delete_one({"_id": 2})
        self.caught_up(d, 3)
        self.assertIsNone(self.db.hosts.find_one({"_id": 1})["logs"].get("avgBytes", MISSING))
        self.db.logmsgs.delete_one({"_id": 1})
        self.caught_up(d, 4)
        self.assertNotIn("avgBytes", self.db.hosts.find_one({"_id": 1})["logs"])
        self.assertTrue(self.exact())
        self.assertEqual(d.stop(), 0)
        self.assertEqual(self.cmd("verify")[0], 0)

    def test_a_parent_the_application_writes_back_stale_is_recomputed(self):
        self.create(hosts=2)
        self.assertEqual(self.cmd("backfill")[0], 0)
        d = self.start()
        self.db.logmsgs.insert_many([{"_id": i, "hostId": 1, "level": "info", "bytes": 1} for i in range(5)])
        self.caught_up(d, 5)
        read = self.db.hosts.find_one({"_id": 1})
        self.assertEqual(read["logs"]["count"], 5)
        self.db.logmsgs.insert_many([{"_id": 10 + i, "hostId": 1, "level": "info", "bytes": 1} for i in range(3)])
        self.caught_up(d, 8)
        self.assertEqual(self.db.hosts.find_one({"_id": 1})["logs"]["count"], 8)
        # The application renames the host from what it read: the counts and position of then.
        self.db.hosts.replace_one({"_id": 1}, dict(read, name="renamed"))
        self.converge(timeout=30)
        host = self.db.hosts.find_one({"_id": 1})
        self.assertEqual((host["name"], host["logs"]["count"], host["logs"]["bytes"]), ("renamed", 8, 8))
        # And the deltas after it build on the right values.
        self.db.logmsgs.insert_one({"_id": 20, "hostId": 1, "level": "info", "bytes": 1})
        self.converge(timeout=30)
        self.assertEqual(self.db.hosts.find_one({"_id": 1})["logs"]["count"], 9)

    def test_without_fill_new_targets_it_is_refused_naming_the_file_and_field(self):
        self.create()
        m = dict(MAPPING, source=dict(MAPPING["source"], db=self.dbname),
                 target=dict(MAPPING["target"], db=self.dbname))
        del m["fillNewTargets"]
        self.mappings = mapping_folder(m)
        rc, out, err = self.cmd("check")
        self.assertEqual(rc, 2, out + err)
        self.assertIn("hosts-log-count.json: /fillNewTargets: must be true in incremental mode", err)
