"""The write fence without --ha: no write sent by a process that has since stopped may land
after a write of the process that replaced it (docs/architecture.md, "The write fence")."""
import os
import signal
import subprocess
import time
import unittest

from tests.integration.base import ShopTestCase
from tests.integration.harness import DENORMD, emulator_only, wait_until
from tests.integration.seed import OPEN


class FenceTest(ShopTestCase):
    DB_PREFIX = "fence_"

    def open_orders_of_a_customer(self):
        customer = self.db.orders.find_one({"status": {"$in": OPEN}})["customerId"]
        selector = {"customerId": customer, "status": {"$in": OPEN}}
        return customer, lambda: {o["customer"]["name"] for o in self.db.orders.find(selector)}

    def hold_the_next_orders_update(self, held_ms):
        self.fail_point(failCommands=["update"], blockConnection=True, blockTimeMS=held_ms,
                        appName="denormd", namespace=self.dbname + ".orders")

    def rename_read_by(self, d, customer, name):
        source = self.dbname + ".customers"
        read_before = d.metric_sum("denormd_events_total", source=source)
        self.db.customers.update_one({"_id": customer}, {"$set": {"name": name}})
        wait_until(lambda: d.metric_sum("denormd_events_total", source=source) > read_before,
                   timeout=10, interval=0.02, message="the rename read")
        time.sleep(0.5)  # its write is sent, and held by the server

    @unittest.skipUnless(emulator_only(), "holds a write with a fail point of the test server")
    def test_a_killed_processes_held_write_does_not_land_after_its_successors(self):
        """denormd sends a rename's update, the server holds it (a lock wait, a slow disk: here a
        fail point) and denormd is killed meanwhile. Its successor starts, applies a newer rename;
        then the server runs the held update. It must not land: every open order shows the
        newest name. (Before the fence, without --ha, it did: a stale copy until the customer
        changed again.)"""
        self.shop.seed()
        self.shop.fill_recent_arrays()
        d1 = self.start()
        self.converge()
        customer, names = self.open_orders_of_a_customer()
        held_ms = 6000
        self.hold_the_next_orders_update(held_ms)
        sent_at = time.time()
        self.rename_read_by(d1, customer, "Old Name")
        d1.kill9()
        # Off, so that none of the successor's writes is held; the killed process's was.
        fired = self.client.admin.command({"configureFailPoint": "failCommand", "mode": "off"})
        self.assertEqual(fired.get("count"), 1, "the killed process's update was not the one held")
        d2 = self.start()
        self.db.customers.update_one({"_id": customer}, {"$set": {"name": "Newest Name"}})
        wait_until(lambda: names() == {"Newest Name"}, timeout=10, message="the successor applied the newest name")
        self.assertLess(time.time() - sent_at, held_ms / 1000, "the held write ran before the successor's")
        # The server runs the held update now.
        time.sleep(held_ms / 1000 - (time.time() - sent_at) + 1)
        self.assertEqual(names(), {"Newest Name"}, "the killed process's held write landed after its successor's")
        self.converge()
        self.assertEqual(d2.stop(), 0)

    @unittest.skipUnless(emulator_only(), "holds a write with a fail point of the test server")
    def test_a_paused_process_replaced_by_another_stops_when_it_wakes(self):
        """A process paused (SIGSTOP, a frozen VM) while another denormd took its place: when it
        wakes, its late write is refused by the fence, and it stops (exit 1) instead of writing
        older values over its successor's. The successor keeps everything exact."""
        self.shop.seed()
        self.shop.fill_recent_arrays()
        d1 = self.start()
        self.converge()
        customer, names = self.open_orders_of_a_customer()
        self.hold_the_next_orders_update(3000)
        self.rename_read_by(d1, customer, "Old Name")
        os.kill(d1.proc.pid, signal.SIGSTOP)
        try:
            self.client.admin.command({"configureFailPoint": "failCommand", "mode": "off"})
            d2 = self.start()
            self.db.customers.update_one({"_id": customer}, {"$set": {"name": "Newest Name"}})
            wait_until(lambda: names() == {"Newest Name"}, timeout=10, message="the successor applied it")
        finally:
            os.kill(d1.proc.pid, signal.SIGCONT)
        d1.proc.wait(30)
        self.assertEqual(d1.proc.returncode, 1, d1.log()[-3000:])
        self.assertIn("another denormd has taken over writing a namespace", d1.log())
        time.sleep(3.5)  # past the hold
        self.assertEqual(names(), {"Newest Name"})
        self.converge()
        self.assertEqual(d2.stop(), 0)

    def test_each_start_claims_the_namespaces_and_records_its_writer(self):
        """Each process run claims every namespace it writes (the checkpoint's epoch goes up by
        one) and records the session its transactions commit on, which `status` shows."""
        self.shop.seed()
        self.shop.fill_recent_arrays()
        d = self.start()
        self.converge()
        key = self.dbname + ".customers"
        first = self.db.denormd_checkpoints.find_one({"_id": key})
        self.assertIn("writer", first)
        self.assertEqual(d.stop(), 0)
        d = self.start()
        self.converge()
        second = self.db.denormd_checkpoints.find_one({"_id": key})
        self.assertEqual(second["leaseEpoch"], first["leaseEpoch"] + 1)
        self.assertNotEqual(second["writer"]["process"], first["writer"]["process"])
        self.assertEqual(d.stop(), 0)
        r = subprocess.run([DENORMD, "status", "--uri", self.uri, "--db", self.dbname, "--mappings",
                            self.mappings], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("writer: " + second["writer"]["process"], r.stdout)


if __name__ == "__main__":
    unittest.main()
