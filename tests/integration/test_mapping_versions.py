"""Mapping versions: the daemon records which definition of each mapping it runs
(denormd_mappings), and status lists them with the state of their backfill, so a changed
mapping whose documents still have the old shape shows as stale until it is backfilled."""
import datetime
import json
import os
import re
import shutil

from tests.integration.mapping_changes import MappingChangeCase
from tests.integration.harness import wait_until


class MappingVersionsTest(MappingChangeCase):
    def test_status_shows_each_definition_and_whether_its_documents_are_stale(self):
        self.shop.seed()
        rc, out, err = self.cmd("status", "--json")
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(json.loads(out)["mappings"], [])  # nothing recorded before a run
        self.assertEqual(self.cmd("backfill")[0], 0)
        metrics = self.run_once()
        first = self.versions()
        names = sorted(f[:-5] for f in os.listdir(self.mappings))
        self.assertEqual(sorted(first), names)
        for name, v in first.items():
            self.assertRegex(v["fingerprint"], r"^[0-9a-f]{16}$")
            self.assertEqual((v["removed"], v["backfill"]), (False, "done"), name)
            labels = frozenset({("mapping", name), ("fingerprint", v["fingerprint"])})
            self.assertEqual(metrics.get(("denormd_mapping_info", labels)), 1.0, name)

        # A changed definition: active from the next start, its documents stale until backfilled
        # (this daemon runs with --no-auto-backfill, as the harness starts it by default).
        self.add_mail_to_orders_customer()
        self.run_once()
        second = self.versions()
        changed = second["orders-customer"]
        self.assertNotEqual(changed["fingerprint"], first["orders-customer"]["fingerprint"])
        self.assertGreater(changed["activeSince"], first["orders-customer"]["activeSince"])
        self.assertEqual(changed["backfill"], "disabled")  # stale, and the daemon does not backfill
        for name in names:
            if name != "orders-customer":
                self.assertEqual(second[name], first[name], name)  # untouched
        rc, out, err = self.cmd("status")
        self.assertEqual(rc, 0, out + err)
        self.assertRegex(out, r"orders-customer: fingerprint [0-9a-f]{16}, active since .*, backfill disabled "
                              r"\(.*run denormd backfill --mapping orders-customer\)")
        self.assertEqual(self.cmd("backfill", "--mapping", "orders-customer")[0], 0)
        self.assertEqual(self.versions()["orders-customer"]["backfill"], "done")

        # A removed mapping keeps its record; back with the same definition, it is still backfilled.
        kept = os.path.join(self.mappings, "products-recent-reviews.json")
        aside = kept + ".aside"
        shutil.move(kept, aside)
        self.run_once()
        self.assertTrue(self.versions()["products-recent-reviews"]["removed"])
        rc, out, err = self.cmd("status")
        self.assertIn("products-recent-reviews: fingerprint %s, removed" %
                      first["products-recent-reviews"]["fingerprint"], out)
        shutil.move(aside, kept)
        self.run_once()
        back = self.versions()["products-recent-reviews"]
        self.assertEqual((back["removed"], back["backfill"]), (False, "done"))
        self.assertEqual(back["fingerprint"], first["products-recent-reviews"]["fingerprint"])
        self.assertGreater(back["activeSince"], first["products-recent-reviews"]["activeSince"])
        self.assertTrue(re.match(r"^\d{4}-\d\d-\d\dT", back["activeSince"]))

    def test_a_definition_put_back_after_another_ran_is_backfilled_again(self):
        """products-recent-reviews' filter changes from A (hidden reviews left out) to B (all
        reviews) and back to A. While B ran, a hidden review went into its product's newest
        reviews. A's earlier backfill does not count for A's second time: A is backfilled again
        and the hidden review leaves. (Before: status said "done" from A's first time, no
        backfill ran, and the product kept a review A's filter excludes.)"""
        self.shop.seed()
        path = os.path.join(self.mappings, "products-recent-reviews.json")
        with open(path) as f:
            a = json.load(f)
        b = dict(a)
        b["source"] = {k: v for k, v in a["source"].items() if k != "filter"}
        d = self.start(auto_backfill=True)
        wait_until(lambda: self.versions()["products-recent-reviews"]["backfill"] == "done", timeout=60,
                   message="A backfilled")
        self.assertEqual(d.stop(), 0)
        with open(path, "w") as f:
            json.dump(b, f)
        d = self.start()  # B, not backfilled (the harness's default: --no-auto-backfill)
        product = self.db.products.find_one({})["_id"]
        self.db.reviews.insert_one({"_id": 999999, "productId": product, "stars": 1, "text": "hidden one",
                                    "createdAt": datetime.datetime(2100, 1, 1), "hidden": True})

        def newest_ids():
            return [r.get("reviewId") for r in (self.db.products.find_one({"_id": product}) or {}).get(
                "recentReviews", [])]
        wait_until(lambda: 999999 in newest_ids(), timeout=30, message="B took the hidden review in")
        self.assertEqual(d.stop(), 0)
        with open(path, "w") as f:
            json.dump(a, f)
        d = self.start(auto_backfill=True)
        wait_until(lambda: self.versions()["products-recent-reviews"]["backfill"] == "done", timeout=60,
                   message="A backfilled again")
        self.assertNotIn(999999, newest_ids(), "A's filter excludes the hidden review")
        self.assertIn("backfill: starting mapping=products-recent-reviews", d.log())
        self.assertEqual(d.stop(), 0)
        self.converge()

    def test_a_changed_mapping_is_backfilled_at_start_while_a_workload_runs(self):
        self.shop.seed()
        self.assertEqual(self.cmd("backfill")[0], 0)
        self.run_once()
        self.add_mail_to_orders_customer()
        self.assertGreater(self.orders_missing_mail(), 0)
        d = self.start(auto_backfill=True)
        # Every mapping keeps up meanwhile, and every open order gets customer.mail.
        self.mail_converges(d, self.workload())
        self.assertIn("new or changed mappings are backfilled while the streams run", d.log())
        self.assertIn("orders-customer", d.log())
        self.assertEqual(self.versions()["orders-customer"]["backfill"], "done")
        # Nothing else was backfilled: the other definitions were done already.
        self.assertNotIn("backfill: starting mapping=orders-items-product", d.log())
        self.assertEqual(d.stop(), 0)

    def test_kill9_during_an_automatic_backfill_resumes_where_it_stopped(self):
        self.shop.seed(customers=20000, orders=3000)
        self.assertEqual(self.cmd("backfill", "--mapping", "orders-items-product", "--mapping",
                                  "logmsgs-host", "--mapping", "products-recent-reviews", "--mapping",
                                  "hosts-recent-logs", "--mapping", "customers-recent-orders")[0], 0)
        # orders-customer was never backfilled: the first start backfills it.
        d = self.start(auto_backfill=True)
        wait_until(lambda: 0 < d.metric_sum("denormd_backfill_progress", mapping="orders-customer") < 0.9,
                   timeout=60, interval=0.01, message="the automatic backfill under way")
        d.kill9()
        stored = self.db.denormd_backfill.find_one({"_id": "orders-customer"})
        self.assertFalse(stored["done"])
        self.assertIn("lastKey", stored)
        self.assertEqual(self.versions()["orders-customer"]["backfill"], "running")
        rc, out, err = self.cmd("status")
        self.assertRegex(out, r"orders-customer: .*backfill running \d+% \(\d+ of [1-9]\d* documents\)")
        d2 = self.start(auto_backfill=True)
        wait_until(lambda: d2.metric_sum("denormd_backfill_progress", mapping="orders-customer") == 1,
                   timeout=120, message="the automatic backfill done after the restart")
        self.assertIn("continuing an unfinished backfill", d2.log())
        self.assertEqual(self.versions()["orders-customer"]["backfill"], "done")
        self.converge()
        self.assertEqual(d2.stop(), 0)
