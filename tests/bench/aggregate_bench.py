#!/usr/bin/python3
"""The aggregate kind's benchmark: products keep the count, sum and average stars of their
reviews (the products-rating sample without min/max/latest).

Measured on one test server, each workload caught up from a backlog (the writes are made
while the reader is stopped, then it starts from a stored position):

- spread: review inserts (70%), star changes (20%) and deletes (10%) over many products;
- hot: inserts for one product only (write commands per 1,000 events);
- denormd in both modes (recompute; incremental: guarded deltas) against the strongest simple
  script: one watch thread on the reviews with pre-images, one `$inc` of count and sum per
  event (deltas from the pre-image for updates and deletes), its resume token stored every 100
  events;
- the script after a crash: it stops between an `$inc` and its next token save, restarts from
  the stored token, and applies those events again (what an application's `$inc` does);
- one parent with many children: the latency of one change's write over them (a recompute, or
  one delta).

    PYTHONPATH=. DENORMD_BIN=build/bin/denormd DENORMD_EMULATOR=build/tests/emulator/mongo-emulator \\
      /usr/bin/python3 -m tests.bench.aggregate_bench [--events N] [--children N] [--quick]
Prints a Markdown table and one JSON line.
"""
import argparse
import datetime
import json
import subprocess
import sys
import random
import time

import pymongo

from tests.integration.harness import DENORMD, Denormd, Emulator, mapping_folder, wait_until

PRODUCTS = 1000
FIELDS = {"count": {"$count": {}}, "sum": {"$sum": "stars"}, "avg": {"$avg": "stars"}}


def say(text):
    print(text, file=sys.stderr, flush=True)


def expected(db):
    groups = {g["_id"]: g for g in db.reviews.aggregate([
        {"$group": {"_id": "$productId", "count": {"$sum": 1}, "sum": {"$sum": "$stars"}}}])}
    return {p["_id"]: (groups[p["_id"]]["count"], groups[p["_id"]]["sum"]) if p["_id"] in groups else (0, 0)
            for p in db.products.find({}, {"_id": 1})}


def actual(db):
    return {p["_id"]: (p.get("rating", {}).get("count"), p.get("rating", {}).get("sum"))
            for p in db.products.find({}, {"rating": 1})}


def wrong(db):
    """How many products hold a count or sum other than their reviews'."""
    want, have = expected(db), actual(db)
    return sum(1 for k, v in want.items() if have.get(k) != v)


class Shop:
    def __init__(self, uri, dbname, rng):
        self.client = pymongo.MongoClient(uri)
        self.db = self.client[dbname]
        self.rng = rng
        self.next_id = 1
        self.live = []
        for name in ("products", "reviews"):
            self.db.create_collection(name, changeStreamPreAndPostImages={"enabled": True})
        self.db.reviews.create_index("productId")
        self.db.products.insert_many([{"_id": i} for i in range(1, PRODUCTS + 1)])

    def review(self, product):
        doc = {"_id": self.next_id, "productId": product, "stars": self.rng.randint(1, 5)}
        self.next_id += 1
        self.live.append(doc["_id"])
        return doc

    def spread(self, n):
        """n review writes over every product, in bulks of 500 (one change event each)."""
        ops = []
        for _ in range(n):
            r = self.rng.random()
            if r < 0.7 or len(self.live) < 10:
                ops.append(pymongo.InsertOne(self.review(self.rng.randint(1, PRODUCTS))))
            elif r < 0.9:
                # $inc always changes the document, so every write is one change event.
                ops.append(pymongo.UpdateOne({"_id": self.rng.choice(self.live)}, {"$inc": {"stars": 1}}))
            else:
                i = self.live.pop(self.rng.randrange(len(self.live)))
                ops.append(pymongo.DeleteOne({"_id": i}))
            if len(ops) == 500:
                self.db.reviews.bulk_write(ops)
                ops = []
        if ops:
            self.db.reviews.bulk_write(ops)

    def hot(self, n, product=1):
        for start in range(0, n, 500):
            self.db.reviews.insert_many([self.review(product) for _ in range(min(500, n - start))])


