"""Changing mappings while denormd runs: SIGHUP, POST /-/reload and --watch-mappings load the
files again; a broken set changes nothing; a changed mapping is backfilled while the others
stream on; a removed mapping stops at once and, put back with the same definition, replays
what it missed (across a restart too) instead of being backfilled."""
import json
import os
import shutil
import signal
import time

from tests.integration.harness import wait_until
from tests.integration.mapping_changes import MappingChangeCase

REVIEWS = "products-recent-reviews"
TWIN = "products-recent-reviews-twin"


class ReloadTest(MappingChangeCase):
    def add_twin_of_recent_reviews(self):
        """A second mapping reading reviews (into recentReviewsTwin), so that the reviews stream
        keeps running while products-recent-reviews is away."""
        with open(os.path.join(self.mappings, REVIEWS + ".json")) as f:
            m = json.load(f)
        m["name"] = TWIN
        m["into"] = "recentReviewsTwin"
        with open(os.path.join(self.mappings, TWIN + ".json"), "w") as f:
            json.dump(m, f)

    def twin_differences(self):
        return [p["_id"] for p in self.db.products.find({}, {"recentReviews": 1, "recentReviewsTwin": 1})
                if p.get("recentReviews", []) != p.get("recentReviewsTwin", [])]

    def new_review(self, product_id):
        rid = self.shop._id()
        self.db.reviews.insert_one({"_id": rid, "productId": product_id, "stars": 5, "text": "while away",
                                    "createdAt": self.shop._tick()})
        return rid

    def recent_ids(self, product_id, field):
        p = self.db.products.find_one({"_id": product_id}, {field: 1})
        return [r["reviewId"] for r in p.get(field, [])]

    def test_sighup_adds_a_field_to_every_open_order_without_a_restart_while_a_workload_runs(self):
        self.shop.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        d = self.start(auto_backfill=True)
        pid = d.proc.pid
        stop = self.workload()
        time.sleep(0.5)
        self.add_mail_to_orders_customer()
        d.proc.send_signal(signal.SIGHUP)
        self.mail_converges(d, stop)
        self.assertEqual(self.reloads(d, "ok"), 1)
        self.assertIsNone(d.proc.poll())
        self.assertEqual(d.proc.pid, pid)
        self.assertEqual(self.reloads(d, "error"), 0)
        log = d.log()
        self.assertIn("SIGHUP received", log)
        self.assertRegex(log, r"the new mappings run .*changed=orders-customer")
        # Only the streams that read orders-customer moved; the others ran on untouched.
        self.assertRegex(log, r"pipelines_kept=[1-9]")
        self.assertIn("backfill: starting mapping=orders-customer", log)
        self.assertNotIn("backfill: starting mapping=orders-items-product", log)
        # The info metric names the new definition only; status agrees.
        v = self.versions()["orders-customer"]
        self.assertEqual(v["backfill"], "done")
        info = [labels for (name, labels), _ in d.metrics().items()
                if name == "denormd_mapping_info" and ("mapping", "orders-customer") in labels]
        self.assertEqual(info, [frozenset({("mapping", "orders-customer"), ("fingerprint", v["fingerprint"])})])
        self.assertEqual(d.stop(), 0)

    def test_a_broken_set_changes_nothing_and_counts_an_error(self):
        self.shop.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        d = self.start()
        path = os.path.join(self.mappings, "orders-customer.json")
        with open(path) as f:
            good = f.read()
        m = json.loads(good)
        m["fields"]["mail"] = 7  # a field's source must be a path
        with open(path, "w") as f:
            json.dump(m, f)
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: self.reloads(d, "error") == 1, timeout=30, message="the failed reload counted")
        self.assertIn("orders-customer.json: /fields/mail", d.log())
        self.assertIn("the running mappings run on unchanged", d.log())
        self.assertEqual(d.get("/readyz")[0], 200)
        # The old set still runs: changes keep converging, nobody got `mail`.
        for _ in range(200):
            self.shop.random_change()
        self.converge()
        self.assertEqual(self.db.orders.count_documents({"customer.mail": {"$exists": True}}), 0)
        # Over HTTP, the answer says what is wrong; fixed, the reload goes through.
        status, body = self.post_reload(d)
        self.assertEqual(status, 500)
        self.assertIn("orders-customer.json: /fields/mail", body)
        with open(path, "w") as f:
            f.write(good)
        self.assertEqual(self.post_reload(d), (200, "reloaded\n"))
        self.assertEqual((self.reloads(d, "error"), self.reloads(d, "ok")), (2, 1))
        self.assertIn("the mappings are unchanged; nothing to do", d.log())
        self.assertIsNone(d.proc.poll())
        self.assertEqual(d.stop(), 0)

    def test_removed_then_put_back_replays_what_it_missed_without_a_backfill(self):
        self.add_twin_of_recent_reviews()
        self.shop.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        d = self.start(auto_backfill=True)
        aside = os.path.join(self.mappings, REVIEWS + ".json.aside")
        shutil.move(os.path.join(self.mappings, REVIEWS + ".json"), aside)
        self.assertEqual(self.post_reload(d), (200, "reloaded\n"))
        self.assertRegex(d.log(), r"the new mappings run .*removed=%s" % REVIEWS)
        self.assertEqual(d.metric_sum("denormd_mapping_info", mapping=REVIEWS), 0)
        wait_until(lambda: self.versions()[REVIEWS]["removed"], message="recorded as removed")

        # Away: a new review reaches the twin (the stream runs) but not recentReviews.
        rid = self.new_review(3)
        wait_until(lambda: rid in self.recent_ids(3, "recentReviewsTwin"), message="the twin pushed it")
        self.assertNotIn(rid, self.recent_ids(3, "recentReviews"))
        stop = self.workload()
        time.sleep(1.0)
        stop()
        missed = [self.new_review(p) for p in (4, 5, 6)]

        # Back with the same definition: it replays what it missed; nothing is backfilled.
        shutil.move(aside, os.path.join(self.mappings, REVIEWS + ".json"))
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: self.reloads(d, "ok") == 2, timeout=30, message="the second reload done")
        self.converge()
        wait_until(lambda: not self.twin_differences(), message="both review arrays alike")
        for p, r in zip((4, 5, 6), missed):
            self.assertIn(r, self.recent_ids(p, "recentReviews"))
        self.assertIn(rid, self.recent_ids(3, "recentReviews"))
        log = d.log()
        self.assertIn("mappings put back replay the changes they missed", log)
        self.assertNotIn("backfill: starting mapping=%s" % REVIEWS, log)
        back = self.versions()[REVIEWS]
        self.assertEqual((back["removed"], back["backfill"]), (False, "done"))
        self.assertEqual(d.metric_sum("denormd_mapping_info", mapping=REVIEWS), 1)
        # New reviews are pushed again.
        later = self.new_review(7)
        wait_until(lambda: later in self.recent_ids(7, "recentReviews"), message="pushed again")
        self.assertEqual(d.stop(), 0)

    def test_removed_across_a_restart_and_put_back_replays_what_it_missed(self):
        self.add_twin_of_recent_reviews()
        self.shop.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        self.assertEqual(self.start(auto_backfill=True).stop(), 0)
        aside = os.path.join(self.mappings, REVIEWS + ".json.aside")
        shutil.move(os.path.join(self.mappings, REVIEWS + ".json"), aside)
        d = self.start(auto_backfill=True)
        missed = [self.new_review(p) for p in (4, 5, 6)]
        wait_until(lambda: all(r in self.recent_ids(p, "recentReviewsTwin") for p, r in zip((4, 5, 6), missed)),
                   message="the twin pushed them")
        self.assertEqual(d.stop(), 0)
        self.assertTrue(self.versions()[REVIEWS]["removed"])
        shutil.move(aside, os.path.join(self.mappings, REVIEWS + ".json"))
        d = self.start(auto_backfill=True)
        self.converge()
        for p, r in zip((4, 5, 6), missed):
            self.assertIn(r, self.recent_ids(p, "recentReviews"))
        self.assertIn("mappings put back replay the changes they missed", d.log())
        self.assertNotIn("backfill: starting mapping=%s" % REVIEWS, d.log())
        self.assertEqual(d.stop(), 0)

    def put_back_and_replay(self, aside, missed):
        """Starts denormd with products-recent-reviews back; it replays the `missed` reviews of
        products 4, 5 and 6."""
        shutil.move(aside, os.path.join(self.mappings, REVIEWS + ".json"))
        d = self.start()
        wait_until(lambda: all(r in self.recent_ids(p, "recentReviews") for p, r in zip((4, 5, 6), missed)),
                   timeout=30, message="the missed reviews replayed")
        self.converge()
        self.assertIn("mappings put back replay the changes they missed", d.log())
        return d

    def wait_for_reviews_checkpoint_past(self, token):
        reviews = "%s.reviews" % self.dbname
        wait_until(lambda: self.db.denormd_checkpoints.find_one({"_id": reviews})["token"] != token,
                   message="the checkpoint of reviews moved on")

    def test_kill9_right_after_a_removal_keeps_where_it_stopped_with_the_checkpoint(self):
        """Where a removed mapping stopped is stored with its namespace's checkpoint before the
        namespace's stream goes on: killed before anything else recorded the removal (here the
        record of mapping versions cannot be written) and started with the mapping back, it
        still replays what it missed."""
        self.add_twin_of_recent_reviews()
        self.shop.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        d = self.start()
        wait_until(lambda: self.db.denormd_mappings.find_one({"_id": REVIEWS}) is not None,
                   message="the mappings recorded")
        self.fail_point(mode="alwaysOn", failCommands=["find"], errorCode=91,
                        namespace="%s.denormd_mappings" % self.dbname)
        aside = os.path.join(self.mappings, REVIEWS + ".json.aside")
        shutil.move(os.path.join(self.mappings, REVIEWS + ".json"), aside)
        self.assertEqual(self.post_reload(d), (200, "reloaded\n"))
        reviews = "%s.reviews" % self.dbname
        stopped = self.db.denormd_checkpoints.find_one({"_id": reviews})
        self.assertEqual([e["mapping"] for e in stopped["stoppedMappings"]], [REVIEWS])
        missed = [self.new_review(p) for p in (4, 5, 6)]
        wait_until(lambda: all(r in self.recent_ids(p, "recentReviewsTwin") for p, r in zip((4, 5, 6), missed)),
                   message="the twin pushed them")
        self.wait_for_reviews_checkpoint_past(stopped["token"])
        d.kill9()
        self.client.admin.command({"configureFailPoint": "failCommand", "mode": "off"})
        self.assertFalse(self.db.denormd_mappings.find_one({"_id": REVIEWS})["removed"])  # never recorded

        d = self.put_back_and_replay(aside, missed)
        self.assertNotIn("stoppedMappings", self.db.denormd_checkpoints.find_one({"_id": reviews}))
        self.assertEqual(d.stop(), 0)

    def test_a_stop_point_an_earlier_denormd_kept_in_denormd_mappings_moves_to_the_checkpoint(self):
        """An earlier denormd kept where a removed mapping stopped in denormd_mappings (stoppedAt).
        The first start after the upgrade moves it into the checkpoint of its namespace, once,
        and put back, the mapping replays from there; status shows it meanwhile."""
        self.add_twin_of_recent_reviews()
        self.shop.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        self.assertEqual(self.start().stop(), 0)
        reviews = "%s.reviews" % self.dbname
        cp = self.db.denormd_checkpoints.find_one({"_id": reviews})
        point = {"db": self.dbname, "collection": "reviews", "token": cp["token"]}
        point.update({k: cp[k] for k in ("clusterTime", "filter") if k in cp})
        # As the earlier denormd left it when a reload removed the mapping at that checkpoint.
        self.db.denormd_mappings.update_one({"_id": REVIEWS}, {"$set": {"removed": True, "stoppedAt": [point]}})
        aside = os.path.join(self.mappings, REVIEWS + ".json.aside")
        shutil.move(os.path.join(self.mappings, REVIEWS + ".json"), aside)
        missed = [self.new_review(p) for p in (4, 5, 6)]

        d = self.start()
        wait_until(lambda: all(r in self.recent_ids(p, "recentReviewsTwin") for p, r in zip((4, 5, 6), missed)),
                   message="the twin pushed them")
        self.wait_for_reviews_checkpoint_past(cp["token"])
        self.assertEqual(d.stop(), 0)
        self.assertNotIn("stoppedAt", self.db.denormd_mappings.find_one({"_id": REVIEWS}))
        (entry,) = self.db.denormd_checkpoints.find_one({"_id": reviews})["stoppedMappings"]
        self.assertEqual((entry["mapping"], entry["token"]), (REVIEWS, cp["token"]))
        rc, out, err = self.cmd("status", "--json")
        self.assertEqual(rc, 0, out + err)
        (source,) = [s for s in json.loads(out)["sources"] if s["source"] == reviews]
        self.assertEqual([(e["mapping"], e["token"]) for e in source["stoppedMappings"]], [(REVIEWS, cp["token"])])
        rc, out, err = self.cmd("status")
        self.assertIn("removed mapping %s (fingerprint %s) stopped after token" % (REVIEWS, entry["fingerprint"]), out)

        d = self.put_back_and_replay(aside, missed)
        self.assertEqual(d.stop(), 0)

    def test_a_changed_stream_goes_on_after_its_last_applied_event_not_from_its_checkpoint(self):
        """The hand-over of a changed namespace starts the new pipeline just after the last event
        the old one applied, whatever the stored checkpoint says. A dry run stores none, so its
        stored checkpoint stays where an earlier run left it: starting from there would read
        (and plan the writes of) every change since then a second time."""
        self.shop.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        source = self.dbname + ".customers"
        first = self.start()
        self.db.customers.update_one({"_id": 1}, {"$set": {"name": "Before The Dry Run"}})
        self.converge()
        self.assertEqual(first.stop(), 0)
        stored = self.db.denormd_checkpoints.find_one({"_id": source})
        self.assertIsNotNone(stored)

        d = self.start("--dry-run")
        for i in range(5):
            self.db.customers.update_one({"_id": 2 + i}, {"$set": {"name": "Dry %d" % i}})
        wait_until(lambda: d.metric_sum("denormd_events_total", source=source) == 5, timeout=20,
                   message="the five changes read")
        self.add_mail_to_orders_customer()
        self.assertEqual(self.post_reload(d), (200, "reloaded\n"))
        self.assertRegex(d.log(), r"the new mappings run .*changed=orders-customer.*pipelines_handed_over=[1-9]")
        self.db.customers.update_one({"_id": 9}, {"$set": {"name": "After The Reload"}})
        wait_until(lambda: d.metric_sum("denormd_events_total", source=source) >= 6, timeout=20,
                   message="the change after the reload read")
        time.sleep(1.5)  # a replay would be read by now
        self.assertEqual(d.metric_sum("denormd_events_total", source=source), 6)
        self.assertEqual(self.db.denormd_checkpoints.find_one({"_id": source}), stored)  # a dry run
        self.assertEqual(d.stop(), 0)

    def test_post_reload_is_served_only_with_web_enable_lifecycle(self):
        """As Prometheus guards its lifecycle endpoints: without the flag POST /-/reload is 403
        "Lifecycle API is not enabled" and reloads nothing; SIGHUP still reloads."""
        self.shop.seed()
        d = self.daemon(self.uri, mappings=None, lifecycle=False)
        self.add_mail_to_orders_customer()
        code, body = self.post_reload(d)
        self.assertEqual(code, 403)
        self.assertIn("Lifecycle API is not enabled (start denormd with --web-enable-lifecycle)", body)
        self.assertEqual(self.reloads(d, "ok"), 0)
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: self.reloads(d, "ok") == 1, timeout=20, message="SIGHUP reloads")
        self.assertEqual(d.stop(), 0)

    def test_watch_mappings_reloads_when_a_file_changes(self):
        self.shop.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        d = self.start("--watch-mappings", auto_backfill=True)
        time.sleep(1.5)
        self.assertEqual(self.reloads(d, "ok"), 0)  # nothing changed: no reload
        self.add_mail_to_orders_customer()
        wait_until(lambda: self.reloads(d, "ok") == 1, timeout=30, message="the watched change reloaded")
        wait_until(lambda: not self.differences_with_mail(), timeout=60, interval=0.25,
                   message="open orders with customer.mail")
        self.assertIn("the mapping files changed", d.log())
        self.assertEqual(self.reloads(d, "ok"), 1)  # once, however many looks saw it
        self.assertEqual(d.stop(), 0)

    def test_a_token_the_new_filter_drops_resumes_from_its_time_without_a_resync(self):
        """A checkpoint from a stream without the current filter (an older denormd, or mappings
        changed while stopped) may name an event the filter now drops; MongoDB cannot resume
        from such a token. denormd starts at its cluster time instead and re-syncs nothing."""
        self.shop.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        self.assertEqual(self.start().stop(), 0)
        # The newest customers event is one no mapping needs; store its token as an older
        # denormd would have (no filter, no cluster time beside it).
        with self.db.customers.watch() as stream:
            self.db.customers.update_one({"_id": 1}, {"$set": {"lastLogin": self.shop._tick()}})
            event = stream.try_next()
            while event is None:
                event = stream.try_next()
        key = "%s.customers" % self.dbname
        self.db.denormd_checkpoints.update_one({"_id": key}, {"$set": {"token": event["_id"]},
                                                             "$unset": {"clusterTime": "", "filter": ""}})
        d = self.start()
        self.db.customers.update_one({"_id": 2}, {"$set": {"name": "After The Restart"}})
        self.converge()
        self.assertIn("the stream's server-side filter changed", d.log())
        self.assertEqual(d.metric_sum("denormd_history_lost_total"), 0)
        stored = self.db.denormd_checkpoints.find_one({"_id": key})
        self.assertIn("$match", stored["filter"])  # kept with every checkpoint from now on
        self.assertEqual(d.stop(), 0)
