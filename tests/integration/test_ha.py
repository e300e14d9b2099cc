"""--ha: several instances share the watched namespaces through leases in MongoDB. Each test
starts instances against one test server and checks, from the lease table and each instance's
metrics, that no namespace is written by two instances at once, and that every copy ends
exact after kills, pauses and restarts."""
import os
import signal
import threading
import time


from tests.integration.base import ShopTestCase
from tests.integration.harness import balanced_owners, wait_until
from tests.integration.leases import LeaseHelpers
from tests.integration.seed import OPEN


class HaTest(LeaseHelpers, ShopTestCase):
    # A killed or paused owner's open transaction holds the rows it wrote (its lease row too,
    # when it stopped between its fence and its commit) until the server aborts it: the tests
    # that kill or pause run the server as docs/operations.md advises for --ha (10 s, not 60).
    EMULATOR_ARGS = dict({name: ("--transaction-lifetime-limit-seconds", "10") for name in (
        "test_three_instances_share_the_work_and_a_kill9_moves_its_units_within_the_ttl",
        "test_a_paused_owner_stops_writing_and_checkpoints_never_go_back")},
        test_a_fan_out_larger_than_a_transaction_is_written_in_fenced_pages=(
            "--transaction-lifetime-limit-seconds", "1"))

    def checkpoints(self):
        return {cp["_id"]: cp["token"]["_data"] for cp in self.db.denormd_checkpoints.find() if "token" in cp}

    # -----------------------------------------------------------------------------------------
    def test_three_instances_share_the_work_and_a_kill9_moves_its_units_within_the_ttl(self):
        self.shop.seed()
        self.shop.fill_recent_arrays()
        ds = {n: self.instance(n) for n in ("a", "b", "c")}
        units = self.units(ds["a"])
        self.assertGreaterEqual(len(units), 4)
        # The first to start takes everything, then the units spread evenly: 7 units, 3:2:2.
        spread = self.spread(ds, units)
        self.assertEqual(sorted(sum(1 for v in spread.values() if n in v) for n in ds), [2, 2, 3])
        for d in ds.values():
            self.assertEqual(d.metric_sum("denormd_instances"), 3)

        done = threading.Event()
        worker = threading.Thread(target=lambda: ([self.shop.random_change() for _ in range(1500)], done.set()))
        worker.start()
        time.sleep(0.5)
        self.check_one_writer(ds)
        owners = self.owners(ds)
        counts = {n: sum(1 for v in owners.values() if n in v) for n in ds}
        victim = max(counts, key=counts.get)
        ds[victim].kill9()
        killed_at = time.time()
        rest = {n: d for n, d in ds.items() if n != victim}
        while not self.all_held_once(rest, units):
            self.check_one_writer(rest)
            self.assertLess(time.time() - killed_at, self.TTL_MS / 1000 + 5, "units not taken over in time")
            time.sleep(0.1)
        worker.join()
        self.converge()
        self.check_one_writer(rest)
        # The survivors share them evenly, and only the dead instance's units moved.
        after = self.spread(rest, units, timeout=10)
        for u, holder in owners.items():
            if holder != [victim]:
                self.assertEqual(after[u], holder, u)
        self.assertGreaterEqual(sum(d.metric_sum("denormd_lease_changes_total", reason="acquired")
                                    for d in rest.values()), counts[victim])
        for d in rest.values():
            self.assertEqual(d.stop(), 0)

    def test_a_paused_owner_stops_writing_and_checkpoints_never_go_back(self):
        self.shop.seed()
        self.shop.fill_recent_arrays()
        ds = {n: self.instance(n) for n in ("a", "b")}
        units = self.units(ds["a"])
        wait_until(lambda: self.all_held_once(ds, units), timeout=20, message="every unit held once")
        owners = self.owners(ds)
        victim = max(ds, key=lambda n: sum(1 for v in owners.values() if n in v))
        other = [n for n in ds if n != victim][0]
        victims_units = {u for u, v in owners.items() if victim in v}

        seen = {}
        went_back = []
        stop_sampling = threading.Event()

        def sample():
            while not stop_sampling.is_set():
                for unit, data in self.checkpoints().items():
                    if unit in seen and data < seen[unit]:
                        went_back.append((unit, seen[unit], data))
                    seen[unit] = max(data, seen.get(unit, data))
                time.sleep(0.05)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            for _ in range(200):
                self.shop.random_change()
            os.kill(ds[victim].proc.pid, signal.SIGSTOP)
            for _ in range(300):  # while it is paused
                self.shop.random_change()
            # Within the TTL, or the transaction lifetime when it was paused after a fence.
            wait_until(lambda: victims_units <= self.held_by(ds[other]), timeout=self.TTL_MS / 1000 + 18,
                       message="the paused owner's units taken over")
            os.kill(ds[victim].proc.pid, signal.SIGCONT)
            # Back, it finds its leases gone or past their deadline, and stops writing them.
            wait_until(lambda: not (self.held_by(ds[victim]) & victims_units), timeout=10,
                       message="the resumed owner gives its units up")
            for _ in range(300):
                self.shop.random_change()
            self.converge()
            self.check_one_writer(ds)
        finally:
            stop_sampling.set()
            sampler.join()
        self.assertEqual(went_back, [], "a checkpoint went back")
        log = ds[victim].log()
        self.assertTrue("lease not renewed before its deadline" in log or "lease taken by another instance" in log,
                        log[-3000:])
        for d in ds.values():
            self.assertEqual(d.stop(), 0)

    def test_a_rolling_restart_under_load_hands_over_without_waiting_for_the_ttl(self):
        ttl_ms = 8000
        self.shop.seed()
        self.shop.fill_recent_arrays()
        ds = {n: self.instance(n, ttl_ms) for n in ("a", "b")}
        units = self.units(ds["a"])
        wait_until(lambda: self.all_held_once(ds, units), timeout=30, message="every unit held once")
        stop_load = threading.Event()
        worker = threading.Thread(target=lambda: [self.shop.random_change() for _ in iter(stop_load.is_set, True)])
        worker.start()
        try:
            for name in ("a", "b"):
                self.assertEqual(ds[name].stop(), 0)
                stopped_at = time.time()
                rest = {n: d for n, d in ds.items() if n != name}
                wait_until(lambda: self.all_held_once(rest, units), timeout=ttl_ms / 1000 + 10,
                           message="units taken over after %s stopped" % name)
                # A released lease is taken at the next round (TTL/3), not after the TTL.
                self.assertLess(time.time() - stopped_at, ttl_ms / 1000 * 0.75)
                ds[name] = self.instance(name, ttl_ms)
                wait_until(lambda: self.all_held_once(ds, units) and name in sum(self.owners(ds).values(), []),
                           timeout=ttl_ms / 1000 + 10, message="%s back with units of its own" % name)
        finally:
            stop_load.set()
            worker.join()
        self.converge()
        for d in ds.values():
            self.assertEqual(d.stop(), 0)

    def test_one_instance_holds_everything_and_survives_a_lost_lease_table(self):
        self.shop.seed()
        self.shop.fill_recent_arrays()
        d = self.instance("solo")
        units = self.units(d)
        wait_until(lambda: self.held_by(d) == units, timeout=20, message="the lone instance holds every unit")
        for _ in range(200):
            self.shop.random_change()
        self.converge()
        self.assertEqual(d.metric_sum("denormd_instances"), 1)
        namespaces = {u for u in units if u != "auto-backfill"}
        rc, out, err = self.cmd("status")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.count("lease: held by solo, expires "), len(namespaces), out)
        self.assertEqual(d.stop(), 0)
        # Every checkpoint carries its lease's epoch, and every lease was released at the stop.
        leases = {row["_id"]: row for row in self.db.denormd_leases.find()}
        for cp in self.db.denormd_checkpoints.find():
            self.assertEqual(cp["leaseEpoch"], leases[cp["_id"]]["epoch"])
            self.assertEqual(leases[cp["_id"]]["owner"], "")
        # The lease table is lost (dropped) while the checkpoints keep their epochs: the next
        # run's leases start at epoch 1, below the checkpoints', and are raised above them.
        self.db.denormd_leases.drop()
        some = sorted(namespaces)[0]
        self.db.denormd_checkpoints.update_one({"_id": some}, {"$set": {"leaseEpoch": 1000}})
        d = self.instance("solo")
        wait_until(lambda: self.held_by(d) == units, timeout=20, message="every unit held again")
        self.assertIn("the checkpoint carries a newer lease epoch than the lease table", d.log())
        self.assertEqual(self.db.denormd_leases.find_one({"_id": some})["epoch"], 1001)
        for _ in range(100):
            self.shop.random_change()
        self.converge()
        self.assertEqual(d.stop(), 0)
        self.assertEqual(self.db.denormd_checkpoints.find_one({"_id": some})["leaseEpoch"], 1001)

    def test_the_automatic_backfill_runs_on_the_instance_holding_its_lease(self):
        self.shop.seed()
        self.shop.fill_recent_arrays()
        # Copies written before the mappings existed: only the automatic backfill repairs them.
        self.db.orders.update_many({"status": {"$in": OPEN}}, {"$set": {"customer.name": "stale"}})

        def start(name):
            return self.instance(name, auto_backfill=True)

        ds = {"a": start("a")}
        wait_until(lambda: "auto-backfill" in self.held_by(ds["a"]), timeout=20,
                   message="the first instance holds the backfill's lease")
        units = self.units(ds["a"])
        # A second name beside which "a" keeps the backfill when the units spread.
        other = next(n for n in ("b%d" % i for i in range(1000))
                     if balanced_owners(units, ["a", n], {u: "a" for u in units})["auto-backfill"] == "a")
        ds[other] = start(other)
        expected = balanced_owners(units, ["a", other], {u: "a" for u in units})
        wait_until(lambda: self.owners(ds) == {u: [h] for u, h in expected.items()}, timeout=20,
                   message="units spread as assign_units says")
        self.converge()
        wait_until(lambda: "new and changed mappings are backfilled" in ds["a"].log(), timeout=20,
                   message="the holder finished the backfill")
        # The other instance never held the backfill's lease, so it never ran the backfill.
        self.assertNotIn("mappings are backfilled", ds[other].log())
        for d in ds.values():
            self.assertEqual(d.stop(), 0)

    def test_a_joining_instance_takes_its_share_and_the_rest_stays_put(self):
        self.shop.seed()
        self.shop.fill_recent_arrays()
        a = self.instance("a")
        units = self.units(a)
        wait_until(lambda: self.held_by(a) == units, timeout=20, message="a holds every unit")
        before = {u: "a" for u in units}
        b = self.instance("b")  # waits until /readyz answers 200
        ds = {"a": a, "b": b}
        spread = self.spread(ds, units)
        # b took exactly its half, and a kept the units it scores highest: nothing else moved.
        self.assertEqual(len(self.held_by(b)), len(units) // 2)
        self.assertEqual(spread, {u: [h] for u, h in balanced_owners(units, ["a", "b"], before).items()})
        time.sleep(self.TTL_MS / 1000)  # a few rounds: nothing moves once even
        self.assertEqual(self.owners(ds), spread)
        for d in ds.values():
            self.assertEqual(d.get("/readyz")[0], 200)
        self.converge()
        # It takes over when the owner goes.
        self.assertEqual(a.stop(), 0)
        wait_until(lambda: self.held_by(b) == units, timeout=self.TTL_MS / 1000 + 5,
                   message="b takes every unit")
        wait_until(lambda: b.get("/readyz")[0] == 200, timeout=20, message="b streams")
        for _ in range(50):
            self.shop.random_change()
        self.converge()
        self.assertEqual(b.stop(), 0)

    def test_a_write_held_past_the_lease_does_not_land_after_the_new_owners(self):
        """The owner of the customers sends a rename, its update is held by the server (a fail
        point) and the owner is paused until well after the lease moved and the new owner applied
        a newer rename. Its late write must not land: every open order shows the newest name."""
        self.shop.seed()
        self.shop.fill_recent_arrays()
        ds = {n: self.instance(n) for n in ("a", "b")}
        units = self.units(ds["a"])
        wait_until(lambda: self.all_held_once(ds, units), timeout=20, message="every unit held once")
        unit = next(u for u in units if u.endswith(".customers"))
        owner = self.owners(ds)[unit][0]
        other = next(n for n in ds if n != owner)
        customer = self.db.orders.find_one({"status": {"$in": OPEN}})["customerId"]
        open_orders = {"customerId": customer, "status": {"$in": OPEN}}

        def names():
            return {o["customer"]["name"] for o in self.db.orders.find(open_orders)}

        held_ms = 9000
        self.fail_point(failCommands=["update"], blockConnection=True, blockTimeMS=held_ms,
                        namespace="%s.orders" % self.dbname)
        read_before = ds[owner].metric_sum("denormd_events_total", source=unit)
        sent_at = time.time()
        self.db.customers.update_one({"_id": customer}, {"$set": {"name": "Old Name"}})
        # The owner has read the rename, and sent its update within a moment: the server holds it.
        wait_until(lambda: ds[owner].metric_sum("denormd_events_total", source=unit) > read_before,
                   timeout=10, interval=0.02, message="the owner read the rename")
        time.sleep(0.5)
        os.kill(ds[owner].proc.pid, signal.SIGSTOP)
        try:
            wait_until(lambda: unit in self.held_by(ds[other]), timeout=self.TTL_MS / 1000 + 8,
                       message="the paused owner's customers taken over")
            # Off, so that no write of the new owner is held; it was the old owner's that was.
            entered = self.client.admin.command({"configureFailPoint": "failCommand", "mode": "off"})
            self.assertEqual(entered.get("count"), 1, "the old owner's update was not the one held")
            self.db.customers.update_one({"_id": customer}, {"$set": {"name": "Newest Name"}})
            wait_until(lambda: names() == {"Newest Name"}, timeout=10, message="the new owner applied the newest name")
            self.assertLess(time.time() - sent_at, held_ms / 1000, "the held write ran before the takeover")
            # The server runs the held update now, while its sender is still paused.
            time.sleep(held_ms / 1000 - (time.time() - sent_at) + 1)
            self.assertEqual(names(), {"Newest Name"}, "the held write landed after the new owner's")
        finally:
            os.kill(ds[owner].proc.pid, signal.SIGCONT)
        # Back, the old owner's transaction cannot commit: its fence finds the lease moved (or the
        # rows it wrote conflict with the new owner's commit). Either way it is refused.
        wait_until(lambda: ds[owner].metric_sum("denormd_errors_total", stage="write", code="lease_moved") +
                   ds[owner].metric_sum("denormd_errors_total", stage="write", code="112") >= 1, timeout=10,
                   message="the old owner's late write refused")
        time.sleep(1)
        self.assertEqual(names(), {"Newest Name"})
        # (The unit may go back to the old owner now, as rendezvous hashing gives it: a new lease.)
        self.converge()
        self.assertEqual(names(), {"Newest Name"})
        self.check_one_writer(ds)
        for d in ds.values():
            self.assertEqual(d.stop(), 0)

    def test_a_transaction_longer_than_a_renewal_period_commits_under_its_lease(self):
        """The server is slow inside a fenced transaction (a slow disk, an overloaded machine:
        here each read of a customer is held 600 ms, with a 1 s TTL, so a new order's fill, which
        reads its customer, writes the order and reads the customer again, spans more than
        TTL/3). The owner renews its lease meanwhile; the transaction must still commit.
        (Before: the fence wrote the lease row its renewals write, so every attempt conflicted
        with the owner's own renewal, for as long as the server stayed slow.)"""
        self.shop.seed()
        self.shop.fill_recent_arrays()
        a = self.instance("a", 1000)
        units = self.units(a)
        wait_until(lambda: self.held_by(a) == set(units), timeout=20, message="a holds every unit")
        customer = self.db.customers.find_one({})
        self.fail_point(mode="alwaysOn", failCommands=["find"], blockConnection=True,
                        blockTimeMS=600, namespace=self.dbname + ".customers", appName="denormd")
        try:
            self.db.orders.insert_one({"_id": 999999, "customerId": customer["_id"], "status": "NEW",
                                       "items": []})
            wait_until(lambda: (self.db.orders.find_one({"_id": 999999}).get("customer") or {}).get("name")
                       == customer["name"], timeout=20, message="the fill committed while the server is slow")
        finally:
            self.client.admin.command({"configureFailPoint": "failCommand", "mode": "off"})
        self.assertEqual(a.stop(), 0)

    def test_an_owner_paused_inside_its_commit_is_taken_over_without_waiting_for_the_server(self):
        """The owner of the customers writes a rename in a fenced transaction whose commit the
        server holds (a fail point), and is paused: the open transaction holds the orders it
        wrote and the checkpoint document (the fence came before the commit) for as long as the
        server keeps it, 60 s by default. The new owner takes the lease within the TTL, ends the
        old writer's session (published in the checkpoint), and the orders show the newest name
        long before the hold ends."""
        self.shop.seed()
        self.shop.fill_recent_arrays()
        a = self.instance("a")
        units = self.units(a)
        wait_until(lambda: self.held_by(a) == set(units), timeout=20, message="a holds every unit")
        unit = next(u for u in units if u.endswith(".customers"))
        customer = self.db.orders.find_one({"status": {"$in": OPEN}})["customerId"]
        open_orders = {"customerId": customer, "status": {"$in": OPEN}}

        def names():
            return {o["customer"]["name"] for o in self.db.orders.find(open_orders)}

        for i in range(3):
            self.db.customers.update_one({"_id": customer}, {"$set": {"name": "Warm %d" % i}})
            wait_until(lambda: names() == {"Warm %d" % i}, timeout=10, message="warm-up rename %d" % i)
        held_ms = 16000
        self.fail_point(failCommands=["commitTransaction"], blockConnection=True, blockTimeMS=held_ms)
        read_before = a.metric_sum("denormd_events_total", source=unit)
        self.db.customers.update_one({"_id": customer}, {"$set": {"name": "Held Name"}})
        # The owner has read the rename, and sent its commit within a moment: the server holds it.
        wait_until(lambda: a.metric_sum("denormd_events_total", source=unit) > read_before,
                   timeout=10, interval=0.02, message="the owner read the rename")
        time.sleep(0.5)
        os.kill(a.proc.pid, signal.SIGSTOP)
        paused_at = time.time()
        try:
            b = self.instance("b")
            # Without ending a's transaction, the checkpoint stays locked until the hold ends.
            wait_until(lambda: unit in self.held_by(b), timeout=self.TTL_MS / 1000 + 8,
                       message="the paused owner's customers taken over before the held commit ends")
            entered = self.client.admin.command({"configureFailPoint": "failCommand", "mode": "off"})
            self.assertEqual(entered.get("count"), 1, "the old owner's commit was not the one held")
            self.db.customers.update_one({"_id": customer}, {"$set": {"name": "Newest Name"}})
            wait_until(lambda: names() == {"Newest Name"}, timeout=10,
                       message="the new owner wrote the orders the paused transaction had written")
            self.assertLess(time.time() - paused_at, held_ms / 1000 - 2)
            self.assertIn("ended the session of the namespace's previous writer", b.log())
        finally:
            os.kill(a.proc.pid, signal.SIGCONT)
        # The held commit ends with its transaction gone: nothing of it lands after the new name.
        time.sleep(max(0.0, held_ms / 1000 - (time.time() - paused_at)) + 1)
        self.assertEqual(names(), {"Newest Name"})
        self.converge()
        self.check_one_writer({"a": a, "b": b})
        for d in (a, b):
            self.assertEqual(d.stop(), 0)

    # -----------------------------------------------------------------------------------------
    def test_a_fan_out_larger_than_a_transaction_is_written_in_fenced_pages(self):
        """One rename fans out to more open orders than one transaction can write within the
        server's transaction lifetime (1 s here; on the test server a transaction's cost grows
        with its collection). Under --ha it must land without any transaction outliving that
        limit: the statement is written in fenced transactions of a page of documents each.
        (Before: its one transaction was aborted by the server, 251, and the batch retried.)"""
        n = 40000
        self.db.customers.insert_one({"_id": 1, "name": "Before", "email": "c1@example.com",
                                      "address": {"city": "Lyon"}})
        for start in range(0, n, 10000):
            self.db.orders.insert_many([{"_id": i, "customerId": 1, "status": "NEW",
                                         "customer": {"name": "Before"}}
                                        for i in range(start, start + 10000)])
        # A TTL longer than the suite's: the test server writes one page at a time behind one
        # lock, and on a loaded machine the instance's own renewals must still get through.
        d = self.instance("solo", 6000)
        unit = "%s.customers" % self.dbname
        wait_until(lambda: unit in self.held_by(d), timeout=20, message="the customers held")
        started = time.time()
        self.db.customers.update_one({"_id": 1}, {"$set": {"name": "After"}})
        wait_until(lambda: self.db.orders.count_documents({"customer.name": "After"}) == n, timeout=90,
                   message="every order renamed")
        print("a rename of %d orders landed in %.1f s" % (n, time.time() - started))
        self.assertEqual(d.metric_sum("denormd_errors_total", stage="write", code="251"), 0,
                         "a transaction outlived the server's transactionLifetimeLimitSeconds")
        # One write per page (docs/metrics.md), each counted once its transaction committed.
        self.assertGreaterEqual(d.metric_sum("denormd_writes_total", mapping="orders-customer", result="ok"),
                                n / 1000)
        self.check_one_writer({"solo": d})
        self.assertEqual(d.stop(), 0)
