#!/usr/bin/python3
"""The strongest simple synchronizer a user writes by hand with pymongo, as denormd's baseline.

One thread per source collection, each with its own `watch()` (fullDocument=updateLookup): for
every change event it sends the writes the six sample mappings call for, one at a time, each
acknowledged before the next event is read. No batching, no coalescing. Unlike naive_sync.py
(one watch over the database) it does what the mappings say, so its copies come out exact:

- an update that touches none of a mapping's source paths writes nothing (the echoes of the
  other threads' writes are read and dropped);
- a copy sets the fields the source has and unsets those it lacks; a deleted source leaves its
  copies as they are (onSourceDelete: keep);
- a new order, or one whose customer or status changed, gets its customer's copy
  (fillNewTargets), unless it already holds it;
- a new child is pushed into its parent's newest-N array (unless it is there already); a
  changed child is rewritten in place;
  a child that was deleted, hidden or shown, moved or re-dated makes the arrays of the parent
  that shows it and of its parent now be rebuilt from the children (pullAndRefill).

It keeps no resume token and does not guard a fill against a rename read just before it (a
real deployment would need both; the benchmark's catch-up does not).

    thread_sync.py URI DB [T.I]   the progress lines of naive_sync.py (see hand_sync.Progress)
"""
import os
import sys
import threading
import traceback

import pymongo

from hand_sync import (CUSTOMER_COPY, HOST_COPY, OPEN, PIPELINE, PRODUCT_COPY, RECENT_LOGS, RECENT_ORDERS,
                       RECENT_REVIEWS, VISIBLE, Progress, pick, source_paths, start_at, visible)


def touches(change, paths):
    """Whether the change can alter any of `paths`: an insert, replace or delete does; an update
    only if it set or removed one of them, a parent of one (`address` for `address.city`) or a
    part of one."""
    if change["operationType"] != "update":
        return True
    desc = change.get("updateDescription") or {}
    changed = list(desc.get("updatedFields") or {}) + list(desc.get("removedFields") or [])
    changed += [t["field"] for t in desc.get("truncatedArrays") or []]
    return any(c == p or p.startswith(c + ".") or c.startswith(p + ".") for c in changed for p in paths)


def copy_update(doc, fields, prefix):
    """$set of the copies the source has, $unset of those it lacks."""
    values = pick(doc, fields)
    update = {}
    if values:
        update["$set"] = {prefix + n: v for n, v in values.items()}
    missing = [n for n, _ in fields if n not in values]
    if missing:
        update["$unset"] = {prefix + n: "" for n in missing}
    return update


def copy(db, target, key, into, fields, where=None, array=None):
    """A copy mapping: the source's fields into every target whose `key` is the source's _id
    (with `array`: into every element of that array whose `key` is)."""
    paths = source_paths(fields)

    def apply(change):
        if change["operationType"] == "delete" or not touches(change, paths):
            return 0
        doc = change.get("fullDocument")
        if doc is None:
            return 0  # deleted since; the copies keep what they have
        if array:
            db[target].update_many({array + "." + key: doc["_id"]},
                                   copy_update(doc, fields, "%s.$[e].%s." % (array, into)),
                                   array_filters=[{"e." + key: doc["_id"]}])
        else:
            db[target].update_many(dict({key: doc["_id"]}, **(where or {})), copy_update(doc, fields, into + "."))
        return 1
    return apply


def fill(db, source, target, key, into, fields, where):
    """fillNewTargets of a copy mapping, on the target's stream: a new or re-keyed target (or one
    whose `where` fields changed) gets the copy of the source it now references."""
    paths = [key] + list(where)

    def apply(change):
        if change["operationType"] == "delete" or not touches(change, paths):
            return 0
        doc = change.get("fullDocument")
        if doc is None or doc.get(key) is None:
            return 0
        src = db[source].find_one({"_id": doc[key]})
        if src is None or doc.get(into) == pick(src, fields):
            return 0  # nothing to copy, or the application wrote the copy already
        # `where` goes to the server, which decides whether the target is kept in line.
        db[target].update_one(dict({"_id": doc["_id"], key: doc[key]}, **where), copy_update(src, fields, into + "."))
        return 1
    return apply


