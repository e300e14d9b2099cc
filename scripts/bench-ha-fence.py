#!/usr/bin/env python3
"""What the --ha fence costs per batch: the same load against a fresh test server, once
without --ha and once with it (one instance, so it holds every namespace and every batch is
a fenced transaction). Two measures:
  latency: 200 renames one at a time; each waits until every open order of the customer
           shows the new name (the whole path: stream, batch, write, visible). p50 and p90.
  burst:   2,000 renames of random customers sent at once; the time until every order is in
           line, and batches/s over it (from denormd_batch_events_count).
Run from the worktree root: DENORMD_BUILD_DIR=build python3 scripts/bench-ha-fence.py [ARGS]
(ARGS go to both runs, e.g. --linger-ms 0)."""
import os
import random
import statistics
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import pymongo  # noqa: E402

from tests.integration.harness import Denormd, Emulator, wait_until, write_mappings  # noqa: E402
from tests.integration.seed import OPEN  # noqa: E402
from tests.integration.shop import Shop  # noqa: E402


def run(ha):
    emu = Emulator()
    db_name = "bench" + uuid.uuid4().hex[:6]
    client = pymongo.MongoClient(emu.uri)
    db = client[db_name]
    shop = Shop(db, seed=7)
    shop.seed()
    shop.fill_recent_arrays()
    extra = (("--ha", "--instance-id", "solo") if ha else ()) + tuple(sys.argv[1:])
    d = Denormd(emu.uri, db_name, write_mappings(db_name), *extra)
    try:
        wait_until(lambda: d.get("/readyz")[0] == 200, timeout=30, message="ready")
        if ha:
            wait_until(lambda: all(v == 1 for (n, _), v in d.metrics().items() if n == "denormd_lease_held"),
                       timeout=30, message="every lease held")
        customers = [c["_id"] for c in db.customers.find({}, {"_id": 1})
                     if db.orders.count_documents({"customerId": c["_id"], "status": {"$in": OPEN}})]
        latencies = []
        for i in range(200):
            c = customers[i % len(customers)]
            name = "L%d" % i
            t0 = time.perf_counter()
            db.customers.update_one({"_id": c}, {"$set": {"name": name}})
            while db.orders.count_documents({"customerId": c, "status": {"$in": OPEN},
                                             "customer.name": {"$ne": name}}):
                time.sleep(0.001)
            latencies.append(time.perf_counter() - t0)
        batches0 = d.metric_sum("denormd_batch_events_count")
        r = random.Random(3)
        t0 = time.perf_counter()
        for i in range(2000):
            db.customers.update_one({"_id": r.choice(customers)}, {"$set": {"name": "B%d" % i}})
        sent = time.perf_counter() - t0
        wait_until(shop.check, timeout=120, interval=0.05, message="in line")
        total = time.perf_counter() - t0
        batches = d.metric_sum("denormd_batch_events_count") - batches0
        q = statistics.quantiles(latencies, n=10)
        return {"p50_ms": statistics.median(latencies) * 1000, "p90_ms": q[8] * 1000,
                "burst_s": total, "sent_s": sent, "batches": batches, "batches_per_s": batches / total}
    finally:
        d.stop()
        client.close()
        emu.stop()


if __name__ == "__main__":
    for ha in (False, True) * 3:
        r = run(ha)
        print("%-9s p50 %.1f ms  p90 %.1f ms  burst of 2000: %.2f s (sent in %.2f s), %d batches, %.0f batches/s"
              % ("--ha" if ha else "plain", r["p50_ms"], r["p90_ms"], r["burst_s"], r["sent_s"], r["batches"],
                 r["batches_per_s"]), flush=True)
