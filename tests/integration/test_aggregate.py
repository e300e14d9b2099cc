"""The aggregate kind (computed pattern) end to end: products keep the count, sum, average,
extremes and newest date of their visible reviews, exact after every kind of change, a
kill -9, a replay, lost pre-images, and repaired by verify and backfill."""
import calendar
import datetime
import json
import random
import threading
import time

from bson.decimal128 import Decimal128
from bson.int64 import Int64

from tests.integration.base import ShopTestCase
from tests.integration.harness import mapping_folder, wait_until

MAPPING = {
    "name": "products-rating", "kind": "aggregate",
    "source": {"collection": "reviews", "parentKey": "productId", "filter": {"hidden": {"$ne": True}}},
    "target": {"collection": "products"},
    "into": "rating",
    "fields": {"count": {"$count": {}}, "sum": {"$sum": "stars"}, "avg": {"$avg": "stars"},
               "min": {"$min": "stars"}, "max": {"$max": "stars"}, "latest": {"$max": "createdAt"}},
    "fillNewTargets": True,
}
NAMES = ("count", "sum", "avg", "min", "max", "latest")
PRODUCTS = 12


def kill9_mid_workload_then_restart(case, insert_children):
    """Shared by both modes: a kill -9 while children change, more changes while denormd is
    down, a restart, and every parent exact."""
    case.create()
    insert_children(100)
    case.assertEqual(case.cmd("backfill")[0], 0)
    d = case.start()
    stop = threading.Event()

    def work():
        while not stop.is_set():
            case.change()

    t = threading.Thread(target=work)
    t.start()
    time.sleep(1.5)
    d.kill9()
    time.sleep(0.5)
    stop.set()
    t.join()
    for _ in range(100):
        case.change()
    case.start()
    case.converge()


def verify_finds_drift_and_repair_fixes_it(case, insert_children, parents, into):
    """Shared by both modes: two parents drift (a count off by one, the values gone); verify
    reports exactly them and --repair makes every parent exact."""
    case.create()
    insert_children(80)
    case.assertEqual(case.cmd("backfill")[0], 0)
    case.assertTrue(case.exact())
    parents.update_one({"_id": 2}, {"$inc": {into + ".count": 1}})
    parents.update_one({"_id": 5}, {"$unset": {into: ""}})
    rc, out, err = case.cmd("verify", "--json")
    case.assertEqual(rc, 3, out + err)
    case.assertEqual(json.loads(out)["drifted"], 2)
    rc, out, err = case.cmd("verify", "--repair", "--json")
    case.assertEqual(rc, 3, out + err)  # drift was found (and repaired)
    case.assertTrue(case.exact())
    case.assertEqual(case.cmd("verify")[0], 0)


def backfill_restores_every_parent(case, parents, into):
    parents.update_many({}, {"$unset": {into: ""}})
    case.assertEqual(case.cmd("backfill")[0], 0)
    case.assertTrue(case.exact())