def recent(db, child, target, parent_key, into, id_field, fields, sort_field, limit, only=None, keep=None):
    """A recent mapping: each parent keeps its newest `limit` children (by `sort_field`, the
    child's _id breaking ties) that match `only` (`keep` is the same test in Python)."""
    shown = [path for _, path in fields]
    # What decides where a child is shown, if at all; a change to one of these rebuilds.
    placement = [parent_key, sort_field] + list(only or {})
    order = {sort_field: -1, id_field: 1}

    def refill(parent):
        children = db[child].find(dict(only or {}, **{parent_key: parent})) \
            .sort([(sort_field, -1), ("_id", 1)]).limit(limit)
        db[target].update_one({"_id": parent}, {"$set": {into: [pick(c, fields) for c in children]}})

    def showing(child_id):
        return {p["_id"] for p in db[target].find({into + "." + id_field: child_id}, {"_id": 1})}

    def apply(change):
        op, child_id, doc = change["operationType"], change["documentKey"]["_id"], change.get("fullDocument")
        if op == "delete":
            parents = showing(child_id)  # only a parent that showed it changes
        elif not touches(change, shown + placement):
            return 0
        elif doc is None:
            return 0  # deleted since: its delete event refills
        elif op == "insert":
            if doc.get(parent_key) is None or (keep and not keep(doc)):
                return 0
            # Guarded: a refill for an earlier event may already show it (a refill reads the
            # children as they are now, not as they were at that event).
            db[target].update_one({"_id": doc[parent_key], into + "." + id_field: {"$ne": child_id}},
                                  {"$push": {into: {"$each": [pick(doc, fields)], "$sort": order, "$slice": limit}}})
            return 1
        elif op == "update" and not touches(change, placement):
            # Only shown fields changed: rewrite the element where its parent shows it.
            db[target].update_one({"_id": doc.get(parent_key), into + "." + id_field: child_id},
                                  {"$set": {"%s.$[e].%s" % (into, n): v for n, v in pick(doc, fields).items()}},
                                  array_filters=[{"e." + id_field: child_id}])
            return 1
        else:
            # Moved, re-dated, hidden or shown: it may enter or leave a newest N.
            parents = showing(child_id)
            if doc.get(parent_key) is not None and (not keep or keep(doc)):
                parents.add(doc[parent_key])
        for parent in parents:
            refill(parent)
        return len(parents)
    return apply


def main():
    uri, dbname = sys.argv[1], sys.argv[2]
    start = start_at(sys.argv[3:])
    client = pymongo.MongoClient(uri, w="majority")
    db = client[dbname]
    handlers = {
        "customers": [copy(db, "orders", "customerId", "customer", CUSTOMER_COPY, where=OPEN)],
        "products": [copy(db, "orders", "productId", "product", PRODUCT_COPY, array="items")],
        "hosts": [copy(db, "logmsgs", "hostId", "host", HOST_COPY)],
        "orders": [recent(db, "orders", "customers", "customerId", "recentOrders", "orderId", RECENT_ORDERS,
                          "createdAt", 5),
                   fill(db, "customers", "orders", "customerId", "customer", CUSTOMER_COPY, OPEN)],
        "reviews": [recent(db, "reviews", "products", "productId", "recentReviews", "reviewId", RECENT_REVIEWS,
                           "createdAt", 10, only=VISIBLE, keep=visible)],
        "logmsgs": [recent(db, "logmsgs", "hosts", "hostId", "recentLogs", "logId", RECENT_LOGS, "time", 100)],
    }
    progress = Progress()
    opened = threading.Barrier(len(handlers) + 1)

    def follow(coll, apply):
        try:
            with db[coll].watch(PIPELINE, full_document="updateLookup", start_at_operation_time=start) as stream:
                opened.wait()
                for change in stream:
                    progress.count(change, sum(a(change) for a in apply))
        except Exception:
            # One thread down means one collection no longer followed: stop the whole script.
            traceback.print_exc()
            os._exit(1)

    for coll, apply in handlers.items():
        threading.Thread(target=follow, args=(coll, apply), daemon=True).start()
    opened.wait()
    progress.ready()
    threading.Event().wait()


if __name__ == "__main__":
    main()
