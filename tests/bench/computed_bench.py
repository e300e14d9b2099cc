"""What computed fields cost: a catch-up of the same source changes by a copy mapping of plain
paths and by the same mapping with computed fields, side by side in one run.

    python3 -m tests.bench.computed_bench [--events N] [--targets-per-source K] [--runs R]

(from the repository root). Each run starts a fresh test server, seeds customers and orders,
writes N customer updates while denormd is stopped, then starts `denormd run` and times the
catch-up until everything is applied: source events per second, and denormd's CPU per event
(from /proc; the server's own work is not in it). Plain and computed runs alternate. The
copies are checked against values computed here in Python, so a wrong result fails the run.
Results are in docs/performance.md ("Computed fields").
"""
import argparse
import json
import os
import random
import statistics
import time

import pymongo

from tests.integration.harness import Denormd, Emulator, mapping_folder, wait_until

CLK_TCK = os.sysconf("SC_CLK_TCK")


def mapping(db, computed):
    fields = {"name": "name", "email": "email", "city": "address.city"}
    if computed:
        fields = {"name": "name",
                  "display": {"$concat": ["$name", " <", "$email", ">"]},
                  "city": {"$toUpper": {"$ifNull": ["$address.city", "unknown"]}}}
    return {"name": "orders-customer", "kind": "copy",
            "source": {"db": db, "collection": "customers"},
            "target": {"db": db, "collection": "orders", "key": "customerId"},
            "into": "customer", "fields": fields}


def expected(c, computed):
    if not computed:
        return {"name": c["name"], "email": c["email"], "city": c["address"]["city"]}
    return {"name": c["name"], "display": "%s <%s>" % (c["name"], c["email"]),
            "city": c["address"]["city"].upper()}


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def one_run(computed, args, seed):
    emulator = Emulator()
    client = pymongo.MongoClient(emulator.uri)
    db = client["bench"]
    rnd = random.Random(seed)
    sources = max(1, args.events // 20)
    try:
        db.customers.insert_many([{"_id": i, "name": "n%d" % i, "email": "e%d@x" % i,
                                   "address": {"city": "c%d" % i}} for i in range(sources)])
        db.orders.insert_many([{"_id": i, "customerId": i % sources}
                               for i in range(sources * args.targets_per_source)])
        db.orders.create_index("customerId")
        folder = mapping_folder(mapping("bench", computed))
        d = Denormd(emulator.uri, "bench", folder)
        wait_until(lambda: d.get("/readyz")[0] == 200, timeout=20, message="denormd ready")
        d.stop()
        for k in range(args.events):
            i = rnd.randrange(sources)
            change = rnd.randrange(3)
            if change == 0:
                db.customers.update_one({"_id": i}, {"$set": {"name": "n%d-%d" % (i, k)}})
            elif change == 1:
                db.customers.update_one({"_id": i}, {"$set": {"email": "e%d-%d@x" % (i, k)}})
            else:
                db.customers.update_one({"_id": i}, {"$set": {"address.city": "city%d" % k}})
        t = client.admin.command("ping")["operationTime"]
        d = Denormd(emulator.uri, "bench", folder)
        began = time.monotonic()
        cpu0 = cpu_seconds(d.proc.pid)
        status = 0
        while status != 200 and time.monotonic() - began < 600:
            # Waits of 4 s: the harness's HTTP client gives up after 5. 404 until the pipelines
            # run (the start is part of the catch-up's time).
            status, _ = d.get("/applied?after=%d:%d&timeout=4" % (t.time, t.inc))
            assert status in (200, 404, 408), status
            if status == 404:
                time.sleep(0.02)
        elapsed = time.monotonic() - began
        cpu = cpu_seconds(d.proc.pid) - cpu0
        assert status == 200, status
        d.stop()
        customers = {c["_id"]: c for c in db.customers.find()}
        for o in db.orders.find():
            want = expected(customers[o["customerId"]], computed)
            if o.get("customer") != want:
                raise AssertionError("order %s holds %s, not %s" % (o["_id"], o.get("customer"), want))
        return {"events_per_s": args.events / elapsed, "cpu_us_per_event": cpu * 1e6 / args.events,
                "seconds": elapsed}
    finally:
        client.close()
        emulator.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--events", type=int, default=20000)
    p.add_argument("--targets-per-source", type=int, default=3)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--json", help="write the results here")
    args = p.parse_args()
    results = {"plain": [], "computed": []}
    for r in range(args.runs):
        for kind in ("plain", "computed"):
            results[kind].append(one_run(kind == "computed", args, seed=r))
    print("%d source updates, %d targets per source, %d runs each (median; spread)" %
          (args.events, args.targets_per_source, args.runs))
    print("%-10s %16s %22s" % ("mapping", "events/s", "CPU us/event (denormd)"))
    for kind, runs in results.items():
        rates = [x["events_per_s"] for x in runs]
        cpus = [x["cpu_us_per_event"] for x in runs]
        print("%-10s %8.0f (%.0f-%.0f) %10.1f (%.1f-%.1f)" % (
            kind, statistics.median(rates), min(rates), max(rates),
            statistics.median(cpus), min(cpus), max(cpus)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
