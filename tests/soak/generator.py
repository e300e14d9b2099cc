"""A seeded random workload over the soak schema (customers, orders with items, products,
reviews; tests/soak/mappings), exercising every mapping kind and option and the values the
docs/mappings.md calls out: keys of mixed numeric types, null/missing/array/operator-looking keys, NaN
and the infinities, decimals past double precision, unicode and dotted-looking strings,
positional and pipeline updates, replaces, deletes and re-creation, parents after their
children, large documents, the application's own read-modify-write of dependents, and
multi-document transactions across collections (some aborted, which must leave no trace).
Volume is bounded: small key ranges, `ops` writes per step."""
import collections
import datetime
import random

import bson
import pymongo
from bson.raw_bson import RawBSONDocument
from bson.decimal128 import Decimal128
from bson.int64 import Int64

CUSTOMERS = 12
PRODUCTS = 10
COLLECTIONS = ("customers", "orders", "products", "reviews")

# Classes of generated data that can be switched off (--exclude), each named in the output.
CLASSES = {
    "nan": "NaN and +-Infinity in summed/compared values",
    "app-replace-parents": "the application replaces parents (products, customers) carrying the computed fields it read",
    "app-replace-targets": "the application replaces orders carrying the copies it read",
    "positional": "positional updates of orders.items ($set items.N, $push, $pull, $pop, $[], $[e])",
    "mixed-keys": "keys of mixed numeric types (Int64, double, Decimal128 for int keys)",
    "odd-keys": "null, missing, array and operator-looking keys",
    "large": "documents of hundreds of KB",
    "non-numeric-totals": "orders whose total is not a number (a string, null, a bool, missing)",
    "customer-deletes": "customers deleted (orders-customer copies must then be unset)",
    "rekey-to-missing": "orders re-keyed (customerId) to a customer that does not exist",
    "decimal-past-double": "decimals that differ from an integer only past double precision (3.00000000000000000001)",
    "transactions": "changes committed in multi-document transactions across collections (pymongo's "
                    "with_transaction), and aborted ones that must leave no trace",
}

# Known holes, not yet fixed, by the class that shows them: why a run leaves it out (printed).
KNOWN_HOLES = {}  # workload classes of known holes not yet fixed: name -> why (none now)

STRINGS = ["Ann", "Bø", "名前", "a.b.c", "$notop", "x" * 40, "", "Zoë 🙂", "dotted.name", "émile"]
CITIES = ["Oslo", "Rome", "São Paulo", "a.b", "Kyiv", "東京"]
STATUSES = ["NEW", "PAID", "CLOSED", "CANCELLED", "HOLD"]


