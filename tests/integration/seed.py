"""The sample shop's data: the one seeder that the integration suites (through shop.Shop), the
end-to-end benchmark and the demo load their shop with, and the documents their workloads
write later.

The documents have the shapes the sample mappings in mappings/ read, written the way an
application writes them: every order carries a snapshot of its customer and each item one of
its product, every log message a copy of its host. Delivered orders carry an older snapshot
of their customer (orders-customer leaves delivered orders be). Ids are 1..N, hosts
"web-01".."web-NN". deploy/seed/seed.js, the docker compose demo's seeder, writes the same
shapes from mongosh (the stack runs no Python); tests/deploy/seed_smoke_test.js checks it
against the mappings.
"""
import datetime

OPEN = ["NEW", "PAID", "SHIPPED"]
SEED_STATUSES = ["NEW", "PAID", "DELIVERED"]
CITIES = ["Oslo", "Bergen", "Lyon", "Porto", "Kyoto", "Lima", "Perth"]
T0 = datetime.datetime(2024, 1, 1)
STALE_CUSTOMER = {"name": "old name", "email": "old@example.com", "city": "Old city"}

# The arrays of the three recent mappings, as the sample mappings define them:
# name -> (child collection, parent key, sort field (newest first), limit,
#          ((element field, child field), ...), filter on the children).
RECENT = {
    "recentReviews": ("reviews", "productId", "createdAt", 10,
                      (("reviewId", "_id"), ("stars", "stars"), ("excerpt", "text"), ("createdAt", "createdAt")),
                      {"hidden": {"$ne": True}}),
    "recentLogs": ("logmsgs", "hostId", "time", 100,
                   (("logId", "_id"), ("time", "time"), ("message", "message")), {}),
    "recentOrders": ("orders", "customerId", "createdAt", 5,
                     (("orderId", "_id"), ("total", "total"), ("status", "status"), ("createdAt", "createdAt")), {}),
}
RECENT_PARENTS = (("recentReviews", "products"), ("recentLogs", "hosts"), ("recentOrders", "customers"))
# Every key a mapping looks documents up by (the benchmark and the demo create these indexes).
INDEXES = (("orders", "customerId"), ("orders", "items.productId"), ("logmsgs", "hostId"),
           ("reviews", "productId"), ("orders", "createdAt"), ("reviews", "createdAt"), ("logmsgs", "time"))


def when(minutes):
    return T0 + datetime.timedelta(minutes=minutes)


def host_id(i):
    return "web-%02d" % i


# ---- documents -----------------------------------------------------------------------------
def customer(i, rng):
    return {"_id": i, "name": "Customer %d" % i, "email": "c%d@example.com" % i,
            "address": {"city": rng.choice(CITIES)}}


def product(i):
    return {"_id": i, "title": "Product %d" % i, "sku": "SKU-%05d" % i, "price": 10 + i % 90, "stock": 10}


def host(i):
    return {"_id": host_id(i), "name": host_id(i), "ipaddr": "10.0.0.%d" % i}


def host_label(h):
    """The computed field of logmsgs-host, {"$concat": ["$name", " (", {"$toString": "$ipaddr"}, ")"]},
    as MongoDB evaluates it for the values the shop writes (strings): null when a part is
    missing or null."""
    name, ipaddr = h.get("name"), h.get("ipaddr")
    if name is None or ipaddr is None:
        return None
    return "%s (%s)" % (name, ipaddr)


def host_snapshot(h):
    """What a log message keeps of its host (logmsgs-host)."""
    return {"name": h["name"], "ipaddr": h["ipaddr"], "label": host_label(h)}


def customer_snapshot(c):
    """What an order keeps of its customer (orders-customer); absent fields stay absent."""
    return {k: v for k, v in (("name", c.get("name")), ("email", c.get("email")),
                              ("city", c.get("address", {}).get("city"))) if v is not None}


def order_item(p, qty):
    return {"productId": p["_id"], "qty": qty, "priceAtOrder": p["price"],
            "product": {"title": p["title"], "sku": p["sku"]}}


def order(i, c, items, status, created_at):
    return {"_id": i, "customerId": c["_id"], "status": status,
            "total": sum(it["priceAtOrder"] * it["qty"] for it in items), "createdAt": created_at,
            "customer": STALE_CUSTOMER if status == "DELIVERED" else customer_snapshot(c), "items": items}


def logmsg(i, h, time, message):
    return {"_id": i, "hostId": h["_id"], "time": time, "message": message, "host": host_snapshot(h)}


def review(i, product_id, stars, text, created_at, hidden=False):
    return {"_id": i, "productId": product_id, "stars": stars, "text": text, "createdAt": created_at,
            **({"hidden": True} if hidden else {})}


# ---- seeding -------------------------------------------------------------------------------
def seed_shop(db, rng, customers, products, orders, hosts, logmsgs, reviews, indexes=False, batch=5000):
    """Inserts the shop into `db` (the same data for the same `rng` state); returns the
    delivered orders' customer snapshots, {order id: snapshot}."""
    cs = [customer(i, rng) for i in range(1, customers + 1)]
    ps = [product(i) for i in range(1, products + 1)]
    hs = [host(i) for i in range(1, hosts + 1)]

    def orders_docs():
        for i in range(1, orders + 1):
            c = cs[rng.randint(1, customers) - 1]
            status = rng.choice(SEED_STATUSES)
            items = [order_item(ps[rng.randint(1, products) - 1], rng.randint(1, 3))
                     for _ in range(rng.randint(1, 3))]
            yield order(i, c, items, status, when(i))

    delivered = {}

    def keep_delivered(docs):
        for o in docs:
            if o["status"] == "DELIVERED":
                delivered[o["_id"]] = o["customer"]
            yield o

    for coll, docs in (("customers", cs), ("products", ps), ("hosts", hs),
                       ("orders", keep_delivered(orders_docs())),
                       ("logmsgs", (logmsg(i, hs[rng.randint(1, hosts) - 1], when(i), "log line %d" % i)
                                    for i in range(1, logmsgs + 1))),
                       ("reviews", (review(i, rng.randint(1, products), rng.randint(1, 5), "review %d" % i,
                                           when(i), hidden=rng.random() < 0.1)
                                    for i in range(1, reviews + 1)))):
        insert_in_batches(db[coll], docs, batch)
    if indexes:
        for coll, key in INDEXES:
            db[coll].create_index(key)
    return delivered


def insert_in_batches(coll, docs, batch):
    chunk = []
    for d in docs:
        chunk.append(d)
        if len(chunk) == batch:
            coll.insert_many(chunk)
            chunk = []
    if chunk:
        coll.insert_many(chunk)


def expected_recent(db, name, parent_id):
    """The recent array `name` of one parent, as the sources say it must be."""
    coll, key, sort, limit, fields, flt = RECENT[name]
    q = dict(flt)
    q[key] = parent_id
    out = []
    for child in db[coll].find(q).sort([(sort, -1), ("_id", 1)]).limit(limit):
        out.append({n: child[s] for n, s in fields if s in child})
    return out


def fill_recent_arrays(db):
    """What a backfill would do: every parent's recent arrays as the sources say (denormd
    keeps them from then on)."""
    for name, coll in RECENT_PARENTS:
        for parent in db[coll].find({}, {"_id": 1}):
            db[coll].update_one({"_id": parent["_id"]}, {"$set": {name: expected_recent(db, name, parent["_id"])}})
