"""fillNewTargets closing the stale-snapshot race, and replay from a token or a time."""
import calendar
import datetime
import random
import time
import unittest

from tests.integration.base import ShopTestCase
from tests.integration.harness import emulator_only, wait_until, write_mappings
from tests.integration.shop import Shop


class ReplayTest(ShopTestCase):
    def setUp(self):
        super().setUp()
        self.shop = Shop(self.db, seed=3)

    def start(self, *extra, names=None):
        return super().start(*extra, mappings=write_mappings(self.dbname, names) if names else None)

    def test_an_order_written_with_a_stale_snapshot_during_a_rename_converges(self):
        self.shop.seed(customers=30, products=5, orders=20, hosts=1, logs=5, reviews=5)
        self.shop.fill_recent_arrays()
        self.start()
        for i in range(60):
            cid = 1 + i % 30
            seen = self.db.customers.find_one({"_id": cid})  # the application reads the customer...
            self.db.customers.update_one({"_id": cid}, {"$set": {"name": "Renamed %d" % i}})
            # ...and writes the order with what it read, after the rename committed.
            self.db.orders.insert_one({"_id": 5000 + i, "customerId": cid, "status": "NEW", "total": 1,
                                       "createdAt": self.shop._tick(), "items": [],
                                       "customer": {"name": seen["name"], "email": seen.get("email"),
                                                    "city": seen["address"]["city"]}})
        wait_until(self.shop.check, timeout=60, interval=0.25, message="every order's customer copy current")
        for i in range(60):
            order = self.db.orders.find_one({"_id": 5000 + i})
            current = self.db.customers.find_one({"_id": order["customerId"]})["name"]
            self.assertEqual(order["customer"]["name"], current)

    def test_start_at_replays_later_events_idempotently(self):
        self.shop.seed(customers=20, products=10, orders=40, hosts=2, logs=20, reviews=20)
        self.shop.fill_recent_arrays()
        d = self.start()
        time.sleep(1.1)  # cluster times have second resolution
        replay_from = datetime.datetime.utcnow().replace(microsecond=0)
        for _ in range(200):
            self.shop.random_change()
        wait_until(self.shop.check, timeout=60, interval=0.25, message="converged before the replay")
        self.assertEqual(d.stop(), 0)
        # Damage every copy the replayed events will rewrite.
        self.db.orders.update_many({}, {"$set": {"customer.name": "damaged"}})
        self.db.products.update_many({}, {"$set": {"recentReviews": []}})
        self.assertTrue(self.shop.check())
        kept = self.events_kept_since(calendar.timegm(replay_from.timetuple()))
        self.assertGreater(kept, 100)  # most of the 200 changes; the filters drop the rest
        d2 = self.start("--start-at", replay_from.strftime("%Y-%m-%dT%H:%M:%SZ"))
        self.assertGreaterEqual(d2.metric_sum("denormd_watcher_ready"), 1)
        # Replaying repairs what the events touch; a second replay of the same events is a no-op.
        wait_until(lambda: d2.metric_sum("denormd_events_total") >= kept, timeout=60, message="events replayed")
        wait_until(lambda: d2.metric_sum("denormd_lag_seconds") == 0, timeout=30, message="replay caught up")
        self.assertEqual(d2.stop(), 0)
        fixed = self.db.orders.count_documents({"customer.name": {"$ne": "damaged"}, "status": {"$ne": "DELIVERED"}})
        self.assertGreater(fixed, 0)

    def resume_after(self, changes_before_token):
        """Streams products into orders, makes `changes_before_token` (the last one's event is the
        token), retitles products 2 to 10, stops, damages every title copy and starts again
        after the token; returns the new denormd once 2 to 10 are replayed. One source only: a
        resume token belongs to one stream."""
        self.shop.seed(customers=5, products=10, orders=40, hosts=1, logs=5, reviews=5)
        d = self.start(names=["orders-items-product"])
        with self.db.products.watch() as stream:
            for update in changes_before_token:
                self.db.products.update_one({"_id": 1}, update)
            for _ in changes_before_token:
                token = stream.next()["_id"]
        for pid in range(2, 11):
            self.db.products.update_one({"_id": pid}, {"$set": {"title": "Title %d" % pid}})
        wait_until(lambda: self.db.orders.count_documents({"items.product.title": "Title 10"}) ==
                   self.db.orders.count_documents({"items.productId": 10}), message="applied")
        self.assertEqual(d.stop(), 0)
        self.db.orders.update_many({}, {"$set": {"items.$[].product.title": "damaged"}})
        d2 = self.start("--resume-after", '{"_data":"%s"}' % token["_data"], names=["orders-items-product"])
        for pid in range(2, 11):
            wait_until(lambda: self.db.orders.count_documents({"items": {"$elemMatch": {
                "productId": pid, "product.title": "damaged"}}}) == 0, message="product %d replayed" % pid)
        return d2

    def product_1_still_damaged(self):
        return self.db.orders.count_documents({"items": {"$elemMatch": {
            "productId": 1, "product.title": "damaged"}}}) > 0

    def test_resume_after_a_token_reapplies_the_later_events(self):
        d2 = self.resume_after([{"$set": {"title": "first"}}])
        # Product 1's event came at the token, not after it: its copies stay as damaged.
        self.assertTrue(self.product_1_still_damaged())
        self.assertEqual(d2.stop(), 0)

    def test_resume_after_a_token_of_an_event_the_filter_drops_resumes_without_a_resync(self):
        # The token names a price change, which no mapping reads and the stream's filter drops:
        # MongoDB cannot resume after an event its filter drops, so denormd starts at the
        # token's time behind a gate instead of re-syncing.
        d2 = self.resume_after([{"$set": {"title": "first"}}, {"$inc": {"price": 1}}])
        self.assertEqual(d2.stop(), 0)
        self.assertNotIn("re-sync", d2.log())
        # Product 1's title changed before the token: a re-sync would have repaired it.
        self.assertTrue(self.product_1_still_damaged())


