"""Read-your-writes through the copies: GET /applied answers once every change up to an
operation time is applied (and its writes acknowledged) for one mapping or all of them, and
denormd_applied_through_seconds follows."""
from tests.integration.base import ShopTestCase
from tests.integration.harness import wait_until

OPEN = {"status": {"$nin": ["DELIVERED", "CANCELLED"]}}


class AppliedTest(ShopTestCase):
    def test_get_applied_answers_once_the_copies_show_a_write(self):
        self.shop.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        d = self.start()
        order = self.db.orders.find_one(OPEN)
        for n in range(6):
            name = "Read Your Writes %d" % n
            with self.client.start_session() as s:
                self.db.customers.update_one({"_id": order["customerId"]}, {"$set": {"name": name}}, session=s)
                at = s.operation_time
            self.assertIsNotNone(at, "the server reports no operationTime")
            mapping = "orders-customer" if n % 2 else ""  # one mapping, or every one
            status, body = d.get("/applied?after=%d:%d&mapping=%s&timeout=4" % (at.time, at.inc, mapping))
            self.assertEqual(status, 200, body)
            # No polling: once answered, the copy shows the write.
            self.assertEqual(self.db.orders.find_one({"_id": order["_id"]})["customer"]["name"], name)
        # The gauge is refreshed once a second.
        wait_until(lambda: d.metric_sum("denormd_applied_through_seconds", mapping="orders-customer") >= at.time,
                   timeout=5, message="the applied-through gauge at the last write")
        status, body = d.get("/applied?after=%d&timeout=0.2" % (at.time + 3600))
        self.assertEqual(status, 408, body)
        self.assertIn("not applied through %d:0 in time" % (at.time + 3600), body)
        self.assertEqual(d.get("/applied?after=1&mapping=nope")[0], 404)
        status, body = d.get("/applied?mapping=orders-customer")
        self.assertEqual((status, body), (400, "missing after=T[:I], the operation time to wait for\n"))
        self.assertEqual(d.stop(), 0)
