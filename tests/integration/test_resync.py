"""A re-sync after lost history finishes while the oplog keeps rolling: the stream goes on from
the re-sync's start beside its backfill, so its place in the oplog is never older than what the
stream last read, however long the backfill takes."""
import os
import threading
import time
import unittest

from tests.integration.base import ShopTestCase
from tests.integration.harness import emulator_only, mapping_folder, wait_until

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



def orphan_mappings(db):
    """A copy into the order (onSourceDelete unset, with a where), a copy into each item (unset),
    a copy kept on delete, a recent array and a recomputed aggregate: what a re-sync or a
    backfill must leave in line after deletes it never saw."""
    return [
        {"name": "orders-customer", "kind": "copy", "source": {"db": db, "collection": "customers"},
         "target": {"db": db, "collection": "orders", "key": "customerId",
                    "where": {"status": {"$ne": "DELIVERED"}}},
         "into": "customer", "fields": {"name": "name", "city": "address.city"},
         "onSourceDelete": "unset"},
        {"name": "orders-items-product", "kind": "copy", "source": {"db": db, "collection": "products"},
         "target": {"db": db, "collection": "orders", "key": "productId", "array": "items"},
         "into": "product", "fields": {"title": "title"}, "onSourceDelete": "unset"},
        {"name": "invoices-customer", "kind": "copy", "source": {"db": db, "collection": "customers"},
         "target": {"db": db, "collection": "invoices", "key": "customerId"},
         "into": "customer", "fields": {"name": "name"}, "onSourceDelete": "keep"},
        {"name": "products-recent-reviews", "kind": "recent",
         "source": {"db": db, "collection": "reviews", "parentKey": "productId"},
         "target": {"db": db, "collection": "products"}, "into": "recentReviews",
         "fields": {"reviewId": "_id", "stars": "stars"}, "idField": "reviewId",
         "sort": {"stars": -1}, "limit": 5, "onSourceDelete": "pullAndRefill"},
        {"name": "products-rating", "kind": "aggregate",
         "source": {"db": db, "collection": "reviews", "parentKey": "productId"},
         "target": {"db": db, "collection": "products"}, "into": "rating",
         "fields": {"count": {"$count": {}}, "sum": {"$sum": "stars"}}},
    ]


def seed_orphans(db):
    db.customers.insert_many([{"_id": 1, "name": "Ann", "address": {"city": "Oslo"}},
                              {"_id": 2, "name": "Bo", "address": {"city": "Rome"}},
                              {"_id": 3, "name": "Cy", "address": {"city": "Kyiv"}}])
    db.products.insert_many([{"_id": 7, "title": "Lamp"}, {"_id": 8, "title": "Desk"}])
    db.reviews.insert_many([{"_id": 70, "productId": 7, "stars": 5}, {"_id": 71, "productId": 7, "stars": 3},
                            {"_id": 80, "productId": 8, "stars": 4}])
    db.orders.insert_many([
        {"_id": 1, "customerId": 1, "status": "PAID", "items": [{"productId": 7}, {"productId": 8}]},
        {"_id": 2, "customerId": 2, "status": "PAID", "items": []},
        # Outside the where: it keeps the snapshot it was delivered with.
        {"_id": 3, "customerId": 1, "status": "DELIVERED", "customer": {"name": "Ann", "city": "Oslo"}},
        {"_id": 4, "customerId": 3, "status": "PAID"},
        {"_id": 5, "customerId": 3, "status": "PAID"},
    ])
    db.invoices.insert_one({"_id": 1, "customerId": 1})


def delete_in_the_gap(db):
    """What happens while denormd cannot see it: sources and children deleted, a target
    re-keyed to a customer that does not exist."""
    db.customers.delete_one({"_id": 1})
    db.products.delete_one({"_id": 7})
    db.reviews.delete_one({"_id": 70})
    db.orders.update_one({"_id": 4}, {"$set": {"customerId": 99}})


