#!/usr/bin/python3
"""The denormd demo: a sample shop on the embedded test server, denormd keeping its copies
true while a scripted stream of changes runs, and a before/after of what it did. Run it with
scripts/demo.sh (it seeds with the tests' sample shop, so the repository root is on PYTHONPATH)."""
import datetime
import os
import random
import re
import sys
import time

import pymongo

from tests.integration import seed as shop_seed
from tests.integration.harness import Denormd, Emulator, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
T0 = shop_seed.T0
SIZES = dict(customers=2000, products=500, orders=20000, hosts=20, logmsgs=30000, reviews=5000)


def say(text=""):
    print(text, flush=True)


def seed(db, rng):
    """The sample shop, with the recent arrays as they stand before denormd starts."""
    # The aggregate mappings find the parent a deleted child left in its pre-image.
    for name in ("reviews", "orders"):
        db.create_collection(name, changeStreamPreAndPostImages={"enabled": True})
    shop_seed.seed_shop(db, rng, indexes=True, **SIZES)
    shop_seed.fill_recent_arrays(db)
    return SIZES


def show_order(db, oid):
    o = db.orders.find_one({"_id": oid})
    items = ", ".join("%s (%s)" % (it["product"]["title"], it["product"]["sku"]) for it in o["items"])
    return "order %d [%s]  customer: %s <%s>, %s\n      items: %s" % (
        oid, o["status"], o["customer"]["name"], o["customer"].get("email"), o["customer"].get("city"), items)


def show_product(db, pid):
    p = db.products.find_one({"_id": pid})
    top = ", ".join("#%d %d*" % (r["reviewId"], r["stars"]) for r in p.get("recentReviews", [])[:5])
    rating = p.get("rating")
    stars = "rating %d reviews, %.2f* avg" % (rating["count"], rating.get("avg") or 0) if rating else "no rating yet"
    return "product %d '%s': %s; %d recent reviews, newest: %s" % (
        pid, p["title"], stars, len(p.get("recentReviews", [])), top)


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
        say("== starting: denormd run --mappings mappings  (8 mappings, 6 source collections)")
        denormd = Denormd(emulator.uri, "shop", mappings, env={})
        wait_until(lambda: denormd.get("/readyz")[0] == 200, timeout=20, message="denormd ready")

        oid = db.orders.find_one({"status": "NEW"})["_id"]
        order = db.orders.find_one({"_id": oid})
        cid, pid = order["customerId"], order["items"][0]["productId"]
        hid = shop_seed.host_id(7)
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
            p = db.products.find_one({"_id": pid})
            return (o["customer"]["name"] == "Ada Lovelace"
                    and p.get("rating", {}).get("count") == db.reviews.count_documents({"productId": pid, "hidden": {"$ne": True}})
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
