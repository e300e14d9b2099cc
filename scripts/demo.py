#!/usr/bin/python3
"""The denormd demo: a sample shop on the embedded test server, denormd keeping its copies
true while a scripted stream of changes runs, and a before/after of what it did."""
import datetime
import os
import random
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from harness import Denormd, Emulator, wait_until  # noqa: E402

import pymongo  # noqa: E402

T0 = datetime.datetime(2024, 1, 1)


def say(text=""):
    print(text, flush=True)


def seed(db, rng):
    customers, products, orders, hosts, logs, reviews = 2000, 500, 20000, 20, 30000, 5000
    db.customers.insert_many([{"_id": i, "name": "Customer %d" % i, "email": "c%d@example.com" % i,
                               "address": {"city": rng.choice(["Oslo", "Lyon", "Porto", "Kyoto"])}}
                              for i in range(1, customers + 1)])
    db.products.insert_many([{"_id": i, "title": "Product %d" % i, "sku": "SKU-%05d" % i, "price": 5 + i % 90}
                             for i in range(1, products + 1)])
    db.hosts.insert_many([{"_id": "web-%02d" % i, "name": "web-%02d" % i, "ipaddr": "10.0.0.%d" % i}
                          for i in range(1, hosts + 1)])
    cust = {c["_id"]: c for c in db.customers.find()}
    prod = {p["_id"]: p for p in db.products.find()}
    batch = []
    for i in range(1, orders + 1):
        c = cust[rng.randint(1, customers)]
        items = []
        for _ in range(rng.randint(1, 3)):
            p = prod[rng.randint(1, products)]
            items.append({"productId": p["_id"], "qty": rng.randint(1, 3), "priceAtOrder": p["price"],
                          "product": {"title": p["title"], "sku": p["sku"]}})
        batch.append({"_id": i, "customerId": c["_id"], "status": rng.choice(["NEW", "PAID", "DELIVERED"]),
                      "total": sum(it["priceAtOrder"] * it["qty"] for it in items),
                      "createdAt": T0 + datetime.timedelta(minutes=i),
                      "customer": {"name": c["name"], "email": c["email"], "city": c["address"]["city"]},
                      "items": items})
        if len(batch) == 2000:
            db.orders.insert_many(batch)
            batch = []
    host = {h["_id"]: h for h in db.hosts.find()}
    for start in range(1, logs + 1, 5000):
        db.logmsgs.insert_many([{"_id": i, "hostId": h, "time": T0 + datetime.timedelta(seconds=i),
                                 "message": "GET /item/%d 200" % rng.randint(1, 999),
                                 "host": {"name": host[h]["name"], "ipaddr": host[h]["ipaddr"]}}
                                for i in range(start, min(start + 5000, logs + 1))
                                for h in ["web-%02d" % (1 + i % hosts)]])
    db.reviews.insert_many([{"_id": i, "productId": 1 + i % products, "stars": rng.randint(1, 5),
                             "text": "Review %d: %s" % (i, rng.choice(["great", "fine", "meh", "broke"])),
                             "createdAt": T0 + datetime.timedelta(hours=i)} for i in range(1, reviews + 1)])
    # The recent arrays as they stand before denormd starts.
    for coll, child, key, sort, limit, fields in (
            ("products", "reviews", "productId", "createdAt", 10,
             (("reviewId", "_id"), ("stars", "stars"), ("excerpt", "text"), ("createdAt", "createdAt"))),
            ("hosts", "logmsgs", "hostId", "time", 100, (("logId", "_id"), ("time", "time"), ("message", "message"))),
            ("customers", "orders", "customerId", "createdAt", 5,
             (("orderId", "_id"), ("total", "total"), ("status", "status"), ("createdAt", "createdAt")))):
        groups = {}
        for d in db[child].find({}, {key: 1, **{s: 1 for _, s in fields}}):
            groups.setdefault(d[key], []).append(d)
        into = {"products": "recentReviews", "hosts": "recentLogs", "customers": "recentOrders"}[coll]
        for parent, kids in groups.items():
            kids.sort(key=lambda d: (-d[sort].timestamp(), d["_id"]))
            db[coll].update_one({"_id": parent}, {"$set": {into: [{n: k[s] for n, s in fields} for k in kids[:limit]]}})
    return dict(customers=customers, products=products, orders=orders, hosts=hosts, logs=logs, reviews=reviews)


def show_order(db, oid):
    o = db.orders.find_one({"_id": oid})
    items = ", ".join("%s (%s)" % (it["product"]["title"], it["product"]["sku"]) for it in o["items"])
    return "order %d [%s]  customer: %s <%s>, %s\n      items: %s" % (
        oid, o["status"], o["customer"]["name"], o["customer"].get("email"), o["customer"].get("city"), items)


def show_product(db, pid):
    p = db.products.find_one({"_id": pid})
    top = ", ".join("#%d %d*" % (r["reviewId"], r["stars"]) for r in p.get("recentReviews", [])[:5])
    return "product %d '%s': %d recent reviews, newest: %s" % (pid, p["title"], len(p.get("recentReviews", [])), top)


def show_host(db, hid):
    h = db.hosts.find_one({"_id": hid})
    copies = db.logmsgs.count_documents({"hostId": hid, "host.ipaddr": h["ipaddr"]})
    total = db.logmsgs.count_documents({"hostId": hid})
    newest = h.get("recentLogs", [{}])[0].get("message")
    return "host %s ip %s: %d of %d log messages carry this ip; recentLogs has %d, newest '%s'" % (
        hid, h["ipaddr"], copies, total, len(h.get("recentLogs", [])), newest)