class AggregateTest(ShopTestCase):
    def setUp(self):
        super().setUp()
        m = dict(MAPPING, source=dict(MAPPING["source"], db=self.dbname),
                 target=dict(MAPPING["target"], db=self.dbname))
        self.mappings = mapping_folder(m)
        self.rng = random.Random(self._testMethodName)
        self.next_id = 1

    def create(self, pre_images=True):
        for name in ("products", "reviews"):
            self.db.create_collection(name, changeStreamPreAndPostImages={"enabled": pre_images})
        self.db.reviews.create_index("productId")
        self.db.products.insert_many([{"_id": i, "title": "P%d" % i} for i in range(1, PRODUCTS + 1)])

    def stars(self):
        """Stars of every numeric type $sum keeps apart, and now and then none at all."""
        n = self.rng.randint(1, 5)
        return self.rng.choice([n, n, Int64(n), float(n) + 0.5, Decimal128(str(n)), None, "five"])

    def review(self, product=None):
        i = self.next_id
        self.next_id += 1
        doc = {"_id": i, "productId": product or self.rng.randint(1, PRODUCTS),
               "createdAt": datetime.datetime(2024, 1, 1) + datetime.timedelta(minutes=self.rng.randint(0, 10**5))}
        s = self.stars()
        if s is not None:
            doc["stars"] = s
        if self.rng.random() < 0.15:
            doc["hidden"] = True
        return doc

    def change(self):
        """One change of any kind a review can see."""
        ids = [d["_id"] for d in self.db.reviews.find({}, {"_id": 1})]
        r = self.rng.random()
        if r < 0.35 or not ids:
            self.db.reviews.insert_one(self.review())
            return
        i = self.rng.choice(ids)
        if r < 0.5:
            s = self.stars()
            self.db.reviews.update_one({"_id": i}, {"$set": {"stars": s}} if s is not None else {"$unset": {"stars": ""}})
        elif r < 0.62:
            self.db.reviews.update_one({"_id": i}, {"$set": {"productId": self.rng.randint(1, PRODUCTS)}})
        elif r < 0.72:
            self.db.reviews.update_one({"_id": i}, {"$set": {"hidden": self.rng.random() < 0.5}})
        elif r < 0.8:
            doc = self.review()
            doc.pop("_id")
            self.db.reviews.replace_one({"_id": i}, doc)
        elif r < 0.85:
            self.db.reviews.update_one({"_id": i}, {"$set": {"text": "irrelevant"}})
        else:
            self.db.reviews.delete_one({"_id": i})

    def expected(self):
        """What each product should hold: a fresh $group on the server, MongoDB's own semantics."""
        groups = {g["_id"]: g for g in self.db.reviews.aggregate([
            {"$match": {"hidden": {"$ne": True}}},
            {"$group": {"_id": "$productId", "count": {"$sum": 1}, "sum": {"$sum": "$stars"},
                        "avg": {"$avg": "$stars"}, "min": {"$min": "$stars"}, "max": {"$max": "$stars"},
                        "latest": {"$max": "$createdAt"}}}])}
        out = {}
        for p in self.db.products.find({}, {"_id": 1}):
            g = groups.get(p["_id"])
            out[p["_id"]] = {"count": 0, "sum": 0} if g is None else {k: g[k] for k in NAMES}
        return out

    def actual(self):
        return {p["_id"]: p.get("rating", {}) for p in self.db.products.find({}, {"rating": 1})}

    @staticmethod
    def typed(values):
        """Values with their BSON types (Int64 is an int subclass; 7 == Int64(7) in Python)."""
        return {k: {n: (type(v).__name__, v) for n, v in r.items()} for k, r in values.items()}

    def exact(self):
        return self.typed(self.actual()) == self.typed(self.expected())

    def converge(self, timeout=60):
        wait_until(self.exact, timeout=timeout, interval=0.25, message="every product's rating exact")

    def test_every_kind_of_change_keeps_the_values_exact_and_verify_agrees(self):
        self.create()
        self.db.reviews.insert_many([self.review() for _ in range(150)])
        rc, out, err = self.cmd("backfill")
        self.assertEqual(rc, 0, err)
        self.assertTrue(self.exact())
        d = self.start()
        for _ in range(300):
            self.change()
        # A product whose reviews all go: count and sum 0, no average or extremes.
        self.db.reviews.insert_one(self.review(product=1))
        self.db.reviews.delete_many({"productId": 1})
        # A product inserted after its reviews (fillNewTargets).
        self.db.reviews.insert_one(self.review(product=PRODUCTS + 1))
        self.db.reviews.update_one({"productId": PRODUCTS + 1}, {"$set": {"hidden": False, "stars": Int64(4)}})
        self.db.products.insert_one({"_id": PRODUCTS + 1, "title": "late"})
        self.converge()
        self.assertEqual(self.actual()[1], {"count": 0, "sum": 0})
        self.assertEqual(self.typed({0: self.actual()[PRODUCTS + 1]})[0]["sum"], ("Int64", 4))
        rc, out, err = self.cmd("verify", "--json")
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(json.loads(out)["drifted"], 0)
        self.assertEqual(d.metric_sum("denormd_deadletters_total"), 0)

    def test_a_burst_for_one_parent_is_about_one_write_per_batch(self):
        self.create()
        self.assertEqual(self.cmd("backfill")[0], 0)  # every product gets its zero values
        d = self.start()
        self.db.reviews.insert_many([self.review(product=3) for _ in range(1000)])
        self.converge()
        updates = d.metric_sum("denormd_writes_total", mapping="products-rating")
        batches = d.metric_sum("denormd_batch_events_count")
        self.assertLessEqual(updates, batches)
        self.assertLess(updates, 200)

    def insert_reviews(self, n):
        self.db.reviews.insert_many([self.review() for _ in range(n)])

    def test_kill9_mid_workload_then_restart_converges_exactly(self):
        kill9_mid_workload_then_restart(self, self.insert_reviews)

    def test_replaying_everything_again_changes_nothing(self):
        self.create()
        self.assertEqual(self.cmd("backfill")[0], 0)
        d = self.start()
        time.sleep(1.1)  # cluster times have second resolution
        began = datetime.datetime.utcnow().replace(microsecond=0) - datetime.timedelta(seconds=1)
        for _ in range(200):
            self.change()
        self.converge()
        self.assertEqual(d.stop(), 0)
        before = self.typed(self.actual())
        kept = self.events_kept_since(calendar.timegm(began.timetuple()))
        self.assertGreater(kept, 100)  # most of the 200 changes; the filters drop the rest
        d2 = self.start("--start-at", began.strftime("%Y-%m-%dT%H:%M:%SZ"))
        wait_until(lambda: d2.metric_sum("denormd_events_total") >= kept, timeout=60, message="events replayed")
        wait_until(lambda: d2.metric_sum("denormd_lag_seconds") == 0, timeout=30, message="replay caught up")
        # Each replayed recompute found the values already right: nothing was rewritten.
        self.assertEqual(d2.metric_sum("denormd_documents_modified_total"), 0)
        self.assertEqual(d2.stop(), 0)
        self.assertEqual(self.typed(self.actual()), before)

    def test_without_pre_images_a_delete_or_move_recomputes_every_parent(self):
        self.create(pre_images=False)
        self.db.reviews.insert_many([self.review() for _ in range(60)])
        self.assertEqual(self.cmd("backfill")[0], 0)
        self.start()
        for _ in range(80):
            self.change()
        self.converge()
        # One delete alone, then one move alone: nothing else recomputes their parents.
        counted = self.db.reviews.find_one({"hidden": {"$ne": True}})
        self.db.reviews.delete_one({"_id": counted["_id"]})
        self.converge()
        counted = self.db.reviews.find_one({"hidden": {"$ne": True}})
        self.db.reviews.update_one({"_id": counted["_id"]}, {"$set": {"productId": counted["productId"] % PRODUCTS + 1}})
        self.converge()

    def test_verify_finds_drift_and_repair_and_backfill_fix_it(self):
        verify_finds_drift_and_repair_fixes_it(self, self.insert_reviews, self.db.products, "rating")
        backfill_restores_every_parent(self, self.db.products, "rating")