class Workload:
    def __init__(self, client, db, seed, exclude=()):
        self.rng = random.Random(seed)
        self.client = client
        self.db = client[db]
        self.exclude = set(exclude)
        self.session = client.start_session(causal_consistency=False)
        self.stats = collections.Counter()
        self.errors = collections.Counter()
        self.next_order = 1
        self.next_review = 1
        self.in_transaction = False
        self.aborted = 0
        self.traces = []  # aborted transactions whose marker write is visible afterwards

    # ---- values ----
    def on(self, cls):
        return cls not in self.exclude

    def key(self, i):
        """The int key i in a random numeric representation (all of them are one key)."""
        if not self.on("mixed-keys"):
            return i
        return self.rng.choice([i, i, Int64(i), float(i), Decimal128(str(i))])

    def ref(self, n, extra=2):
        """A reference to one of 1..n (+extra that may not exist), or now and then no reference."""
        r = self.rng.random()
        if self.on("odd-keys") and r < 0.08:
            return self.rng.choice([None, "MISSING", [1, 2], {"$gt": 0}, [], [self.key(1)]])
        return self.key(self.rng.randint(1, n + extra))

    def number(self, lo=0, hi=5, numeric_only=False):
        r = self.rng.random()
        if numeric_only and 0.65 <= r < 0.8:
            r = 0.9
        n = self.rng.randint(lo, hi)
        if r < 0.3:
            return n
        if r < 0.4:
            return Int64(n)
        if r < 0.55:
            return n + self.rng.choice([0.5, 0.25, 0.1])
        if r < 0.65:
            tails = ["5", "1"] + (["00000000000000000001"] if self.on("decimal-past-double") else [])
            return Decimal128("%d.%s" % (n, self.rng.choice(tails)))
        if r < 0.72 and self.on("nan"):
            return self.rng.choice([float("nan"), float("inf"), float("-inf"), Decimal128("NaN")])
        if r < 0.8:
            return self.rng.choice(["3", None, True, "MISSING"])
        return n

    def text(self):
        return self.rng.choice(STRINGS) + ("" if self.rng.random() < 0.7 else str(self.rng.randint(0, 9)))

    def when(self):
        if self.rng.random() < 0.05:
            return self.rng.choice(["MISSING", None, 17])
        return datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=self.rng.randint(0, 50))

    def big(self):
        return "b" * self.rng.randint(200_000, 400_000)

    @staticmethod
    def doc(**fields):
        return {k: v for k, v in fields.items() if not (isinstance(v, str) and v == "MISSING")}

    @staticmethod
    def raw(d):
        """A document as raw BSON, so that operator-looking values ({"$gt": 0}) reach the
        server (pymongo refuses $-prefixed keys in documents it encodes itself)."""
        return RawBSONDocument(bson.encode(d))

    def customer(self, i):
        code = "K%d" % i if i % 3 == 0 else self.key(i * 100)
        d = self.doc(_id=self.key(i), name=self.text(), address={"city": self.rng.choice(CITIES)},
                     code=code, tier=self.rng.choice(["gold", "silver", 3, None, "MISSING"]),
                     tags=["t%d" % self.rng.randint(0, 3) for _ in range(self.rng.randint(0, 3))])
        if self.rng.random() < 0.1:
            del d["name"]
        if self.on("large") and self.rng.random() < 0.03:
            d["blob"] = self.big()
        return d

    def item(self):
        return self.doc(productId=self.ref(PRODUCTS), qty=self.rng.randint(1, 5))  # raw in its order

    def order(self):
        i = self.next_order
        self.next_order += 1
        code_of = self.rng.randint(1, CUSTOMERS + 1)
        d = self.doc(_id=i, customerId=self.ref(CUSTOMERS),
                     customerCode="K%d" % code_of if code_of % 3 == 0 else self.key(code_of * 100),
                     status=self.rng.choice(STATUSES),
                     total=self.number(0, 100, numeric_only=not self.on("non-numeric-totals")),
                     items=[self.item() for _ in range(self.rng.randint(0, 4))])
        if self.on("large") and self.rng.random() < 0.03:
            d["blob"] = self.big()
        return self.raw(d)

    def product(self, i):
        return self.doc(_id=self.key(i), title=self.text(), sku="S%d" % self.rng.randint(0, 99),
                        tags=[self.rng.randint(0, 9) for _ in range(self.rng.randint(0, 4))])

    def review(self):
        i = self.next_review
        self.next_review += 1
        d = self.doc(_id=i, productId=self.ref(PRODUCTS), stars=self.number(1, 5), at=self.when(),
                        hidden=self.rng.random() < 0.15, score=self.number(0, 4), text=self.text())
        return self.raw(d)

    # ---- writes ----
    def write(self, name, fn):
        self.stats[name] += 1
        try:
            fn()
        except (pymongo.errors.PyMongoError, bson.errors.InvalidDocument) as e:
            self.errors["%s: %s" % (name, type(e).__name__)] += 1
            if self.in_transaction:
                raise  # the server aborted the transaction: with_transaction decides what next

    def some_id(self, coll):
        ids = [d["_id"] for d in self.db[coll].find({}, {"_id": 1}, session=self.session)]
        return self.rng.choice(ids) if ids else None

    def seed(self):
        """The starting data: most customers and products (the rest arrive later, after their
        dependents), some orders and reviews."""
        s = self.session
        for i in range(1, CUSTOMERS + 1):
            if self.rng.random() < 0.7:
                self.write("insert customer", lambda i=i: self.db.customers.insert_one(self.customer(i), session=s))
        for i in range(1, PRODUCTS + 1):
            if self.rng.random() < 0.6:
                self.write("insert product", lambda i=i: self.db.products.insert_one(self.product(i), session=s))
        for _ in range(30):
            self.write("insert order", lambda: self.db.orders.insert_one(self.order(), session=s))
        for _ in range(40):
            self.write("insert review", lambda: self.db.reviews.insert_one(self.review(), session=s))

    OPS_WEIGHTS = (3, 3, 6, 6)

    def ops(self):
        return (self.op_customer, self.op_product, self.op_order, self.op_review)

    def step(self, ops):
        """`ops` random writes; with "transactions", now and then a transaction of several."""
        for _ in range(ops):
            if self.on("transactions") and self.rng.random() < 0.08:
                self.transaction()
            else:
                self.rng.choices(self.ops(), self.OPS_WEIGHTS)[0]()

    def transaction(self):
        """2-5 random writes across collections in one transaction (the ops' reads too): three
        in four committed through with_transaction (which retries transient errors: write
        conflicts with denormd, a step-down), the rest aborted after a marker insert that must
        then not exist."""
        n = self.rng.randint(2, 5)
        abort = self.rng.random() < 0.25
        outer = self.session
        self.in_transaction = True
        try:
            with self.client.start_session(causal_consistency=False) as s:
                self.session = s

                def body(session):
                    for _ in range(n):
                        self.rng.choices(self.ops(), self.OPS_WEIGHTS)[0]()
                    if abort:
                        self.marker = "aborted-%d" % (self.aborted + 1)
                        self.db.reviews.insert_one({"_id": self.marker, "productId": self.key(1), "stars": 5,
                                                    "text": self.marker}, session=session)
                if abort:
                    s.start_transaction()
                    try:
                        body(s)
                    finally:
                        if s.in_transaction:
                            s.abort_transaction()
                    self.aborted += 1
                    self.stats["transaction aborted"] += 1
                    if self.db.reviews.find_one({"_id": self.marker}, session=outer) is not None:
                        self.traces.append(self.marker)
                else:
                    s.with_transaction(body)
                    self.stats["transaction committed"] += 1
            outer.advance_cluster_time(s.cluster_time)
            outer.advance_operation_time(s.operation_time)
        except pymongo.errors.PyMongoError as e:
            self.errors["transaction: %s" % type(e).__name__] += 1
        finally:
            self.session = outer
            self.in_transaction = False

    def insert_or_recreate(self, coll, n, make):
        i = self.rng.randint(1, n)
        if self.db[coll].find_one({"_id": i}, session=self.session) is None:  # 1 == 1.0 == Int64(1)
            self.write("insert " + coll[:-1], lambda: self.db[coll].insert_one(make(i), session=self.session))
        elif coll != "customers" or self.on("customer-deletes"):
            self.write("delete " + coll[:-1], lambda: self.db[coll].delete_one({"_id": i}, session=self.session))

    def op_customer(self):
        s, c = self.session, self.db.customers
        r = self.rng.random()
        cid = self.some_id("customers")
        if r < 0.25 or cid is None:
            return self.insert_or_recreate("customers", CUSTOMERS, self.customer)
        if r < 0.45:
            upd = self.rng.choice([{"$set": {"name": self.text()}}, {"$set": {"address.city": self.rng.choice(CITIES)}},
                                   {"$set": {"address": {"city": self.rng.choice(CITIES), "zip": 1}}},
                                   {"$unset": {"name": ""}}, {"$unset": {"address": ""}},
                                   {"$set": {"tier": self.rng.choice(["gold", "silver", None])}},
                                   {"$push": {"tags": "t9"}}, {"$set": {"tags.0": "x"}}])
            self.write("update customer", lambda: c.update_one({"_id": cid}, upd, session=s))
        elif r < 0.55:
            self.write("pipeline update customer", lambda: c.update_one(
                {"_id": cid}, [{"$set": {"name": {"$concat": [{"$ifNull": ["$name", ""]}, "·"]}}}], session=s))
        elif r < 0.7 and self.on("app-replace-parents"):
            # read-modify-write: read the customer, change its tier, write back what was read
            def rmw():
                d = c.find_one({"_id": cid}, session=s)
                if d:
                    d["tier"] = self.rng.choice(["gold", "bronze"])
                    c.replace_one({"_id": cid}, d, session=s)
            self.write("app replace customer", rmw)
        elif r < 0.8:
            i = int(str(cid).split(".")[0]) if not isinstance(cid, str) else 1
            new = {k: v for k, v in self.customer(i).items() if k != "_id"}  # its own code
            self.write("replace customer", lambda: c.replace_one({"_id": cid}, new, session=s))
        elif self.on("customer-deletes"):
            self.write("delete customer", lambda: c.delete_one({"_id": cid}, session=s))

    def op_product(self):
        s, p = self.session, self.db.products
        r = self.rng.random()
        pid = self.some_id("products")
        if r < 0.3 or pid is None:
            return self.insert_or_recreate("products", PRODUCTS, self.product)
        if r < 0.55:
            upd = self.rng.choice([{"$set": {"title": self.text()}}, {"$set": {"sku": "S%d" % self.rng.randint(0, 99)}},
                                   {"$unset": {"sku": ""}}, {"$set": {"title": self.text() * 1000}},
                                   {"$push": {"tags": 1}}, {"$pop": {"tags": 1}}])
            self.write("update product", lambda: p.update_one({"_id": pid}, upd, session=s))
        elif r < 0.7 and self.on("app-replace-parents"):
            def rmw():
                d = p.find_one({"_id": pid}, session=s)
                if d:
                    d["sku"] = "S%d" % self.rng.randint(0, 99)
                    p.replace_one({"_id": pid}, d, session=s)
            self.write("app replace product", rmw)
        elif r < 0.8:
            self.write("pipeline update product", lambda: p.update_one(
                {"_id": pid}, [{"$set": {"title": {"$toUpper": {"$ifNull": ["$title", "none"]}}}}], session=s))
        else:
            self.write("delete product", lambda: p.delete_one({"_id": pid}, session=s))

    def op_order(self):
        s, o = self.session, self.db.orders
        r = self.rng.random()
        oid = self.some_id("orders")
        if r < 0.2 or oid is None:
            return self.write("insert order", lambda: o.insert_one(self.order(), session=s))
        if r < 0.35:
            upd = self.rng.choice([{"$set": {"status": self.rng.choice(STATUSES)}},
                                   {"$set": {"customerId": self.ref(CUSTOMERS) if self.on("rekey-to-missing")
                                             else (self.some_id("customers") or 1)}},
                                   {"$set": {"customerCode": self.key(self.rng.randint(1, CUSTOMERS) * 100)}},
                                   {"$set": {"total": self.number(0, 100, not self.on("non-numeric-totals"))}},
                                   {"$set": {"total": 1}} if not self.on("non-numeric-totals") else {"$unset": {"total": ""}},
                                   {"$inc": {"total": 1}}])
            upd = {"$unset": {k: ""} for k in upd["$set"]} if "$set" in upd and "MISSING" in upd["$set"].values() else upd
            self.write("update order", lambda: o.update_one({"_id": oid}, upd, session=s))
        elif r < 0.6 and self.on("positional"):
            n = self.rng.randint(0, 3)
            pk = self.ref(PRODUCTS)
            pk = None if isinstance(pk, str) else pk
            kinds = [
                ("$set items.N.productId", {"$set": {"items.%d.productId" % n: pk}}, None),
                ("$set items.N", {"$set": {"items.%d" % n: self.item()}}, None),
                ("$push items", {"$push": {"items": self.item()}}, None),
                ("$pull items", {"$pull": {"items": {"productId": self.key(self.rng.randint(1, PRODUCTS))}}}, None),
                ("$pop items", {"$pop": {"items": self.rng.choice([1, -1])}}, None),
                ("$[] qty", {"$inc": {"items.$[].qty": 1}}, None),
                ("$[e] productId", {"$set": {"items.$[e].productId": pk}},
                 [{"e.productId": self.key(self.rng.randint(1, PRODUCTS))}]),
                ("$set items", {"$set": {"items": [self.item() for _ in range(self.rng.randint(0, 3))]}}, None),
            ]
            name, upd, af = self.rng.choice(kinds)
            self.write("order " + name, lambda: o.update_one({"_id": oid}, upd, array_filters=af, session=s))
        elif r < 0.68:
            self.write("pipeline update order", lambda: o.update_one(
                {"_id": oid}, [{"$set": {"status": {"$cond": [{"$eq": ["$status", "CLOSED"]}, "PAID", "CLOSED"]}}}], session=s))
        elif r < 0.8 and self.on("app-replace-targets"):
            def rmw():
                d = o.find_one({"_id": oid}, session=s)
                if d:
                    d["note"] = self.text()
                    if self.rng.random() < 0.3:
                        d["status"] = self.rng.choice(STATUSES)
                    o.replace_one({"_id": oid}, d, session=s)
            self.write("app replace order", rmw)
        elif r < 0.88:
            new = dict(bson.decode(self.order().raw))
            new.pop("_id")
            new = self.raw(new)
            self.write("replace order", lambda: o.replace_one({"_id": oid}, new, session=s))
        else:
            self.write("delete order", lambda: o.delete_one({"_id": oid}, session=s))

    def op_review(self):
        s, rv = self.session, self.db.reviews
        r = self.rng.random()
        rid = self.some_id("reviews")
        if r < 0.3 or rid is None:
            return self.write("insert review", lambda: rv.insert_one(self.review(), session=s))
        if r < 0.6:
            field, value = self.rng.choice([("stars", self.number(1, 5)), ("at", self.when()), ("hidden", self.rng.random() < 0.3),
                                            ("productId", self.ref(PRODUCTS)), ("score", self.number(0, 4)), ("text", self.text())])
            upd = {"$unset": {field: ""}} if isinstance(value, str) and value == "MISSING" else {"$set": {field: value}}
            self.write("update review", lambda: rv.update_one({"_id": rid}, upd, session=s))
        elif r < 0.7:
            self.write("pipeline update review", lambda: rv.update_one(
                {"_id": rid}, [{"$set": {"score": {"$add": [{"$ifNull": ["$score", 0]}, 1]}}}], session=s))
        elif r < 0.8:
            new = dict(bson.decode(self.review().raw))
            new.pop("_id")
            new = self.raw(new)
            self.write("replace review", lambda: rv.replace_one({"_id": rid}, new, session=s))
        else:
            self.write("delete review", lambda: rv.delete_one({"_id": rid}, session=s))

    def noise(self, n):
        """n writes no mapping reads (to roll the server's bounded history over)."""
        for i in range(n):
            self.db.noise.update_one({"_id": i % 10}, {"$inc": {"n": 1}}, upsert=True, session=self.session)

    def last_time(self):
        return self.session.operation_time
