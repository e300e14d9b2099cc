"""A re-sync after lost history finishes while the oplog keeps rolling: the stream goes on from
the re-sync's start beside its backfill, so its place in the oplog is never older than what the
stream last read, however long the backfill takes."""
import os
import threading
import time
import unittest

from tests.integration.base import ShopTestCase
from tests.integration.harness import emulator_only, wait_until

OPLOG = 4000  # entries the test server keeps


@unittest.skipUnless(emulator_only(), "needs mongo-emulator --oplog-max-events")
class ResyncWhileRollingTest(ShopTestCase):
    EMULATOR_ARGS = {"test_a_resync_finishes_while_the_oplog_keeps_rolling": ("--oplog-max-events", str(OPLOG))}

    def test_a_resync_finishes_while_the_oplog_keeps_rolling(self):
        # 15,000 customers: the re-syncs' backfills take seconds, while the writer below rolls
        # the whole oplog over in about one. A re-sync that streamed only after its backfill
        # would find its start time gone every time (and did, before this design). Under the
        # sanitizers everything runs ~10x slower: 2,000 customers still take tens of seconds.
        customers = 2000 if os.environ.get("DENORMD_SANITIZED") == "1" else 15000
        self.shop.seed(customers=customers, products=30, orders=2000, hosts=2, logs=60, reviews=60)
        self.shop.fill_recent_arrays()
        d = self.start()
        self.assertEqual(d.stop(), 0)
        for _ in range(2 * OPLOG // 50):  # the stored positions fall off the oplog
            self.db.noise.insert_many([{"n": i} for i in range(50)])

        stop = threading.Event()
        rolled = [0]

        def roll():  # shop changes and ~2,500 other writes a second, for at most 90 s
            ends = time.time() + 90
            while not stop.is_set() and time.time() < ends:
                self.shop.random_change()
                self.db.noise.insert_many([{"n": i} for i in range(50)])
                rolled[0] += 51
                time.sleep(0.02)

        writer = threading.Thread(target=roll)
        writer.start()
        try:
            d = self.daemon(self.uri, ready=False)
            wait_until(lambda: "change stream history lost" in d.log(), timeout=30, message="history lost")
            began = rolled[0]
            wait_until(lambda: d.get("/readyz")[0] == 200, timeout=75, interval=0.25,
                       message="ready while the oplog keeps rolling")
            self.assertTrue(writer.is_alive(), "the writer stopped before the re-syncs caught up")
            self.assertIn("re-sync caught up; streaming again", d.log())
            # Well past one oplog's worth of writes since the loss: the re-syncs had to outlast it.
            self.assertGreater(rolled[0] - began, OPLOG)
        finally:
            stop.set()
            writer.join()
        wait_until(self.shop.check, timeout=90, interval=0.5, message="converged")
        log = d.log()
        self.assertEqual(log.count("change stream history lost"), log.count("re-sync caught up; streaming again"))
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
