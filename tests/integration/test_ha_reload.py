"""Changing mappings under --ha: every instance loads the same files again (SIGHUP, POST
/-/reload or --watch-mappings) and moves only the namespaces it holds; the leases follow the
watched set; and where a removed mapping stopped is kept with each namespace's checkpoint, so
that whichever instance holds the namespace when the mapping is put back replays it."""
import json
import os
import shutil
import signal
import time

from tests.integration.harness import balanced_owners, wait_until
from tests.integration.leases import LeaseHelpers
from tests.integration.mapping_changes import MappingChangeCase

LOGMSGS_HOST = "logmsgs-host"  # the only mapping that reads hosts
OPEN_ORDERS = {"status": {"$nin": ["DELIVERED", "CANCELLED"]}}


class HaReloadTest(LeaseHelpers, MappingChangeCase):
    def ns(self, coll):
        return "%s.%s" % (self.dbname, coll)

    def test_a_changed_mapping_reloads_on_every_instance_under_load(self):
        self.shop.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        ds, units, holders = self.start_spread(
            ["a", "b"], lambda n: self.instance(n, None, "--watch-mappings", auto_backfill=True))
        spread = {u: [h] for u, h in holders.items()}
        stop = self.workload()
        try:
            time.sleep(0.5)
            self.add_mail_to_orders_customer()
            for d in ds.values():
                wait_until(lambda: self.reloads(d, "ok") == 1, timeout=30, message="the watched change reloaded")
            backfiller = ds[holders["auto-backfill"]]
            self.mail_converges(backfiller, stop)
        finally:
            stop()
        self.check_one_writer(ds)
        self.assertEqual(self.owners(ds), spread)
        for name, d in ds.items():
            log = d.log()
            self.assertRegex(log, r"the new mappings run .*changed=orders-customer")
            # orders-customer reads customers and fills orders: only their holders move them.
            moved = sum(1 for u in (self.ns("customers"), self.ns("orders")) if spread[u] == [name])
            self.assertRegex(log, r"pipelines_handed_over=%d " % moved)
            self.assertEqual(self.reloads(d, "error"), 0)
            self.assertEqual("backfill: starting mapping=orders-customer" in log, d is backfiller, name)
        for d in ds.values():
            self.assertEqual(d.stop(), 0)

    def test_a_change_the_old_set_applies_after_the_backfill_still_reaches_the_changed_mapping(self):
        """The automatic backfill of a changed mapping runs on the instance holding its lease,
        while the stream of its source may be held by an instance that has not reloaded yet. A
        change that stream applies with the old definition after the backfill read the document
        must still reach the new field once every instance has reloaded."""
        self.shop.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        customers = self.ns("customers")
        def start(n):
            return self.instance(n, auto_backfill=True)

        # Two instances such that one holds the automatic backfill and the other customers: the
        # first to start keeps the units it scores highest, so the first name decides.
        units = {self.ns(c) for c in ("customers", "orders", "products", "reviews", "hosts", "logmsgs")}
        units.add("auto-backfill")
        first = next(n for n in ("a%d" % i for i in range(1000))
                     if len(set(balanced_owners(units, [n, "b"], {u: n for u in units})[u]
                                for u in ("auto-backfill", customers))) == 2)
        ds, seen, holders = self.first(first, start)
        self.assertEqual(seen, units)
        holders = self.join(ds, "b", start, units, holders)
        backfiller = ds[holders["auto-backfill"]]
        streamer = ds[holders[customers]]

        # The backfill holder reloads first; the customers stream still runs the old set.
        self.add_mail_to_orders_customer()
        self.assertEqual(self.post_reload(backfiller), (200, "reloaded\n"))
        wait_until(lambda: backfiller.metric_sum("denormd_backfill_progress", mapping="orders-customer") == 1
                   or "wait" in backfiller.log(), timeout=30, message="the backfill done or waiting")
        time.sleep(0.5)
        # Customers change their email; the old set copies it without `mail`.
        changed = [o["customerId"] for o in self.db.orders.find(OPEN_ORDERS, {"customerId": 1}).limit(5)]
        for c in changed:
            self.db.customers.update_one({"_id": c}, {"$set": {"email": "new-%d@example.com" % c}})
        wait_until(lambda: all(o["customer"]["email"] == "new-%d@example.com" % o["customerId"]
                               for o in self.db.orders.find(dict(OPEN_ORDERS, customerId={"$in": changed}))),
                   timeout=20, message="the old set copied the new emails")
        # Then the customers holder reloads too: every mapping must end in line, mail included.
        self.assertEqual(self.post_reload(streamer), (200, "reloaded\n"))

        def stale_mail():
            return [(o["_id"], o["customer"].get("mail"), o["customer"]["email"])
                    for o in self.db.orders.find(dict(OPEN_ORDERS, customerId={"$in": changed}))
                    if o["customer"].get("mail") != o["customer"]["email"]]
        try:
            wait_until(lambda: not stale_mail(), timeout=20, interval=0.25, message="the new emails as mail")
        except AssertionError:
            self.assertEqual(stale_mail(), [], "orders whose mail is not their customer's email")
        wait_until(lambda: not self.differences_with_mail(), timeout=30, interval=0.25,
                   message="open orders with customer.mail in line")
        for d in ds.values():
            self.assertEqual(d.stop(), 0)

    def move_aside(self, name):
        aside = os.path.join(self.mappings, name + ".json.aside")
        shutil.move(os.path.join(self.mappings, name + ".json"), aside)
        return lambda: shutil.move(aside, os.path.join(self.mappings, name + ".json"))

    def test_a_namespace_no_longer_watched_is_released_and_leased_again_once_watched(self):
        self.shop.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        ds, units, holders = self.start_spread(["a", "b"], self.instance)
        hosts = self.ns("hosts")
        put_back = self.move_aside(LOGMSGS_HOST)
        for d in ds.values():
            self.assertEqual(self.post_reload(d), (200, "reloaded\n"))
        for d in ds.values():
            self.assertEqual(self.units(d), units - {hosts})
        self.assertEqual(self.db.denormd_leases.find_one({"_id": hosts})["owner"], "")
        # The rest stays put, but for one unit that may move to keep the shares even.
        without = balanced_owners(units - {hosts}, list(ds), {u: h for u, h in holders.items() if u != hosts})
        self.assertLessEqual(sum(1 for u, h in without.items() if holders[u] != h), 1)
        wait_until(lambda: self.owners(ds) == {u: [h] for u, h in without.items()}, timeout=20,
                   message="the units left spread evenly")
        put_back()
        for d in ds.values():
            self.assertEqual(self.post_reload(d), (200, "reloaded\n"))
        again = balanced_owners(units, list(ds), without)
        wait_until(lambda: self.owners(ds) == {u: [h] for u, h in again.items()}, timeout=20,
                   message="hosts leased again")
        for _ in range(300):
            self.shop.random_change()
        self.converge()
        self.check_one_writer(ds)
        for d in ds.values():
            self.assertEqual(d.stop(), 0)

    def add_twin_of_logmsgs_host(self):
        """A second mapping reading hosts (into hostTwin), so that hosts stays watched while
        logmsgs-host is away."""
        with open(os.path.join(self.mappings, LOGMSGS_HOST + ".json")) as f:
            twin = json.load(f)
        twin["name"], twin["into"] = LOGMSGS_HOST + "-twin", "hostTwin"
        with open(os.path.join(self.mappings, LOGMSGS_HOST + "-twin.json"), "w") as f:
            json.dump(twin, f)

    def rename_hosts(self):
        """Renames four hosts and waits until the twin copied them: logmsgs-host's copies are
        stale."""
        for i in range(1, 5):
            self.db.hosts.update_one({"_id": self.shop_host(i)}, {"$set": {"name": "renamed-%d" % i}})
        wait_until(lambda: self.db.logmsgs.count_documents({"hostTwin.name": {"$regex": "^renamed-"}}) > 0,
                   message="the twin copied the new names")
        self.assertTrue(self.shop.check(), "logmsgs-host is away: its copies are stale")

    def replayed_on(self, d):
        """logmsgs-host is back, replayed by `d` from the entry of hosts, not backfilled."""
        self.converge()
        log = d.log()
        self.assertRegex(log, r"mappings put back replay the changes they missed mappings=%s source=%s"
                         % (LOGMSGS_HOST, self.ns("hosts")))
        self.assertNotIn("backfill: starting mapping=%s" % LOGMSGS_HOST, log)
        self.assertNotIn("stoppedMappings", self.db.denormd_checkpoints.find_one({"_id": self.ns("hosts")}))
        back = self.versions()[LOGMSGS_HOST]
        self.assertEqual((back["removed"], back["backfill"]), (False, "done"))

    def test_a_removed_mapping_put_back_on_another_instance_replays_what_it_missed(self):
        self.add_twin_of_logmsgs_host()
        self.shop.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        ds, units, holders = self.start_spread(["a", "b"], lambda n: self.instance(n, auto_backfill=True))
        hosts = self.ns("hosts")
        holder = holders[hosts]
        other = [n for n in ds if n != holder][0]

        # Removed: its holder keeps where it stopped with the checkpoint of hosts.
        put_back = self.move_aside(LOGMSGS_HOST)
        for d in ds.values():
            self.assertEqual(self.post_reload(d), (200, "reloaded\n"))
        entry = self.db.denormd_checkpoints.find_one({"_id": hosts})["stoppedMappings"]
        self.assertEqual([e["mapping"] for e in entry], [LOGMSGS_HOST])

        # Its holder goes; hosts change, and only the twin follows.
        self.assertEqual(ds.pop(holder).stop(), 0)
        wait_until(lambda: self.all_held_once(ds, units), timeout=20, message="the other instance holds everything")
        self.rename_hosts()

        # Back on the other instance, which never held hosts: it replays from the entry.
        put_back()
        d = ds[other]
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: self.reloads(d, "ok") == 2, timeout=30, message="the second reload done")
        self.replayed_on(d)
        self.assertEqual(d.stop(), 0)

    def test_removed_across_restarts_and_put_back_on_a_new_instance_replays_what_it_missed(self):
        self.add_twin_of_logmsgs_host()
        self.shop.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        first = self.instance("a", auto_backfill=True)
        # Recorded as running (by the automatic backfill's lease holder) before it stops.
        wait_until(lambda: self.db.denormd_mappings.find_one({"_id": LOGMSGS_HOST}) is not None,
                   timeout=20, message="the mappings recorded")
        self.assertEqual(first.stop(), 0)
        # Started without it: where it stopped is the checkpoint of hosts, kept as its entry.
        put_back = self.move_aside(LOGMSGS_HOST)
        a = self.instance("a", auto_backfill=True)
        wait_until(lambda: self.units(a) == self.held_by(a), timeout=20, message="a holds everything")
        self.rename_hosts()
        self.assertEqual(a.stop(), 0)
        entry = self.db.denormd_checkpoints.find_one({"_id": self.ns("hosts")})["stoppedMappings"]
        self.assertEqual([e["mapping"] for e in entry], [LOGMSGS_HOST])
        # Put back, on an instance that never ran: it replays from the entry under its lease.
        put_back()
        b = self.instance("b", auto_backfill=True)
        self.replayed_on(b)
        self.assertEqual(b.stop(), 0)

    def shop_host(self, i):
        return self.db.hosts.find().sort("_id", 1).skip(i - 1).limit(1)[0]["_id"]