@unittest.skipUnless(emulator_only(), "needs mongo-emulator --oplog-max-events and failCommand")
class LostHistoryTest(ShopTestCase):
    """Stop denormd, change the sources beyond the history the server keeps, start it again."""

    EMULATOR_ARGS = {"test_lost_history_is_resynced_and_nothing_is_skipped": ("--oplog-max-events", "300"),
                     "test_new_orders_keep_no_stale_customer_when_writes_are_delayed_and_history_is_lost":
                     ("--oplog-max-events", "50")}

    def test_lost_history_is_resynced_and_nothing_is_skipped(self):
        shop = self.shop = Shop(self.db, seed=11)
        shop.seed(customers=20, products=10, orders=60, hosts=2, logs=30, reviews=30)
        shop.fill_recent_arrays()
        d = self.start()
        for _ in range(50):
            shop.random_change()
        wait_until(shop.check, timeout=60, interval=0.25, message="converged before the outage")
        self.assertEqual(d.stop(), 0)
        for _ in range(800):  # far more than the 300 events the server keeps
            shop.random_change()
        self.assertTrue(shop.check())
        d2 = self.daemon(self.uri, ready=False)
        wait_until(shop.check, timeout=90, interval=0.25, message="converged after the re-sync")
        self.assertGreaterEqual(d2.metric_sum("denormd_history_lost_total"), 1)
        self.assertGreaterEqual(d2.metric_sum("denormd_backfill_documents_total"), 1)
        self.assertIn("re-sync", d2.log())
        # It streams again afterwards: a later change still arrives.
        wait_until(lambda: d2.get("/readyz")[0] == 200, timeout=30, message="ready after the re-sync")
        for _ in range(30):
            shop.random_change()
        wait_until(shop.check, timeout=60, interval=0.25, message="converged after more changes")
        self.assertEqual(d2.stop(), 0)

    def test_new_orders_keep_no_stale_customer_when_writes_are_delayed_and_history_is_lost(self):
        # A new order is filled from its customer by the orders stream, while the customers
        # stream writes the same copy when the customer changes. A fill (or a re-sync's
        # backfill) that read the customer before a change must not land after that change's
        # copy and win. Holding one of denormd's writes on the server opens that window.
        client, db = self.client, self.db
        shop = self.shop = Shop(db, seed=5)
        shop.seed(customers=10, products=5, orders=20, hosts=2, logs=10, reviews=10)
        # orders is watched only as the fillNewTargets target of orders-customer.
        d = self.start(mappings=write_mappings(self.dbname, ["orders-customer"]))

        def hold_writes(mode, ms):
            client.admin.command({"configureFailPoint": "failCommand", "mode": mode,
                                  "data": {"failCommands": ["update"], "blockConnection": True,
                                           "blockTimeMS": ms, "appName": "denormd"}})

        def new_customer_and_order(cid):
            db.customers.insert_one({"_id": cid, "name": "Customer %d" % cid,
                                     "email": "old%d@example.com" % cid, "address": {"city": "Oslo"}})
            db.orders.insert_one({"_id": 100 * cid, "customerId": cid, "status": "NEW", "total": 1,
                                  "createdAt": shop._tick(), "items": [],
                                  "customer": {"name": "Customer %d" % cid,
                                               "email": "old%d@example.com" % cid, "city": "Oslo"}})

        def stale():
            return [x for x in shop.check() if x[0] == "orders-customer"]

        def renamed(cid):
            db.customers.update_one({"_id": cid}, {"$set": {"email": "new%d@example.com" % cid}})

        # The order's fill reads the customer, then its write is held; meanwhile the
        # customer changes and the customers stream writes the new copy first.
        for cid in range(1000, 1004):
            db.customers.insert_one({"_id": cid, "name": "Customer %d" % cid,
                                     "email": "old%d@example.com" % cid, "address": {"city": "Oslo"}})
            time.sleep(0.5)  # applied and checkpointed: denormd's next write is the fill's
            hold_writes({"times": 1}, 500)
            db.orders.insert_one({"_id": 100 * cid, "customerId": cid, "status": "NEW", "total": 1,
                                  "createdAt": shop._tick(), "items": [],
                                  "customer": {"name": "Customer %d" % cid,
                                               "email": "old%d@example.com" % cid, "city": "Oslo"}})
            time.sleep(0.15)
            renamed(cid)
            time.sleep(0.5)

        wait_until(stale, timeout=10, interval=0.25, message="the held fills' orders current")
        self.assertGreater(d.metric_sum("denormd_events_total", source=self.dbname + ".orders"), 0)

        # The same, less choreographed, with the history lost now and then: every stream
        # re-syncs (backfills) while customers keep changing.
        rng = random.Random(5)
        hold_writes({"activationProbability": 0.5}, 50)
        for cid in range(2000, 2030):
            new_customer_and_order(cid)
            time.sleep(rng.random() * 0.1)
            renamed(cid)
            time.sleep(0.1)
            if cid % 10 == 2:  # one command, more changes than the server keeps
                db.noise.insert_many([{"n": i} for i in range(60)])
        hold_writes("off", 0)
        wait_until(stale, timeout=30, interval=0.25, message="every open order's customer current")
        self.assertGreaterEqual(d.metric_sum("denormd_history_lost_total"), 1)
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
