"""A server that starts answering garbage: 16 bytes of 0xFF (a message length of -1) to every
request, on open connections and new ones.

libmongoc 1.23 aborts the process on it from its own monitoring thread (docs/operations.md,
"Known limits"); nothing denormd runs gets to see the bytes. What denormd guarantees is that
this costs nothing but the restart: the checkpoints stored before are intact, and the changes
made meanwhile are applied once a supervisor starts it again against a good server.
"""
import signal
import subprocess
import time
import unittest

from tests.integration.base import ShopTestCase
from tests.integration.harness import DENORMD, Proxy, emulator_only, wait_until
from tests.integration.seed import OPEN

# What libmongoc 1.23 prints before it aborts (docs/operations.md, "Known limits").
PRECONDITION = ("mongoc-buffer.c:190 _mongoc_buffer_append_from_stream(): precondition failed: "
                "(buffer->datalen + size) < INT_MAX")


@unittest.skipUnless(emulator_only(), "puts a proxy in front of its own test server")
class BadServerTest(ShopTestCase):
    def setUp(self):
        super().setUp()
        self.proxy = Proxy(self.emulator.host, self.emulator.port)

    def tearDown(self):
        self.proxy.stop()
        super().tearDown()

    def checkpoints(self):
        """{namespace: resume token (hex, ordered as the stream is)} as stored."""
        return {c["_id"]: c["token"]["_data"] for c in self.db.denormd_checkpoints.find()}

    def assert_not_behind(self, stored, before):
        self.assertEqual(set(stored), set(before), "a checkpoint was lost")
        for ns, token in before.items():
            self.assertGreaterEqual(stored[ns], token, "the checkpoint of %s went back" % ns)

    def test_a_server_that_starts_answering_garbage_costs_only_a_restart(self):
        self.shop.seed(customers=5, products=5, orders=20, hosts=2, logs=10, reviews=10)
        self.shop.fill_recent_arrays()
        d = self.daemon(self.proxy.uri)
        for _ in range(30):
            self.shop.random_change()
        self.converge()
        wait_until(lambda: len(self.checkpoints()) == 6, timeout=15, message="a checkpoint per source")
        before = self.checkpoints()

        self.proxy.answer_garbage()
        try:
            d.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.fail("denormd kept running for 30 s against the garbage (neither the documented abort nor "
                      "an exit):\n" + d.log()[-4000:])
        if d.proc.returncode == -signal.SIGABRT:
            # The documented outcome: libmongoc's precondition, reported on stderr, then abort().
            self.assertIn(PRECONDITION, d.log())
        else:
            # Not what docs/operations.md says: denormd handled the garbage itself (update the
            # "Known limits" section), but it must still have stopped cleanly.
            print("note: denormd exited with %s instead of libmongoc's abort" % d.proc.returncode)
            self.assertIn(d.proc.returncode, (0, 1), d.log()[-4000:])
        self.assertGreater(self.proxy.garbage_replies, 0)
        self.assert_not_behind(self.checkpoints(), before)

        # Started against the garbage, `run` and `verify` abort the same way (the reproduction
        # in docs/operations.md), and quickly.
        for command, extra in (("run", ["--metrics-addr", "127.0.0.1:0"]), ("verify", [])):
            try:
                p = subprocess.run([DENORMD, command, "--uri", self.proxy.uri, "--db", self.dbname,
                                    "--mappings", self.mappings, *extra], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, timeout=60)
            except subprocess.TimeoutExpired:
                self.fail("denormd %s kept running against the garbage" % command)
            self.assertEqual(p.returncode, -signal.SIGABRT, "%s:\n%s" % (command, p.stdout[-4000:]))
            self.assertIn(PRECONDITION, p.stdout, command)
        self.assert_not_behind(self.checkpoints(), before)

        # Changes made while down are applied by the next start against a good server, which
        # resumes from the stored checkpoints.
        customer = self.db.orders.find_one({"status": {"$in": list(OPEN)}})["customerId"]
        self.db.customers.update_one({"_id": customer}, {"$set": {"name": "while down"}})
        for _ in range(30):
            self.shop.random_change()
        self.assertTrue(self.shop.check(), "the changes should leave work for the restart")
        again = self.start()
        self.converge()
        self.assertGreaterEqual(again.metric_sum("denormd_resumes_total", reason="checkpoint"), 6)
        self.assertEqual(again.stop(), 0)


if __name__ == "__main__":
    unittest.main()