def histogram_quantile(d, name, q):
    buckets = []
    for (n, labels), v in d.metrics().items():
        if n == name + "_bucket":
            le = dict(labels)["le"]
            buckets.append((float("inf") if le == "+Inf" else float(le), v))
    merged = {}
    for le, v in buckets:
        merged[le] = merged.get(le, 0) + v
    items = sorted(merged.items())
    if not items or items[-1][1] == 0:
        return float("nan")
    target = q * items[-1][1]
    for le, count in items:
        if count >= target:
            return le
    return float("inf")


def main():
    rng = random.Random(7)
    emulator = Emulator()
    denormd = None
    try:
        client = pymongo.MongoClient(emulator.uri)
        db = client.shop
        say("== seeding the sample shop on the embedded test server (%s)" % emulator.uri)
        started = time.time()
        counts = seed(db, rng)
        say("   %s in %.1fs" % (", ".join("%d %s" % (v, k) for k, v in counts.items()), time.time() - started))

        mappings = os.path.join(HERE, "..", "mappings")
        say("== starting: denormd run --mappings mappings  (6 mappings, 6 source collections)")
        denormd = Denormd(emulator.uri, "shop", mappings, env={})
        wait_until(lambda: denormd.get("/readyz")[0] == 200, timeout=20, message="denormd ready")

        oid = db.orders.find_one({"status": "NEW"})["_id"]
        order = db.orders.find_one({"_id": oid})
        cid, pid = order["customerId"], order["items"][0]["productId"]
        hid = "web-07"
        say("\n-- before")
        say("   " + show_order(db, oid))
        say("   " + show_product(db, pid))
        say("   " + show_host(db, hid))

        say("\n== driving changes: a customer moves and renames, a product is retitled, 40 new reviews,")
        say("   one deleted, 300 new log lines, a host IP change fanning out to every log line of")
        say("   that host, and 3,000 random background edits elsewhere")
        t0 = time.time()
        db.customers.update_one({"_id": cid}, {"$set": {"name": "Ada Lovelace", "address.city": "London"}})
        db.products.update_one({"_id": pid}, {"$set": {"title": "Analytical Engine", "sku": "AE-1843"}})
        now = T0 + datetime.timedelta(days=3650)
        for i in range(40):
            db.reviews.insert_one({"_id": 900000 + i, "productId": pid, "stars": 1 + i % 5,
                                   "text": "fresh review %d" % i, "createdAt": now + datetime.timedelta(minutes=i)})
        db.reviews.delete_one({"_id": 900039})
        for i in range(300):
            db.logmsgs.insert_one({"_id": 800000 + i, "hostId": hid, "time": now + datetime.timedelta(seconds=i),
                                   "message": "POST /checkout %d" % i})
        db.hosts.update_one({"_id": hid}, {"$set": {"ipaddr": "192.168.7.7"}})
        def other(limit, skip):
            while True:
                n = rng.randint(1, limit)
                if n != skip:
                    return n
        for i in range(3000):
            k = rng.random()
            if k < 0.5:
                db.customers.update_one({"_id": other(counts["customers"], cid)},
                                        {"$set": {"email": "new%d@example.com" % i}})
            elif k < 0.6:
                db.products.update_one({"_id": other(counts["products"], pid)},
                                       {"$set": {"title": "Product v%d" % i}})
            else:
                db.customers.update_one({"_id": other(counts["customers"], cid)},
                                        {"$set": {"lastLogin": now}})  # touches no mapped field
        written = time.time() - t0

        def caught_up():
            o = db.orders.find_one({"_id": oid})
            h = db.hosts.find_one({"_id": hid})
            return (o["customer"]["name"] == "Ada Lovelace"
                    and db.logmsgs.count_documents({"hostId": hid, "host.ipaddr": {"$ne": h["ipaddr"]}}) == 0
                    and denormd.metric_sum("denormd_lag_seconds") == 0
                    and denormd.metric_sum("denormd_events_total") >= 3343)
        wait_until(caught_up, timeout=180, interval=0.2, message="denormd to catch up")
        elapsed = time.time() - t0

        say("\n-- after")
        say("   " + show_order(db, oid))
        say("   " + show_product(db, pid))
        say("   " + show_host(db, hid))

        events = denormd.metric_sum("denormd_events_total")
        say("\n-- denormd metrics (http://127.0.0.1:%d/metrics)" % denormd.port)
        say("   events read           %8d  (3,343 scripted changes, plus the change events denormd's own" % events)
        say("                                   writes cause on watched collections, recognized as no-ops)")
        say("   throughput            %8.0f events/s (changes written in %.1fs, all applied %.1fs after the first)" %
            (events / elapsed, written, elapsed))
        say("   writes ok             %8d" % denormd.metric_sum("denormd_writes_total", result="ok"))
        say("   documents modified    %8d" % denormd.metric_sum("denormd_documents_modified_total"))
        say("   apply latency         p50 <= %.3fs, p99 <= %.3fs" %
            (histogram_quantile(denormd, "denormd_apply_latency_seconds", 0.5),
             histogram_quantile(denormd, "denormd_apply_latency_seconds", 0.99)))
        say("   lag now               %8.1fs" % denormd.metric_sum("denormd_lag_seconds"))
        code = denormd.stop()
        say("\n== denormd stopped (exit %d); checkpoints stored: %d" % (code, db.denormd_checkpoints.count_documents({})))
        return 0 if code == 0 else 1
    finally:
        if denormd:
            denormd.kill9()
        emulator.stop()


if __name__ == "__main__":
    sys.exit(main())