class Script:
    """One watch thread on the reviews, one $inc per event, a token saved every 100 events."""

    def __init__(self, db):
        self.db = db
        self.token = None
        self.events = 0

    def run(self, start_at=None, until=None, crash_after=None):
        # pymongo 3.11's watch() has no fullDocumentBeforeChange: the stage is written by hand.
        stage = {"fullDocument": "updateLookup", "fullDocumentBeforeChange": "whenAvailable"}
        stage.update(resumeAfter=self.token) if self.token else stage.update(startAtOperationTime=start_at)
        cursor = self.db.reviews.aggregate([{"$changeStream": stage}])
        applied = 0
        try:
            while cursor.alive:
                for ev in cursor:
                    self.apply(ev)
                    applied += 1
                    self.events += 1
                    if crash_after is not None and applied == crash_after:
                        return  # the process dies here: the last 1..99 events' token is not saved
                    if applied % 100 == 0:
                        self.token = ev["_id"]
                    if until is not None and until():
                        self.token = ev["_id"]
                        return
        finally:
            cursor.close()

    def apply(self, ev):
        op = ev["operationType"]
        before, after = ev.get("fullDocumentBeforeChange"), ev.get("fullDocument")
        if op == "insert":
            self.inc(after["productId"], 1, after.get("stars", 0))
        elif op == "delete" and before:
            self.inc(before["productId"], -1, -before.get("stars", 0))
        elif op == "update" and before:
            # The new value as of this event (fullDocument is the document now, maybe later).
            now = ev["updateDescription"]["updatedFields"].get("stars", before.get("stars", 0))
            self.inc(before["productId"], 0, now - before.get("stars", 0))

    def inc(self, product, count, stars):
        self.db.products.update_one({"_id": product}, {"$inc": {"rating.count": count, "rating.sum": stars}})


def update_commands(client):
    """Update commands the server has run (each bulk of updates is one)."""
    return client.admin.command("serverStatus")["metrics"]["commands"]["update"]["total"]


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / 100.0


def catch_up_denormd(uri, dbname, mappings, make_backlog, count_of, name="products-rating"):
    """Writes the backlog, then starts denormd from just before it: events/s."""
    began = datetime.datetime.utcnow().replace(microsecond=0)
    time.sleep(1.1)  # cluster times have second resolution
    make_backlog()
    client = pymongo.MongoClient(uri)
    updates0 = update_commands(client)
    t0 = time.time()
    d = Denormd(uri, dbname, mappings, "--start-at", began.strftime("%Y-%m-%dT%H:%M:%SZ"))
    # Every event read and every product exact. (Not the lag gauge: it is refreshed once a
    # second, which would round the catch-up time up to a whole second.)
    db = client[dbname]
    wait_until(lambda: d.metric_sum("denormd_events_total") >= count_of and wrong(db) == 0,
               timeout=900, interval=0.02, message="denormd caught up")
    elapsed = time.time() - t0
    out = {"seconds": elapsed, "events_per_s": count_of / elapsed, "cpu_us_per_event": cpu_seconds(d.proc.pid) * 1e6 / count_of,
           "update_commands": update_commands(client) - updates0,
           "recomputes": d.metric_sum("denormd_writes_total", mapping=name),
           "documents_modified": d.metric_sum("denormd_documents_modified_total"),
           "batches": d.metric_sum("denormd_batch_events_count")}
    d.stop()
    return out


