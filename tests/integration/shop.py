"""The sample shop of the integration suites: seed data (seed.py), a random workload, and an
oracle that computes from the sources what every dependent copy must be (independently of
denormd's own code)."""
import random

from tests.integration import seed as shop_seed
from tests.integration.seed import (CITIES, OPEN, RECENT_PARENTS, customer_snapshot, host_id, host_snapshot, logmsg,
                                    order_item, when)


class NewDocuments:
    """Ids and times for the documents a workload adds: ids past the seed's, and every new child
    newer than the seed data."""

    def __init__(self):
        self.clock = 100000  # minutes
        self.next_id = 1000000

    def _id(self):
        self.next_id += 1
        return self.next_id

    def _tick(self):
        self.clock += 1
        return when(self.clock)


class Shop(NewDocuments):
    def __init__(self, db, seed=1):
        super().__init__()
        self.db = db
        self.rng = random.Random(seed)

    # ---- seed -----------------------------------------------------------------------------
    def seed(self, customers=40, products=25, orders=150, hosts=4, logs=250, reviews=120):
        self.delivered_snapshots = shop_seed.seed_shop(self.db, self.rng, customers, products, orders, hosts,
                                                       logs, reviews)
        self.counts = dict(customers=customers, products=products, hosts=hosts)

    def fill_recent_arrays(self):
        shop_seed.fill_recent_arrays(self.db)

    # ---- workload ---------------------------------------------------------------------------
    def random_change(self):
        r = self.rng
        db = self.db
        n = self.counts
        k = r.random()
        if k < 0.12:
            db.customers.update_one({"_id": r.randint(1, n["customers"])},
                                    {"$set": {"name": "Customer %d" % r.randint(1, 10**6)}})
        elif k < 0.17:
            db.customers.update_one({"_id": r.randint(1, n["customers"])},
                                    {"$set": {"address.city": r.choice(CITIES)}})
        elif k < 0.20:
            db.customers.update_one({"_id": r.randint(1, n["customers"])}, {"$unset": {"email": ""}})
        elif k < 0.25:
            db.customers.update_one({"_id": r.randint(1, n["customers"])},
                                    {"$set": {"lastLogin": self._tick()}})
        elif k < 0.33:
            db.products.update_one({"_id": r.randint(1, n["products"])},
                                   {"$set": {"title": "Product %d" % r.randint(1, 10**6)}})
        elif k < 0.36:
            db.products.update_one({"_id": r.randint(1, n["products"])}, {"$inc": {"price": 1}})
        elif k < 0.39:
            db.hosts.update_one({"_id": host_id(r.randint(1, n["hosts"]))},
                                {"$set": {"ipaddr": "10.1.%d.%d" % (r.randint(0, 255), r.randint(1, 254))}})
        elif k < 0.52:
            h = db.hosts.find_one({"_id": host_id(r.randint(1, n["hosts"]))})
            db.logmsgs.insert_one(logmsg(self._id(), h, self._tick(), "event %d" % r.randint(1, 10**6)))
        elif k < 0.55:
            victim = db.logmsgs.find_one({}, sort=[("time", -1)], skip=r.randint(0, 20))
            if victim:
                db.logmsgs.delete_one({"_id": victim["_id"]})
        elif k < 0.68:
            db.reviews.insert_one({"_id": self._id(), "productId": r.randint(1, n["products"]),
                                   "stars": r.randint(1, 5), "text": "review text %d" % r.randint(1, 10**6),
                                   "createdAt": self._tick(), **({"hidden": True} if r.random() < 0.1 else {})})
        elif k < 0.71:
            rev = db.reviews.find_one({}, sort=[("createdAt", -1)], skip=r.randint(0, 30))
            if rev:
                db.reviews.update_one({"_id": rev["_id"]}, {"$set": {"stars": r.randint(1, 5)}})
        elif k < 0.73:
            rev = db.reviews.find_one({}, sort=[("createdAt", -1)], skip=r.randint(0, 30))
            if rev:
                op = {"$set": {"hidden": True}} if not rev.get("hidden") else {"$unset": {"hidden": ""}}
                db.reviews.update_one({"_id": rev["_id"]}, op)
        elif k < 0.75:
            rev = db.reviews.find_one({}, sort=[("createdAt", -1)], skip=r.randint(0, 30))
            if rev:
                db.reviews.delete_one({"_id": rev["_id"]})
        elif k < 0.76:
            rev = db.reviews.find_one({}, sort=[("createdAt", -1)], skip=r.randint(0, 30))
            if rev:
                db.reviews.update_one({"_id": rev["_id"]}, {"$set": {"productId": r.randint(1, n["products"])}})
        elif k < 0.77:
            rev = db.reviews.find_one({}, skip=r.randint(0, 50))
            if rev:
                db.reviews.update_one({"_id": rev["_id"]}, {"$set": {"createdAt": self._tick()}})
        elif k < 0.88:
            c = db.customers.find_one({"_id": r.randint(1, n["customers"])})
            p = db.products.find_one({"_id": r.randint(1, n["products"])})
            db.orders.insert_one({"_id": self._id(), "customerId": c["_id"], "status": "NEW",
                                  "total": r.randint(5, 500), "createdAt": self._tick(),
                                  "customer": customer_snapshot(c), "items": [order_item(p, 1)]})
        elif k < 0.95:
            o = db.orders.find_one({"status": {"$in": OPEN}}, skip=r.randint(0, 30))
            if o:
                db.orders.update_one({"_id": o["_id"]}, {"$set": {"status": r.choice(OPEN)}})
        else:
            o = db.orders.find_one({"status": {"$in": OPEN}}, sort=[("createdAt", -1)], skip=r.randint(0, 10))
            if o:
                db.orders.delete_one({"_id": o["_id"]})

    # ---- oracle -----------------------------------------------------------------------------
    def expected_recent(self, name, parent_id):
        return shop_seed.expected_recent(self.db, name, parent_id)

    def check(self):
        """Every difference between the dependents and what the sources say (empty = in line)."""
        db = self.db
        diffs = []
        customers = {c["_id"]: c for c in db.customers.find()}
        products = {p["_id"]: p for p in db.products.find()}
        hosts = {h["_id"]: h for h in db.hosts.find()}
        for o in db.orders.find():
            if o["status"] == "DELIVERED":
                if o["_id"] in self.delivered_snapshots and o.get("customer") != self.delivered_snapshots[o["_id"]]:
                    diffs.append(("orders-customer snapshot changed", o["_id"], o.get("customer")))
            else:
                want = customer_snapshot(customers[o["customerId"]])
                if o.get("customer") != want:
                    diffs.append(("orders-customer", o["_id"], o.get("customer"), want))
            for item in o["items"]:
                p = products[item["productId"]]
                want = {"title": p["title"], "sku": p["sku"]}
                if item.get("product") != want:
                    diffs.append(("orders-items-product", o["_id"], item.get("product"), want))
        for l in db.logmsgs.find():
            want = host_snapshot(hosts[l["hostId"]])
            if l.get("host") != want:
                diffs.append(("logmsgs-host", l["_id"], l.get("host"), want))
        for name, coll in RECENT_PARENTS:
            for parent in db[coll].find({}, {name: 1}):
                want = self.expected_recent(name, parent["_id"])
                if parent.get(name, []) != want:
                    diffs.append((name, parent["_id"], parent.get(name), want))
        return diffs
