#!/usr/bin/python3
"""The synchronizer users write by hand, as the performance baseline for denormd.

One `watch()` on the shop database with fullDocument=updateLookup; for every change event, one
`update_many` (or `update_one`) per mapping whose source is the event's collection, sent and
acknowledged before the next event is read. It implements the six sample mappings the way a
careful script would, no more: it has no resume token, no batching, no coalescing, no skip of
updates that touch no copied field, no refill when a child leaves the newest N, so it is both
slower and less correct than denormd. It exists to be measured, not used.

    naive_sync.py URI DB [T.I]  prints {"ready": true} once watching, then one JSON line every 0.5 s:
    {"events": N, "writes": W, "lat_ms": [apply latency of each event since the last line]}
(T.I, a cluster time, is where the stream starts; without it, now.)

tests/bench/thread_sync.py is the stronger baseline: one thread per source collection, doing
what the mappings say.
"""
import sys

import pymongo

from hand_sync import (CUSTOMER_COPY, HOST_COPY, OPEN, PIPELINE, PRODUCT_COPY, RECENT_LOGS, RECENT_ORDERS,
                       RECENT_REVIEWS, Progress, pick, start_at, visible)


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
        "customers": [copy("orders", "customerId", "customer", CUSTOMER_COPY, OPEN)],
        "products": [copy_in_array("orders", "items", "productId", "product", PRODUCT_COPY)],
        "hosts": [copy("logmsgs", "hostId", "host", HOST_COPY)],
        "orders": [recent("customers", "customerId", "recentOrders", "orderId", RECENT_ORDERS,
                          {"createdAt": -1}, 5)],
        "reviews": [recent("products", "productId", "recentReviews", "reviewId", RECENT_REVIEWS,
                           {"createdAt": -1}, 10, keep=visible)],
        "logmsgs": [recent("hosts", "hostId", "recentLogs", "logId", RECENT_LOGS, {"time": -1}, 100)],
    }

    progress = Progress()
    with db.watch(PIPELINE, full_document="updateLookup", start_at_operation_time=start_at(sys.argv[3:])) as stream:
        progress.ready()
        for change in stream:
            coll = change["ns"]["coll"]
            writes = 0
            for apply in handlers.get(coll, ()):
                writes += apply(change["operationType"], change["documentKey"]["_id"],
                                change.get("fullDocument"))
            progress.count(change, writes)


if __name__ == "__main__":
    main()
