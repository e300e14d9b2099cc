"""History headroom end to end: denormd_history_headroom_seconds is how far the oldest oplog
entry the server keeps is behind each source's stored checkpoint; it shrinks as writes push old
entries out, `denormd status` prints it, and a server that refuses the oplog read (13) leaves
the gauge absent with one warning while the streams go on."""
import json
import re
import time
import unittest

from tests.integration.base import ShopTestCase
from tests.integration.harness import emulator_only, wait_until

SOURCES = ["customers", "products", "hosts", "reviews", "logmsgs", "orders"]
KEPT = 300  # --oplog-max-events


@unittest.skipUnless(emulator_only(), "needs mongo-emulator --oplog-max-events")
class HeadroomTest(ShopTestCase):
    DB_PREFIX = "headroom_"
    EMULATOR_ARGS = {"test_headroom_is_exported_shrinks_as_history_rolls_on_and_status_prints_it":
                     ("--oplog-max-events", str(KEPT))}

    def headroom(self, d):
        """{source: seconds} of the gauge."""
        return {dict(labels)["source"]: v for (name, labels), v in d.metrics().items()
                if name == "denormd_history_headroom_seconds"}

    def every_source(self, values):
        return set(values) == {"%s.%s" % (self.dbname, s) for s in SOURCES}

    def test_headroom_is_exported_shrinks_as_history_rolls_on_and_status_prints_it(self):
        self.shop.seed(customers=5, products=5, orders=10, hosts=2, logs=10, reviews=10)
        oldest = next(self.client.local["oplog.rs"].find({}, {"ts": 1}).sort("$natural", 1).limit(1))["ts"]
        time.sleep(10)  # the oldest kept entry ages: the checkpoints will be this far ahead of it
        d = self.start("--headroom-interval-ms", "200")
        wait_until(lambda: self.every_source(self.headroom(d)) and min(self.headroom(d).values()) >= 10,
                   timeout=20, message="a headroom of at least 10 s for every source")
        before = self.headroom(d)
        for source, seconds in before.items():
            # Nothing was written since the seed: a checkpoint is at most now.
            self.assertLessEqual(seconds, time.time() - oldest.time + 1, source)

        # Writes push the seed's entries out, a quarter of what the server keeps at a time, so
        # that the streams' positions (moved on once a second while quiet) stay in it.
        for n in range(6):
            self.db.noise.insert_many([{"_id": n * 1000 + i} for i in range(KEPT // 4)])
            time.sleep(1.2)
        wait_until(lambda: self.every_source(self.headroom(d)) and 0 <= min(self.headroom(d).values())
                   and max(self.headroom(d).values()) <= 7,
                   timeout=20, message="the headroom down to the last few seconds of writes")
        after = self.headroom(d)
        for source in before:
            self.assertLess(after[source], before[source], source)
        self.assertEqual(d.metric_sum("denormd_history_lost_total"), 0)
        self.assertNotIn("local.oplog.rs", d.log())  # read without a complaint

        # status prints it per checkpoint, as text and as JSON.
        rc, out, err = self.cmd("status")
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(re.findall(r"(?m)^  history headroom \d+s \(until the oldest entry the server "
                                        r"keeps passes the checkpoint\)$", out)), len(SOURCES), out)
        rc, out, err = self.cmd("status", "--json")
        self.assertEqual(rc, 0, err)
        for s in json.loads(out)["sources"]:
            self.assertGreaterEqual(s["headroomSeconds"], 0, s)
            self.assertLess(s["headroomSeconds"], 60, s)
        self.assertEqual(d.stop(), 0)

    def test_a_refused_oplog_read_is_logged_once_and_leaves_the_gauge_absent(self):
        self.shop.seed(customers=5, products=5, orders=10, hosts=2, logs=10, reviews=10)
        d = self.start("--headroom-interval-ms", "100")
        wait_until(lambda: self.every_source(self.headroom(d)), timeout=20, message="a headroom for every source")
        # As a user without the find privilege on local.oplog.rs sees it.
        self.fail_point(mode="alwaysOn", failCommands=["find"], errorCode=13, namespace="local.oplog.rs")
        wait_until(lambda: self.headroom(d) == {}, timeout=10, message="the gauge gone")
        time.sleep(1)  # ten more refused reads
        log = d.log()
        self.assertEqual(log.count("lacks the find privilege on local.oplog.rs"), 1, log[-4000:])
        self.assertGreaterEqual(d.metric_sum("denormd_errors_total", stage="headroom", code="13"), 5)
        # The streams go on.
        self.assertEqual(d.get("/readyz")[0], 200)
        self.shop.fill_recent_arrays()
        for _ in range(20):
            self.shop.random_change()
        self.converge()
        rc, out, err = self.cmd("status")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.count("history headroom unknown: cannot read the oldest entry of local.oplog.rs: "
                                   "the user lacks the find privilege"), len(SOURCES), out)
        # Granted again: the gauge comes back, and the log says so once.
        self.client.admin.command({"configureFailPoint": "failCommand", "mode": "off"})
        wait_until(lambda: self.every_source(self.headroom(d)), timeout=10, message="the gauge back")
        self.assertEqual(d.log().count("readable again"), 1)
        self.assertEqual(d.stop(), 0)