def measure_mode(uri, mode, args, rng):
    """denormd in one mode on its own database: spread and hot catch-up, one parent with many
    children, and a hot parent streamed one insert at a time."""
    dbname = "agg_" + mode
    results = {}
    mapping = {"name": "products-rating", "kind": "aggregate", "mode": mode,
               "source": {"db": dbname, "collection": "reviews", "parentKey": "productId"},
               "target": {"db": dbname, "collection": "products"}, "into": "rating", "fields": FIELDS,
               # Incremental mode requires it (a parent arriving after its children).
               "fillNewTargets": mode == "incremental"}
    mappings = mapping_folder(mapping)
    shop = Shop(uri, dbname, rng)
    subprocess.run([DENORMD, "backfill", "--uri", uri, "--db", dbname, "--mappings", mappings],
                   check=True, capture_output=True)
    say("%s, spread: %d events" % (mode, args.events))
    results["spread"] = catch_up_denormd(uri, dbname, mappings, lambda: shop.spread(args.events), args.events)
    results["spread"]["wrong_products"] = wrong(shop.db)
    say("%s, hot parent: %d events" % (mode, args.events))
    results["hot"] = catch_up_denormd(uri, dbname, mappings, lambda: shop.hot(args.events), args.events)
    results["hot"]["recomputes_per_1000_events"] = results["hot"]["recomputes"] * 1000 / args.events
    results["hot"]["update_commands_per_1000_events"] = results["hot"]["update_commands"] * 1000 / args.events
    results["hot"]["wrong_products"] = wrong(shop.db)

    say("%s, one parent with %d children" % (mode, args.children))
    d = Denormd(uri, dbname, mappings)
    wait_until(lambda: d.get("/readyz")[0] == 200, timeout=20, message="denormd ready")
    shop.hot(args.children, product=2)
    # Every one of those events applied, not only the parent's values right (a recompute reads
    # the children as they are now, long before the stream has read all their events): the
    # measurements below must not run behind a backlog.
    wait_until(lambda: d.metric_sum("denormd_events_total") >= args.children,
               timeout=900, interval=0.05, message="many children read")
    time.sleep(1.2)  # the lag gauge is refreshed once a second
    wait_until(lambda: d.metric_sum("denormd_lag_seconds") == 0 and
               (shop.db.products.find_one({"_id": 2}).get("rating") or {}).get("count", 0) >= args.children,
               timeout=900, interval=0.05, message="many children applied")
    lat = []
    one = shop.db.reviews.find_one({"productId": 2}, {"_id": 1})["_id"]
    for i in range(5):
        was = shop.db.products.find_one({"_id": 2})["rating"]["sum"]
        t0 = time.time()
        shop.db.reviews.update_one({"_id": one}, {"$inc": {"stars": 1}})
        wait_until(lambda: shop.db.products.find_one({"_id": 2})["rating"]["sum"] == was + 1,
                   timeout=120, interval=0.002, message="the big parent's change applied")
        lat.append(time.time() - t0)
    say("%s, hot parent, streaming" % mode)
    client = pymongo.MongoClient(uri)
    u0, b0 = update_commands(client), d.metric_sum("denormd_batch_events_count")
    r0 = d.metric_sum("denormd_writes_total", mapping="products-rating")
    m0 = d.metric_sum("denormd_documents_modified_total")
    n = min(args.events, 5000)
    t0 = time.time()
    for _ in range(n):
        shop.db.reviews.insert_one(shop.review(3))
    wait_until(lambda: d.metric_sum("denormd_events_total") >= args.children + 5 + n and wrong(shop.db) == 0,
               timeout=300, interval=0.05, message="streamed hot parent applied")
    results["hot_streaming"] = {"events": n, "seconds": time.time() - t0,
                                "update_commands": update_commands(client) - u0,
                                "recomputes": d.metric_sum("denormd_writes_total", mapping="products-rating") - r0,
                                "documents_modified": d.metric_sum("denormd_documents_modified_total") - m0,
                                "batches": d.metric_sum("denormd_batch_events_count") - b0}
    d.stop()
    t0 = time.time()
    list(shop.db.reviews.aggregate([{"$match": {"productId": {"$in": [2]}}},
                                    {"$group": {"_id": "$productId", "n": {"$sum": 1}, "s": {"$sum": "$stars"}}}]))
    results["big_parent"] = {"children": args.children, "latency_s": sorted(lat)[len(lat) // 2],
                             "aggregation_alone_s": time.time() - t0}
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--children", type=int, default=100000)
    ap.add_argument("--quick", action="store_true", help="2,000 events and 10,000 children")
    args = ap.parse_args()
    if args.quick:
        args.events, args.children = 2000, 10000
    emulator = Emulator()
    results = {"events": args.events}
    try:
        uri = emulator.uri
        for mode in ("recompute", "incremental"):
            results[mode] = measure_mode(uri, mode, args, random.Random(7))

        say("the script")
        # The script, on its own copy of the data (same shape, same backlog size).
        sdb = pymongo.MongoClient(uri)["script"]
        script_shop = Shop(uri, "script", random.Random(7))
        sdb.products.update_many({}, {"$set": {"rating": {"count": 0, "sum": 0}}})
        start = sdb.command("ping")["operationTime"]
        script_shop.spread(args.events)
        script = Script(sdb)
        t0 = time.time()
        c0 = time.process_time()
        script.run(start_at=start, until=lambda: script.events >= args.events)
        elapsed = time.time() - t0
        results["script_spread"] = {"seconds": elapsed, "events_per_s": args.events / elapsed,
                                    "cpu_us_per_event": (time.process_time() - c0) * 1e6 / args.events,
                                    "write_commands": args.events, "wrong_products": wrong(sdb)}
        # A crash between an $inc and the next token save, then a restart from the token.
        script_shop.spread(1000)
        before = script.events
        script.run(crash_after=150)
        script.run(until=lambda: script.events >= before + 1000 + 50)  # 150 applied; 50 of them again
        results["script_after_crash"] = {"wrong_products": wrong(sdb), "events_applied_twice": 50}
    finally:
        emulator.stop()

    r, i, n = results["recompute"], results["incremental"], results["script_spread"]
    print("| workload | denormd, recompute | denormd, incremental | one watch thread, $inc per event |")
    print("|---|---|---|---|")
    print("| spread catch-up, source events/s | %.0f | %.0f | %.0f |" %
          (r["spread"]["events_per_s"], i["spread"]["events_per_s"], n["events_per_s"]))
    print("| CPU per event, µs (denormd process / script process) | %.0f | %.0f | %.0f |" %
          (r["spread"]["cpu_us_per_event"], i["spread"]["cpu_us_per_event"], n["cpu_us_per_event"]))
    print("| %d events: update commands; documents modified | %d; %d | %d; %d | %d; %d |" %
          (args.events, r["spread"]["update_commands"], r["spread"]["documents_modified"],
           i["spread"]["update_commands"], i["spread"]["documents_modified"], n["write_commands"], n["write_commands"]))
    print("| products wrong afterwards | %d | %d | %d |" %
          (r["spread"]["wrong_products"], i["spread"]["wrong_products"], n["wrong_products"]))
    print("| products wrong after a crash and restart | 0 (replay recomputes) | 0 (guarded deltas) | %d |" %
          results["script_after_crash"]["wrong_products"])
    print("| hot parent catch-up, events/s | %.0f | %.0f | |" % (r["hot"]["events_per_s"], i["hot"]["events_per_s"]))
    print("| hot parent catch-up: write ops per 1,000 events (update commands) | %.1f (%.1f) | %.1f (%.1f) | 1,000 \\$inc |" %
          (r["hot"]["recomputes_per_1000_events"], r["hot"]["update_commands_per_1000_events"],
           i["hot"]["recomputes_per_1000_events"], i["hot"]["update_commands_per_1000_events"]))
    rs, is_ = r["hot_streaming"], i["hot_streaming"]
    print("| hot parent, streamed one insert at a time: events; batches; parent updates | %d; %d; %d | %d; %d; %d | %d; -; %d |" %
          (rs["events"], rs["batches"], rs["documents_modified"], is_["events"], is_["batches"], is_["documents_modified"],
           rs["events"], rs["events"]))
    print("| one change under a parent with %d children, s (median of 5; a fresh aggregation of it) | %.3f (%.3f) | %.3f | |" %
          (r["big_parent"]["children"], r["big_parent"]["latency_s"], r["big_parent"]["aggregation_alone_s"],
           i["big_parent"]["latency_s"]))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
