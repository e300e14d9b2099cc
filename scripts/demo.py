#!/usr/bin/python3
"""The denormd demo: a sample shop on the embedded test server, denormd keeping its copies
true while a scripted stream of changes runs, and a before/after of what it did. Run it with
scripts/demo.sh (it seeds with the tests' sample shop, so the repository root is on PYTHONPATH).

It is done when what it shows is true: the values it prints are checked against the sources,
and denormd reports every change applied (GET /applied). `--quick` (the ctest `demo` test)
seeds a smaller shop and makes fewer background edits."""
import argparse
import datetime
import json
import os
import random
import sys
import time

import pymongo

from tests.integration import seed as shop_seed
from tests.integration.harness import Denormd, Emulator, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
T0 = shop_seed.T0
FULL = dict(customers=2000, products=500, orders=20000, hosts=20, logmsgs=30000, reviews=5000)
QUICK = dict(customers=500, products=100, orders=4000, hosts=20, logmsgs=5000, reviews=1000)
MAPPINGS = os.path.join(HERE, "..", "mappings")


def say(text=""):
    print(text, flush=True)


def seed(db, rng, sizes):
    """The sample shop, with the recent arrays as they stand before denormd starts."""
    # The aggregate mappings find the parent a deleted child left in its pre-image.
    for name in ("reviews", "orders"):
        db.create_collection(name, changeStreamPreAndPostImages={"enabled": True})
    shop_seed.seed_shop(db, rng, indexes=True, **sizes)
    shop_seed.fill_recent_arrays(db)


def show_order(db, oid):
    o = db.orders.find_one({"_id": oid})
    items = ", ".join("%s (%s)" % (it["product"]["title"], it["product"]["sku"]) for it in o["items"])
    return "order %d [%s]  customer: %s <%s>, %s\n      items: %s" % (
        oid, o["status"], o["customer"]["name"], o["customer"].get("email"), o["customer"].get("city"), items)


def show_customer(db, cid):
    c = db.customers.find_one({"_id": cid})
    if "orderCount" not in c:
        return "customer %d '%s': no orderCount yet" % (cid, c["name"])
    return "customer %d '%s': %d orders, totalSpent %s, itemsBought %s (the quantities of their order lines, " \
        "summed by the server)" % (cid, c["name"], c["orderCount"], c.get("totalSpent"), c.get("itemsBought"))


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
    newest = h.get("recentLogs", [{}])[0]
    label = (db.logmsgs.find_one({"_id": newest.get("logId")}) or {}).get("host", {}).get("label")
    return "host %s ip %s: %d of %d log messages carry this ip; recentLogs has %d, newest '%s'\n" \
        "      its host label (computed by the server): '%s'" % (
            hid, h["ipaddr"], copies, total, len(h.get("recentLogs", [])), newest.get("message"), label)


def wrong_in_what_is_shown(db, oid, pid, hid):
    """What the demo prints that the sources contradict (empty when every shown value is true)."""
    wrong = []
    o = db.orders.find_one({"_id": oid})
    c = db.customers.find_one({"_id": o["customerId"]})
    want = {"name": c["name"], "email": c.get("email"), "city": c.get("address", {}).get("city")}
    if {k: o["customer"].get(k) for k in want} != want:
        wrong.append("order %d: customer %r, the customer says %r" % (oid, o["customer"], want))
    for it in o["items"]:
        p = db.products.find_one({"_id": it["productId"]})
        if (it["product"]["title"], it["product"]["sku"]) != (p["title"], p["sku"]):
            wrong.append("order %d: item product %r, the product says %r" % (oid, it["product"], (p["title"], p["sku"])))
    c = db.customers.find_one({"_id": o["customerId"]})
    counted = list(db.orders.find({"customerId": c["_id"], "status": {"$ne": "CANCELLED"}}))
    want = {"orderCount": len(counted), "totalSpent": sum(x["total"] for x in counted),
            "itemsBought": sum(it["qty"] for x in counted for it in x["items"])}
    if {k: c.get(k) for k in want} != want:
        wrong.append("customer %d: %r, their orders say %r" % (c["_id"], {k: c.get(k) for k in want}, want))
    p = db.products.find_one({"_id": pid})
    visible = list(db.reviews.find({"productId": pid, "hidden": {"$ne": True}}))
    stars = [r["stars"] for r in visible]
    rating = p.get("rating") or {}
    if rating.get("count") != len(stars) or (stars and abs(rating.get("avg", 0) - sum(stars) / len(stars)) > 1e-9):
        wrong.append("product %d: rating %r, its %d visible reviews say count %d avg %s" % (
            pid, rating, len(stars), len(stars), sum(stars) / len(stars) if stars else None))
    if p.get("recentReviews") != shop_seed.expected_recent(db, "recentReviews", pid):
        wrong.append("product %d: recentReviews differ from its newest visible reviews" % pid)
    h = db.hosts.find_one({"_id": hid})
    label = shop_seed.host_label(h)
    stale = db.logmsgs.count_documents({"hostId": hid, "$or": [{"host.ipaddr": {"$ne": h["ipaddr"]}},
                                                               {"host.label": {"$ne": label}}]})
    if stale:
        wrong.append("host %s: %d log messages do not carry its ip %s and label %r" % (hid, stale, h["ipaddr"], label))
    if h.get("recentLogs") != shop_seed.expected_recent(db, "recentLogs", hid):
        wrong.append("host %s: recentLogs differ from its newest log messages" % hid)
    return wrong


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


