"""A server that answers every request with 16 bytes of 0xFF (a message length of -1).

libmongoc 1.23 aborts the process on it from its own monitoring thread (docs/operations.md,
"Known limits"); nothing denormd runs gets to see the bytes. What denormd guarantees is that
this costs nothing but the restart: the stored checkpoint is untouched and a change made
meanwhile is applied once a supervisor starts it again against a good server.
"""
import json
import socket
import subprocess
import threading
import time
import unittest

from tests.integration.base import ShopTestCase
from tests.integration.harness import DENORMD
from tests.integration.seed import OPEN


class FFServer:
    """Accepts connections on 127.0.0.1 and answers whatever arrives with 16 bytes of 0xFF."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.uri = "mongodb://127.0.0.1:%d/?serverSelectionTimeoutMS=5000" % self.port
        self.requests = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        with conn:
            conn.settimeout(30)
            try:
                while conn.recv(65536):
                    self.requests += 1
                    conn.sendall(b"\xff" * 16)
            except OSError:
                pass

    def stop(self):
        self.sock.close()


class BadServerTest(ShopTestCase):
    def setUp(self):
        super().setUp()
        self.bad = FFServer()

    def tearDown(self):
        self.bad.stop()
        super().tearDown()

    def checkpoints(self):
        return {c["_id"]: json.dumps(c["token"], default=str)
                for c in self.db.denormd_checkpoints.find()}

    def test_the_driver_abort_costs_only_a_restart(self):
        self.shop.seed(customers=5, products=5, orders=20, hosts=2, logs=10, reviews=10)
        self.shop.fill_recent_arrays()
        # A customer with an open order, so that a change of its name leaves work behind.
        customer = self.db.orders.find_one({"status": {"$in": list(OPEN)}})["customerId"]
        good = self.start()
        self.db.customers.update_one({"_id": customer}, {"$set": {"name": "before"}})
        self.converge()
        self.assertEqual(good.stop(), 0)
        stored = self.checkpoints()
        self.assertEqual(len(stored), 6)

        # Against the bad server both `run` and `verify` end abnormally, quickly.
        for command, extra in (("run", ["--metrics-addr", "127.0.0.1:0"]), ("verify", [])):
            try:
                p = subprocess.run([DENORMD, command, "--uri", self.bad.uri, "--db", self.dbname,
                                    "--mappings", self.mappings, *extra], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, timeout=60)
            except subprocess.TimeoutExpired:
                self.fail("denormd %s kept running against the 0xFF server" % command)
            self.assertNotEqual(p.returncode, 0, "%s:\n%s" % (command, p.stdout[-4000:]))
        self.assertGreater(self.bad.requests, 0, "the bad server was never asked anything")

        # Nothing was stored or lost meanwhile; a change made while down is applied on restart.
        self.assertEqual(self.checkpoints(), stored)
        self.db.customers.update_one({"_id": customer}, {"$set": {"name": "while down"}})
        self.assertTrue(self.shop.check(), "the change should leave work for the restart")
        started = time.time()
        again = self.start()
        self.converge()
        self.assertGreaterEqual(again.metric_sum("denormd_resumes_total", reason="checkpoint"), 1)
        self.assertLess(time.time() - started, 60)
        self.assertEqual(again.stop(), 0)


if __name__ == "__main__":
    unittest.main()