@unittest.skipUnless(emulator_only(), "needs mongo-emulator --oplog-max-events")
class ResyncAfterDeletesTest(ShopTestCase):
    EMULATOR_ARGS = {"test_a_resync_unsets_the_copies_of_sources_deleted_while_history_was_lost":
                     ("--oplog-max-events", "100")}

    def settle(self, d):
        at = self.client.admin.command("ping")["operationTime"]
        status, body = d.get("/applied?after=%d:%d&timeout=10" % (at.time, at.inc))
        self.assertEqual(status, 200, body)

    def test_a_resync_unsets_the_copies_of_sources_deleted_while_history_was_lost(self):
        self.mappings = mapping_folder(*orphan_mappings(self.dbname))
        seed_orphans(self.db)
        d = self.start(auto_backfill=True)
        wait_until(lambda: self.db.orders.find_one({"_id": 1}).get("customer") is not None
                   and self.db.products.find_one({"_id": 8}).get("rating") is not None,
                   timeout=20, message="the first backfill")
        self.settle(d)
        self.assertEqual(d.stop(), 0)
        delete_in_the_gap(self.db)
        for _ in range(150):  # the stored positions fall off the oplog
            self.db.noise.update_one({"_id": 0}, {"$inc": {"n": 1}}, upsert=True)

        d = self.start()
        wait_until(lambda: "re-sync caught up" in d.log(), timeout=30, message="re-sync caught up")
        self.assertIn("change stream history lost", d.log())
        self.settle(d)
        orders = {o["_id"]: o for o in self.db.orders.find()}
        self.assertEqual(orders[1]["customer"], {})  # its customer was deleted: unset, as a delete does
        self.assertEqual(orders[1]["items"], [{"productId": 7, "product": {}}, {"productId": 8, "product": {"title": "Desk"}}])
        self.assertEqual(orders[2]["customer"], {"name": "Bo", "city": "Rome"})
        self.assertEqual(orders[3]["customer"], {"name": "Ann", "city": "Oslo"})  # outside the where
        self.assertEqual(orders[4]["customer"], {})  # re-keyed to a customer that does not exist
        self.assertEqual(orders[5]["customer"], {"name": "Cy", "city": "Kyiv"})
        self.assertEqual(self.db.invoices.find_one({"_id": 1})["customer"], {"name": "Ann"})  # keep
        product = self.db.products.find_one({"_id": 8})
        self.assertEqual(product["recentReviews"], [{"reviewId": 80, "stars": 4}])
        self.assertEqual(product["rating"], {"count": 1, "sum": 4})
        self.assertEqual(d.stop(), 0)
        rc, out, _ = self.cmd("verify")
        self.assertEqual(rc, 0, out)


class BackfillAfterDeletesTest(ShopTestCase):
    def test_backfill_unsets_the_copies_of_missing_sources_and_continues_where_it_stopped(self):
        self.mappings = mapping_folder(*orphan_mappings(self.dbname))
        seed_orphans(self.db)
        rc, out, err = self.cmd("backfill")
        self.assertEqual(rc, 0, out + err)
        # Copies written before the mapping changed to unset, for sources that are gone now.
        delete_in_the_gap(self.db)
        rc, out, _ = self.cmd("verify")
        self.assertEqual(rc, 3, out)
        rc, out, err = self.cmd("backfill")
        self.assertEqual(rc, 0, out + err)
        orders = {o["_id"]: o for o in self.db.orders.find()}
        self.assertEqual(orders[1]["customer"], {})
        self.assertEqual(orders[1]["items"], [{"productId": 7, "product": {}}, {"productId": 8, "product": {"title": "Desk"}}])
        self.assertEqual(orders[3]["customer"], {"name": "Ann", "city": "Oslo"})  # outside the where
        self.assertEqual(orders[4]["customer"], {})
        self.assertEqual(self.db.invoices.find_one({"_id": 1})["customer"], {"name": "Ann"})  # keep
        rc, out, _ = self.cmd("verify")
        self.assertEqual(rc, 0, out)
        self.assertIn("onSourceDelete \"keep\"", out)

        # Stopped in the targets' walk after order 2: a new run continues there.
        progress = self.db.denormd_backfill.find_one({"_id": "orders-customer"})
        self.assertEqual(progress.get("phase"), "targets")
        self.db.orders.update_many({"_id": {"$in": [1, 4]}}, {"$set": {"customer": {"name": "Old"}}})
        self.db.denormd_backfill.update_one({"_id": "orders-customer"},
                                            {"$set": {"done": False, "lastKey": 2}})
        rc, out, err = self.cmd("backfill", "--mapping", "orders-customer")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("continued after _id 2", out)
        self.assertEqual(self.db.orders.find_one({"_id": 1})["customer"], {"name": "Old"})  # before lastKey
        self.assertEqual(self.db.orders.find_one({"_id": 4})["customer"], {})
        progress = self.db.denormd_backfill.find_one({"_id": "orders-customer"})
        self.assertTrue(progress["done"])

if __name__ == "__main__":
    unittest.main()
