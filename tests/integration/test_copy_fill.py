"""A copy mapping's new and re-keyed targets (fillNewTargets) whose source does not exist, and a
`pull` recent array a delete left short, end to end: what `run` writes and what `verify` then
says agree (docs/running.md, "Backfill, verify, status")."""
import json

from tests.integration.base import ShopTestCase
from tests.integration.harness import mapping_folder, wait_until


def orders_customer(db, policy):
    return {"name": "orders-customer", "kind": "copy", "source": {"db": db, "collection": "customers"},
            "target": {"db": db, "collection": "orders", "key": "customerId",
                       "where": {"status": {"$ne": "CLOSED"}}},
            "into": "customer", "fields": {"name": "name"}, "onSourceDelete": policy,
            "fillNewTargets": True}


class CopyFillTest(ShopTestCase):
    DB_PREFIX = "fill_"

    def applied(self, d):
        t = self.client.admin.command("ping")["operationTime"]
        status, _ = d.get("/applied?after=%d:%d&timeout=10" % (t.time, t.inc))
        self.assertEqual(status, 200)

    def verify(self):
        rc, out, err = self.cmd("verify", "--json")
        self.assertIn(rc, (0, 3), err)
        return rc, json.loads(out)

    def rekey_to_missing(self, policy):
        self.mappings = mapping_folder(orders_customer(self.dbname, policy))
        for c in ("customers", "orders"):
            self.db.create_collection(c)
        self.db.orders.create_index("customerId")
        d = self.start()
        self.db.customers.insert_one({"_id": 1, "name": "Ann"})
        self.db.orders.insert_many([{"_id": 1, "customerId": 1, "status": "PAID"},
                                    {"_id": 2, "customerId": 1, "status": "PAID"}])
        wait_until(lambda: self.db.orders.count_documents({"customer.name": "Ann"}) == 2, timeout=20,
                   message="both orders hold Ann's copy")
        # Order 1 leaves the where, its customer goes, it comes back: a copy of its own source.
        self.db.orders.update_one({"_id": 1}, {"$set": {"status": "CLOSED"}})
        self.db.customers.delete_one({"_id": 1})
        self.db.orders.update_one({"_id": 1}, {"$set": {"status": "PAID"}})
        # Order 2 is re-keyed to a customer that does not exist: Ann's copy is no longer its own.
        self.db.orders.update_one({"_id": 2}, {"$set": {"customerId": 99}})
        self.applied(d)
        self.assertEqual(d.stop(), 0)
        return {o["_id"]: o.get("customer", {}).get("name") for o in self.db.orders.find()}

    def test_a_target_rekeyed_to_a_missing_source_loses_its_old_copy_under_unset(self):
        orders = self.rekey_to_missing("unset")
        self.assertEqual(orders, {1: None, 2: None})
        rc, report = self.verify()
        self.assertEqual((rc, report["drifted"]), (0, 0), report)

    def test_under_keep_only_a_target_that_held_its_own_source_keeps_the_copy(self):
        orders = self.rekey_to_missing("keep")
        self.assertEqual(orders, {1: "Ann", 2: None})
        rc, report = self.verify()
        self.assertEqual((rc, report["drifted"]), (0, 0), report)

    def test_a_fill_replayed_after_its_target_was_rekeyed_copies_nothing_of_the_old_source(self):
        """The soak's seed 7: an order inserted for customer 1 and replaced (not updated) to name
        customer 99, which does not exist, both applied after a restart. The insert's fill used to
        write customer 1's copy into the order by _id alone, and the replacement's fill, with no
        source and no pre-image to tell it was re-keyed, wrote nothing."""
        self.mappings = mapping_folder(orders_customer(self.dbname, "keep"))
        for c in ("customers", "orders"):
            self.db.create_collection(c)
        self.db.customers.insert_one({"_id": 1, "name": "Ann"})
        d = self.start()
        self.assertEqual(d.stop(), 0)
        self.db.orders.insert_one({"_id": 1, "customerId": 1, "status": "PAID"})
        self.db.orders.replace_one({"_id": 1}, {"customerId": 99, "status": "PAID"})
        self.db.orders.insert_one({"_id": 2, "customerId": 1, "status": "PAID"})
        d = self.start()
        wait_until(lambda: self.db.orders.find_one({"_id": 2}).get("customer") == {"name": "Ann"}, timeout=20,
                   message="order 2 filled")
        self.applied(d)
        self.assertNotIn("customer", self.db.orders.find_one({"_id": 1}))

    def test_verify_checks_of_a_pull_array_what_pull_keeps(self):
        db = self.dbname
        self.mappings = mapping_folder({
            "name": "products-top-reviews", "kind": "recent",
            "source": {"db": db, "collection": "reviews", "parentKey": "productId",
                       "filter": {"score": {"$gte": 2}}},
            "target": {"db": db, "collection": "products"}, "into": "topReviews",
            "fields": {"reviewId": "_id", "score": "score"}, "idField": "reviewId",
            "sort": {"score": -1}, "limit": 2, "onSourceDelete": "pull", "fillNewTargets": True})
        for c in ("products", "reviews"):
            self.db.create_collection(c)
        d = self.start()
        self.db.products.insert_many([{"_id": 1}, {"_id": 2}])
        self.db.reviews.insert_many([{"_id": 10, "productId": 1, "score": 5},
                                     {"_id": 11, "productId": 1, "score": 4},
                                     {"_id": 12, "productId": 1, "score": 3}])
        wait_until(lambda: len(self.db.products.find_one({"_id": 1}).get("topReviews", [])) == 2, timeout=20,
                   message="the top two")
        # pull takes the element out and does not refill: one element, while three children match.
        self.db.reviews.delete_one({"_id": 10})
        self.applied(d)
        self.assertEqual(d.stop(), 0)
        self.assertEqual(self.db.products.find_one({"_id": 1})["topReviews"], [{"reviewId": 11, "score": 4}])
        rc, report = self.verify()
        self.assertEqual((rc, report["drifted"]), (0, 0), report)
        # What pull keeps is still checked: a stale value, a child twice, one that is gone, the
        # wrong order, more than the limit.
        wrong = {1: [{"reviewId": 11, "score": 9}],
                 2: [{"reviewId": 11, "score": 4}, {"reviewId": 11, "score": 4}]}
        for pid, array in wrong.items():
            self.db.products.update_one({"_id": pid}, {"$set": {"topReviews": array}})
        self.db.reviews.update_one({"_id": 12}, {"$set": {"productId": 2}})
        rc, report = self.verify()
        self.assertEqual((rc, report["drifted"]), (3, 2), report)
        for array in ([{"reviewId": 10, "score": 5}], [{"reviewId": 11, "score": 4}, {"reviewId": 12, "score": 3}]):
            self.db.products.update_one({"_id": 2}, {"$set": {"topReviews": array}})
            self.db.products.update_one({"_id": 1}, {"$set": {"topReviews": []}})
            rc, report = self.verify()
            self.assertEqual((rc, report["drifted"]), (3, 1), (array, report))
        self.db.products.update_one({"_id": 2}, {"$set": {"topReviews": [{"reviewId": 12, "score": 3}]}})
        self.db.reviews.update_one({"_id": 11}, {"$set": {"productId": 2}})
        self.db.products.update_one({"_id": 2}, {"$set": {"topReviews": [{"reviewId": 12, "score": 3},
                                                                         {"reviewId": 11, "score": 4}]}})
        rc, report = self.verify()
        self.assertEqual((rc, report["drifted"]), (3, 1), report)  # out of order
        self.db.reviews.insert_one({"_id": 13, "productId": 2, "score": 2})
        self.db.products.update_one({"_id": 2}, {"$set": {"topReviews": [
            {"reviewId": 11, "score": 4}, {"reviewId": 12, "score": 3}, {"reviewId": 13, "score": 2}]}})
        rc, report = self.verify()
        self.assertEqual((rc, report["drifted"]), (3, 1), report)  # over the limit
        # --repair refills what drifted: then in line.
        self.assertEqual(self.cmd("verify", "--repair")[0], 3)
        rc, report = self.verify()
        self.assertEqual((rc, report["drifted"]), (0, 0), report)
