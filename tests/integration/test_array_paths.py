"""A where or filter through an array (`items.status`, `items.qty`) end to end: a positional
`$set` (`items.1.status`), a `$push` or a `$[id]` update that makes an order newly match, and a
`$pull` or `$pop` that makes it leave, reach every consumer: the copy filling new targets, the
recent array, and the aggregate in both modes. The change events name the elements by index
(`items.1.status`, `items.2`), which the server-side filter and the planner must both read as
touching `items.status`."""
import datetime

from tests.integration.base import ShopTestCase
from tests.integration.harness import mapping_folder, wait_until

CUSTOMERS = (1, 2, 3)


def on(db, m):
    return dict(m, source=dict(m["source"], db=db), target=dict(m["target"], db=db))


COPY = {
    "name": "orders-customer", "kind": "copy",
    "source": {"collection": "customers"},
    "target": {"collection": "orders", "key": "customerId", "where": {"items.status": "PAID"}},
    "into": "customer", "fields": {"name": "name"}, "fillNewTargets": True,
}
RECENT = {
    "name": "customers-recent-paid", "kind": "recent",
    "source": {"collection": "orders", "parentKey": "customerId", "filter": {"items.status": "PAID"}},
    "target": {"collection": "customers"},
    "into": "recentPaid", "fields": {"orderId": "_id", "at": "createdAt"}, "idField": "orderId",
    "sort": {"at": -1}, "limit": 5,
}
AGGREGATE = {
    "name": "customers-big-orders", "kind": "aggregate", "mode": "recompute",
    "source": {"collection": "orders", "parentKey": "customerId", "filter": {"items.qty": {"$gte": 5}}},
    "target": {"collection": "customers"},
    "into": "bigOrders", "fields": {"count": {"$count": {}}},
}


class ArrayPathsTest(ShopTestCase):
    def run_scenario(self, mapping, field, value, exact):
        """Orders that do not match, a backfill, denormd, then each update through the array;
        after each, `exact()` must hold."""
        for name in ("customers", "orders"):
            self.db.create_collection(name, changeStreamPreAndPostImages={"enabled": True})
        self.db.customers.insert_many([{"_id": c, "name": "c%d" % c} for c in CUSTOMERS])
        other = "OPEN" if field == "status" else 1
        start = datetime.datetime(2024, 1, 1)
        self.db.orders.insert_many([
            {"_id": c, "customerId": c, "createdAt": start + datetime.timedelta(days=c),
             "items": [{"sku": "a", field: other}, {"sku": "b", field: other}]}
            for c in CUSTOMERS])
        self.mappings = mapping_folder(on(self.dbname, mapping))
        rc, out, err = self.cmd("backfill")
        self.assertEqual(rc, 0, out + err)
        self.assertTrue(exact())
        self.start()
        steps = [
            ("positional $set", 1, {"$set": {"items.1." + field: value}}),
            ("$push", 2, {"$push": {"items": {"sku": "c", field: value}}}),
            ("$[id]", 3, {"$set": {"items.$[x]." + field: value}}, [{"x.sku": "b"}]),
            ("$pull", 1, {"$pull": {"items": {field: value}}}),
            ("$pop", 2, {"$pop": {"items": 1}}),
        ]
        for name, order, update, *filters in steps:
            self.db.orders.update_one({"_id": order}, update, array_filters=filters[0] if filters else None)
            wait_until(exact, timeout=15, interval=0.2, message="consumer exact after " + name)

    def matching(self, customer, predicate):
        return [o for o in self.db.orders.find({"customerId": customer}, sort=[("createdAt", -1)])
                if any(predicate(i) for i in o["items"])]

    def test_a_copy_fills_an_order_that_an_update_through_its_items_brings_into_where(self):
        def exact():
            # An order that leaves `where` keeps its snapshot; one in it has the copy.
            return all(o.get("customer") == {"name": "c%d" % o["customerId"]}
                       for c in CUSTOMERS for o in self.matching(c, lambda i: i.get("status") == "PAID"))
        self.run_scenario(COPY, "status", "PAID", exact)
        self.assertEqual(self.db.orders.count_documents({"customer.name": {"$exists": True}}), 3)

    def test_a_recent_array_follows_updates_through_the_items_of_its_children(self):
        def exact():
            for c in CUSTOMERS:
                want = [o["_id"] for o in self.matching(c, lambda i: i.get("status") == "PAID")]
                got = [e["orderId"] for e in self.db.customers.find_one({"_id": c}).get("recentPaid", [])]
                if got != want:
                    return False
            return True
        self.run_scenario(RECENT, "status", "PAID", exact)

    def aggregate_exact(self):
        for c in CUSTOMERS:
            want = len(self.matching(c, lambda i: i.get("qty", 0) >= 5))
            if (self.db.customers.find_one({"_id": c}).get("bigOrders") or {}).get("count", 0) != want:
                return False
        return True

    def test_a_recomputed_aggregate_counts_an_order_that_an_update_through_its_items_brings_in(self):
        self.run_scenario(AGGREGATE, "qty", 7, self.aggregate_exact)
        rc, out, err = self.cmd("verify")
        self.assertEqual(rc, 0, out + err)

    def test_an_incremental_aggregate_counts_an_order_that_an_update_through_its_items_brings_in(self):
        self.run_scenario(dict(AGGREGATE, mode="incremental", fillNewTargets=True), "qty", 7, self.aggregate_exact)
        rc, out, err = self.cmd("verify")
        self.assertEqual(rc, 0, out + err)