def mapping_names():
    return sorted(f[:-5] for f in os.listdir(MAPPINGS) if f.endswith(".json"))


def backfills_done(denormd, names):
    progress = {dict(ls).get("mapping"): v for (n, ls), v in denormd.metrics().items()
                if n == "denormd_backfill_progress"}
    return all(progress.get(name) == 1 for name in names)


def wait_applied(denormd, operation_time, timeout):
    """GET /applied until denormd says every mapping applied every change up to operation_time."""
    after = "%d:%d" % (operation_time.time, operation_time.inc)
    deadline = time.time() + timeout
    while True:
        left = max(1, min(60, int(deadline - time.time())))
        status, body = denormd.get("/applied?after=%s&timeout=%d" % (after, left))
        if status == 200:
            return body.strip()
        if status != 408 or time.time() >= deadline:
            raise AssertionError("GET /applied?after=%s answered %d: %s" % (after, status, body))


def drive_changes(db, session, rng, sizes, cid, pid, hid, edits):
    """The scripted changes; returns (changes written, how many of them change no mapped field)."""
    db.customers.update_one({"_id": cid}, {"$set": {"name": "Ada Lovelace", "address.city": "London"}},
                            session=session)
    db.products.update_one({"_id": pid}, {"$set": {"title": "Analytical Engine", "sku": "AE-1843"}}, session=session)
    now = T0 + datetime.timedelta(days=3650)
    for i in range(40):
        db.reviews.insert_one({"_id": 900000 + i, "productId": pid, "stars": 1 + i % 5,
                               "text": "fresh review %d" % i, "createdAt": now + datetime.timedelta(minutes=i)},
                              session=session)
    db.reviews.delete_one({"_id": 900039}, session=session)
    for i in range(300):
        db.logmsgs.insert_one({"_id": 800000 + i, "hostId": hid, "time": now + datetime.timedelta(seconds=i),
                               "message": "POST /checkout %d" % i}, session=session)
    db.hosts.update_one({"_id": hid}, {"$set": {"ipaddr": "192.168.7.7"}}, session=session)
    written, unmapped = 2 + 40 + 1 + 300 + 1, 0

    def other(limit, skip):
        while True:
            n = rng.randint(1, limit)
            if n != skip:
                return n
    for i in range(edits):
        k = rng.random()
        if k < 0.5:
            db.customers.update_one({"_id": other(sizes["customers"], cid)},
                                    {"$set": {"email": "new%d@example.com" % i}}, session=session)
        elif k < 0.6:
            db.products.update_one({"_id": other(sizes["products"], pid)},
                                   {"$set": {"title": "Product v%d" % i}}, session=session)
        else:
            db.customers.update_one({"_id": other(sizes["customers"], cid)},
                                    {"$set": {"lastLogin": now}}, session=session)  # touches no mapped field
            unmapped += 1
        written += 1
    return written, unmapped


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="a smaller shop and 500 background edits (the ctest `demo` test)")
    ap.add_argument("--edits", type=int, help="background edits (default 3000, 500 with --quick)")
    args = ap.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    edits = args.edits if args.edits is not None else (500 if args.quick else 3000)

    rng = random.Random(7)
    emulator = Emulator()
    denormd = None
    try:
        client = pymongo.MongoClient(emulator.uri)
        db = client.shop
        say("== seeding the sample shop on the embedded test server (%s)" % emulator.uri)
        started = time.time()
        seed(db, rng, sizes)
        say("   %s in %.1fs" % (", ".join("%d %s" % (v, k) for k, v in sizes.items()), time.time() - started))

        names = mapping_names()
        say("== starting: denormd run --mappings mappings  (%d mappings)" % len(names))
        denormd = Denormd(emulator.uri, "shop", MAPPINGS, env={}, auto_backfill=True)
        started = time.time()
        wait_until(lambda: denormd.get("/readyz")[0] == 200, timeout=30, message="denormd ready")
        # Every mapping is new to this database, so denormd backfills them all first, in the
        # background while the streams run: the data seeded before it started gets its copies,
        # arrays and ratings.
        wait_until(lambda: backfills_done(denormd, names), timeout=240, interval=0.2,
                   message="the automatic backfill of the %d new mappings" % len(names))
        say("   ready; the automatic backfill of the %d new mappings took %.1fs" % (len(names), time.time() - started))

        oid = db.orders.find_one({"status": "NEW"})["_id"]
        order = db.orders.find_one({"_id": oid})
        cid, pid = order["customerId"], order["items"][0]["productId"]
        hid = shop_seed.host_id(7)
        say("\n-- before")
        say("   " + show_order(db, oid))
        say("   " + show_customer(db, cid))
        say("   " + show_product(db, pid))
        say("   " + show_host(db, hid))

        say("\n== driving changes: a customer moves and renames, a product is retitled, 40 new reviews,")
        say("   one deleted, 300 new log lines, a host IP change fanning out to every log line of")
        say("   that host, and %s random background edits elsewhere" % format(edits, ","))
        events_before = denormd.metric_sum("denormd_events_total")
        t0 = time.time()
        with client.start_session(causal_consistency=True) as session:
            written, unmapped = drive_changes(db, session, rng, sizes, cid, pid, hid, edits)
            last_write = session.operation_time
        wrote_for = time.time() - t0
        applied = wait_applied(denormd, last_write, timeout=180)
        elapsed = time.time() - t0
        wrong = wrong_in_what_is_shown(db, oid, pid, hid)

        say("\n-- after (GET /applied?after=%d:%d: %s)" % (last_write.time, last_write.inc, applied))
        say("   " + show_order(db, oid))
        say("   " + show_customer(db, cid))
        say("   " + show_product(db, pid))
        say("   " + show_host(db, hid))

        events = denormd.metric_sum("denormd_events_total") - events_before
        say("\n-- denormd metrics (http://127.0.0.1:%d/metrics)" % denormd.port)
        say("   changes written       %8d  (%d of them change no mapped field: the server's change-stream" % (written, unmapped))
        say("                                   filter drops those, they never reach denormd)")
        own = events - (written - unmapped)
        say("   events read           %8d  (the other %d%s)" % (events, written - unmapped, (
            ", and %d of denormd's own writes to collections it watches, which it sees as no-ops" % own
            if own > 0 else "; denormd's own writes change no watched field, so none come back")))
        say("   throughput            %8.0f events/s (changes written in %.1fs, all applied %.1fs after the first)" %
            (events / elapsed, wrote_for, elapsed))
        say("   writes ok             %8d" % denormd.metric_sum("denormd_writes_total", result="ok"))
        say("   documents modified    %8d" % denormd.metric_sum("denormd_documents_modified_total"))
        say("   apply latency         p50 <= %.3fs, p99 <= %.3fs" %
            (histogram_quantile(denormd, "denormd_apply_latency_seconds", 0.5),
             histogram_quantile(denormd, "denormd_apply_latency_seconds", 0.99)))
        say("   lag now               %8.1fs" % denormd.metric_sum("denormd_lag_seconds"))
        page_status = json.loads(denormd.get("/api/v1/status")[1])
        streaming = sum(1 for n in page_status["namespaces"] if n["streaming"])
        say("\n-- the operator's page: http://127.0.0.1:%d/  (%d of %d namespaces streaming, %d mappings,"
            % (denormd.port, streaming, len(page_status["namespaces"]), len(page_status["mappings"])))
        say("   their backfills and dead letters; its data as JSON at /api/v1/status)")
        if sys.stdin.isatty() and sys.stdout.isatty():
            input("   denormd keeps running so you can open it; press Enter to stop ")
        code = denormd.stop()
        say("\n== denormd stopped (exit %d); checkpoints stored: %d" % (code, db.denormd_checkpoints.count_documents({})))
        if wrong:
            say("\nFAILED: what the demo shows is not what the sources say:")
            for w in wrong:
                say("   " + w)
            return 1
        return 0 if code == 0 else 1
    finally:
        if denormd:
            denormd.kill9()
        emulator.stop()


if __name__ == "__main__":
    sys.exit(main())
