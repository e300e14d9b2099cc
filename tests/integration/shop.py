"""The sample shop: seed data, a random workload, and an oracle that computes from the
sources what every dependent copy must be (independently of denormd's own code)."""
import datetime
import random

from bson import ObjectId

OPEN = ["NEW", "PAID", "SHIPPED"]
CITIES = ["Oslo", "Bergen", "Lyon", "Porto", "Kyoto", "Lima", "Perth"]
T0 = datetime.datetime(2024, 1, 1)


def when(minutes):
    return T0 + datetime.timedelta(minutes=minutes)


class Shop:
    def __init__(self, db, seed=1):
        self.db = db
        self.rng = random.Random(seed)
        self.clock = 100000  # minutes; every new child is newer than the seed data
        self.next_id = 1000000

    def _id(self):
        self.next_id += 1
        return self.next_id

    def _tick(self):
        self.clock += 1
        return when(self.clock)

    # ---- seed -----------------------------------------------------------------------------
    def seed(self, customers=40, products=25, orders=150, hosts=4, logs=250, reviews=120):
        r = self.rng
        db = self.db
        db.customers.insert_many([{"_id": i, "name": "Customer %d" % i, "email": "c%d@example.com" % i,
                                   "address": {"city": r.choice(CITIES), "zip": "%04d" % i}}
                                  for i in range(1, customers + 1)])
        db.products.insert_many([{"_id": i, "title": "Product %d" % i, "sku": "SKU-%d" % i,
                                  "price": 10 + i} for i in range(1, products + 1)])
        db.hosts.insert_many([{"_id": "h%d" % i, "name": "host-%d" % i, "ipaddr": "10.0.0.%d" % i}
                              for i in range(1, hosts + 1)])
        order_docs = []
        for i in range(1, orders + 1):
            c = db.customers.find_one({"_id": r.randint(1, customers)})
            status = r.choice(OPEN + ["DELIVERED"])
            items = []
            for _ in range(r.randint(1, 3)):
                p = db.products.find_one({"_id": r.randint(1, products)})
                items.append({"productId": p["_id"], "qty": r.randint(1, 4), "priceAtOrder": p["price"],
                              "product": {"title": p["title"], "sku": p["sku"]}})
            snapshot = {"name": c["name"], "email": c["email"], "city": c["address"]["city"]}
            if status == "DELIVERED":
                snapshot = {"name": "old name", "email": "old@example.com", "city": "Old city"}
            order_docs.append({"_id": i, "customerId": c["_id"], "status": status, "total": r.randint(5, 500),
                               "createdAt": when(i), "customer": snapshot, "items": items})
        db.orders.insert_many(order_docs)
        self.delivered_snapshots = {o["_id"]: o["customer"] for o in order_docs if o["status"] == "DELIVERED"}
        db.logmsgs.insert_many([{"_id": i, "hostId": "h%d" % r.randint(1, hosts), "time": when(i),
                                 "message": "log line %d" % i} for i in range(1, logs + 1)])
        for l in db.logmsgs.find():
            h = db.hosts.find_one({"_id": l["hostId"]})
            db.logmsgs.update_one({"_id": l["_id"]}, {"$set": {"host": {"name": h["name"], "ipaddr": h["ipaddr"]}}})
        db.reviews.insert_many([{"_id": i, "productId": r.randint(1, products), "stars": r.randint(1, 5),
                                 "text": "review %d" % i, "createdAt": when(i),
                                 **({"hidden": True} if r.random() < 0.1 else {})}
                                for i in range(1, reviews + 1)])
        self.counts = dict(customers=customers, products=products, hosts=hosts)

    def fill_recent_arrays(self):
        """What a backfill would do: recent arrays as the oracle says (denormd keeps them)."""
        for name, coll, key, field in (("recentReviews", "products", "productId", None),
                                       ("recentLogs", "hosts", "hostId", None),
                                       ("recentOrders", "customers", "customerId", None)):
            for parent in self.db[coll].find({}, {"_id": 1}):
                self.db[coll].update_one({"_id": parent["_id"]},
                                         {"$set": {name: self.expected_recent(name, parent["_id"])}})

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
            db.hosts.update_one({"_id": "h%d" % r.randint(1, n["hosts"])},
                                {"$set": {"ipaddr": "10.1.%d.%d" % (r.randint(0, 255), r.randint(1, 254))}})
        elif k < 0.52:
            h = db.hosts.find_one({"_id": "h%d" % r.randint(1, n["hosts"])})
            db.logmsgs.insert_one({"_id": self._id(), "hostId": h["_id"], "time": self._tick(),
                                   "message": "event %d" % r.randint(1, 10**6),
                                   "host": {"name": h["name"], "ipaddr": h["ipaddr"]}})
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
                                  "customer": {k2: v for k2, v in (("name", c.get("name")), ("email", c.get("email")),
                                                                  ("city", c["address"]["city"])) if v is not None},
                                  "items": [{"productId": p["_id"], "qty": 1, "priceAtOrder": p["price"],
                                             "product": {"title": p["title"], "sku": p["sku"]}}]})
        elif k < 0.95:
            o = db.orders.find_one({"status": {"$in": OPEN}}, skip=r.randint(0, 30))
            if o:
                db.orders.update_one({"_id": o["_id"]}, {"$set": {"status": r.choice(OPEN)}})
        else:
            o = db.orders.find_one({"status": {"$in": OPEN}}, sort=[("createdAt", -1)], skip=r.randint(0, 10))
            if o:
                db.orders.delete_one({"_id": o["_id"]})

    # ---- oracle -----------------------------------------------------------------------------
    RECENT = {
        "recentReviews": ("reviews", "productId", "createdAt", 10,
                          (("reviewId", "_id"), ("stars", "stars"), ("excerpt", "text"), ("createdAt", "createdAt")),
                          {"hidden": {"$ne": True}}),
        "recentLogs": ("logmsgs", "hostId", "time", 100,
                       (("logId", "_id"), ("time", "time"), ("message", "message")), {}),
        "recentOrders": ("orders", "customerId", "createdAt", 5,
                         (("orderId", "_id"), ("total", "total"), ("status", "status"), ("createdAt", "createdAt")), {}),
    }

    def expected_recent(self, name, parent_id):
        coll, key, sort, limit, fields, flt = self.RECENT[name]
        q = dict(flt)
        q[key] = parent_id
        out = []
        for child in self.db[coll].find(q).sort([(sort, -1), ("_id", 1)]).limit(limit):
            out.append({n: child[s] for n, s in fields if s in child})
        return out

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
                c = customers[o["customerId"]]
                want = {k: v for k, v in (("name", c.get("name")), ("email", c.get("email")),
                                          ("city", c.get("address", {}).get("city"))) if v is not None}
                if o.get("customer") != want:
                    diffs.append(("orders-customer", o["_id"], o.get("customer"), want))
            for item in o["items"]:
                p = products[item["productId"]]
                want = {"title": p["title"], "sku": p["sku"]}
                if item.get("product") != want:
                    diffs.append(("orders-items-product", o["_id"], item.get("product"), want))
        for l in db.logmsgs.find():
            h = hosts[l["hostId"]]
            want = {"name": h["name"], "ipaddr": h["ipaddr"]}
            if l.get("host") != want:
                diffs.append(("logmsgs-host", l["_id"], l.get("host"), want))
        for name, coll in (("recentReviews", "products"), ("recentLogs", "hosts"), ("recentOrders", "customers")):
            for parent in db[coll].find({}, {name: 1}):
                want = self.expected_recent(name, parent["_id"])
                if parent.get(name, []) != want:
                    diffs.append((name, parent["_id"], parent.get(name), want))
        return diffs
