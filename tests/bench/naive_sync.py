#!/usr/bin/python3
"""The synchronizer users write by hand, as the performance baseline for denormd.

One `watch()` on the shop database with fullDocument=updateLookup; for every change event, one
`update_many` (or `update_one`) per mapping whose source is the event's collection, sent and
acknowledged before the next event is read. It implements the six sample mappings the way a
careful script would, no more: it has no resume token, no batching, no coalescing, no skip of
updates that touch no copied field, no refill when a child leaves the newest N, so it is both
slower and less correct than denormd. It exists to be measured, not used.

    naive_sync.py URI DB      prints one JSON line every 0.5 s on stdout:
    {"events": N, "writes": W, "lat_ms": [apply latency of each event since the last line]}
"""
import datetime
import json
import sys
import threading
import time

import pymongo

OPEN = {"status": {"$nin": ["DELIVERED", "CANCELLED"]}}


def pick(doc, fields):
    out = {}
    for name, path in fields:
        v = doc
        for part in path.split("."):
            v = v.get(part) if isinstance(v, dict) else None
        if v is not None:
            out[name] = v
    return out


def main():
    uri, dbname = sys.argv[1], sys.argv[2]
    client = pymongo.MongoClient(uri, w="majority")
    db = client[dbname]

    def copy(target, key, into, fields, where=None):
        def apply(op, key_value, doc):
            if op == "delete":
                return 0  # onSourceDelete: keep
            db[target].update_many(dict({key: key_value}, **(where or {})),
                                   {"$set": {into + "." + n: v for n, v in pick(doc, fields).items()}})
            return 1
        return apply

    def copy_in_array(target, array, key, into, fields):
        def apply(op, key_value, doc):
            if op == "delete":
                return 0
            sets = {"%s.$[e].%s.%s" % (array, into, n): v for n, v in pick(doc, fields).items()}
            db[target].update_many({array + "." + key: key_value}, {"$set": sets},
                                   array_filters=[{"e." + key: key_value}])
            return 1
        return apply

    def recent(target, parent_key, into, id_field, fields, sort, limit, keep=None):
        def apply(op, key_value, doc):
            if op == "delete":
                # No full document on delete, so the parent is unknown: pull from any parent.
                db[target].update_many({into + "." + id_field: key_value},
                                       {"$pull": {into: {id_field: key_value}}})
                return 1
            if doc is None or parent_key not in doc:
                return 0
            element = pick(doc, fields)
            if keep is not None and not keep(doc):
                db[target].update_one({"_id": doc[parent_key]}, {"$pull": {into: {id_field: key_value}}})
            elif op == "insert":
                db[target].update_one({"_id": doc[parent_key]}, {"$push": {into: {
                    "$each": [element], "$sort": sort, "$slice": limit}}})
            else:
                db[target].update_many({"_id": doc[parent_key], into + "." + id_field: key_value},
                                       {"$set": {"%s.$[e].%s" % (into, n): v for n, v in element.items()}},
                                       array_filters=[{"e." + id_field: key_value}])
            return 1
        return apply

    handlers = {
        "customers": [copy("orders", "customerId", "customer",
                           (("name", "name"), ("email", "email"), ("city", "address.city")), OPEN)],
        "products": [copy_in_array("orders", "items", "productId", "product",
                                   (("title", "title"), ("sku", "sku")))],
        "hosts": [copy("logmsgs", "hostId", "host", (("name", "name"), ("ipaddr", "ipaddr")))],
        "orders": [recent("customers", "customerId", "recentOrders", "orderId",
                          (("orderId", "_id"), ("total", "total"), ("status", "status"),
                           ("createdAt", "createdAt")), {"createdAt": -1}, 5)],
        "reviews": [recent("products", "productId", "recentReviews", "reviewId",
                           (("reviewId", "_id"), ("stars", "stars"), ("excerpt", "text"),
                            ("createdAt", "createdAt")), {"createdAt": -1}, 10,
                           keep=lambda d: d.get("hidden") is not True)],
        "logmsgs": [recent("hosts", "hostId", "recentLogs", "logId",
                           (("logId", "_id"), ("time", "time"), ("message", "message")),
                           {"time": -1}, 100)],
    }

    lock = threading.Lock()
    state = {"events": 0, "writes": 0, "lat_ms": []}

    def report():
        while True:
            time.sleep(0.5)
            with lock:
                line = json.dumps(state)
                state["lat_ms"] = []
            print(line, flush=True)

    threading.Thread(target=report, daemon=True).start()
    pipeline = [{"$match": {"operationType": {"$in": ["insert", "update", "replace", "delete"]}}}]
    with db.watch(pipeline, full_document="updateLookup") as stream:
        print(json.dumps({"ready": True}), flush=True)
        for change in stream:
            coll = change["ns"]["coll"]
            writes = 0
            for apply in handlers.get(coll, ()):
                writes += apply(change["operationType"], change["documentKey"]["_id"],
                                change.get("fullDocument"))
            wall = change.get("wallTime")
            lat = None
            if isinstance(wall, datetime.datetime):
                lat = time.time() * 1000 - wall.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000
            with lock:
                state["events"] += 1
                state["writes"] += writes
                if lat is not None and writes:
                    state["lat_ms"].append(round(lat, 2))


if __name__ == "__main__":
    main()
