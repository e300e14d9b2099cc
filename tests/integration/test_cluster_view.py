"""One cluster to its operator (docs/architecture.md, "One view of the cluster"): two `--ha`
instances split the namespaces evenly, each one's /api/v1/status, page and `denormd status`
show every namespace from its holder's report, GET /applied asked of either answers for the
whole cluster, and a dropped source, a paused instance or a killed one is shown as such by the
other."""
import json
import re
import signal
import unittest

from tests.integration.base import ShopTestCase
from tests.integration.harness import emulator_only, stop_within, wait_until
from tests.integration.leases import LeaseHelpers
from tests.integration.test_operator_page import chromium, page_dom


class ClusterViewTest(LeaseHelpers, ShopTestCase):
    DB_PREFIX = "view_"

    def status(self, d):
        code, body = d.get("/api/v1/status")
        self.assertEqual(code, 200, body)
        return json.loads(body)

    def namespaces(self, d):
        return {n["namespace"]: n for n in self.status(d)["namespaces"]}

    def applied_on(self, d):
        """Waits until `d` says every change made so far is applied, cluster-wide."""
        t = self.client.admin.command("ping")["operationTime"]
        wait_until(lambda: d.get("/applied?after=%d:%d&timeout=4" % (t.time, t.inc))[0] == 200,
                   timeout=60, interval=0, message="applied")

    def browser(self):
        browser = chromium()
        if browser is None:
            self.fail("no chromium: scripts/install-deps.sh installs Debian's chromium package")
        return browser

    def row(self, html, ns):
        """The page's row of namespace `ns`: its attributes and text."""
        m = re.search(r'<tr data-namespace="%s".*?</tr>' % re.escape(ns), html, re.S)
        self.assertIsNotNone(m, "no row for %s" % ns)
        return m.group(0)

    def two(self):
        self.shop.seed(customers=20, products=10, orders=60, hosts=3, logs=40, reviews=40)
        self.shop.fill_recent_arrays()
        ds, units, holders = self.start_spread(["a", "b"], self.instance)
        streams = sorted(u for u in units if "." in u)
        return ds, streams, holders

    def test_either_instance_shows_every_namespace_from_its_holder_and_applied_covers_the_cluster(self):
        ds, streams, holders = self.two()
        # Six namespaces on two instances: three each.
        self.assertEqual(len(streams), 6, streams)
        self.assertEqual(sorted(sum(1 for u in streams if holders[u] == n) for n in ds), [3, 3], holders)

        def whole(d):
            ns = self.namespaces(d)
            return set(ns) == set(streams) and all(
                n["streaming"] and n["holder"] == holders[u] and n.get("eventsPerSecond") is not None
                for u, n in ns.items())
        for name, d in ds.items():
            wait_until(lambda: whole(d), timeout=20, message="%s shows every namespace streaming" % name)
            st = self.status(d)
            self.assertEqual(st["health"]["state"], "ok", st["health"])
            self.assertEqual(st["health"]["summary"], "6 of 6 namespaces streaming")
            self.assertEqual(sorted(i["instance"] for i in st["instances"]), ["a", "b"])
            for u, n in self.namespaces(d).items():
                self.assertEqual(n["held"], holders[u] == name, n)
                if not n["held"]:
                    self.assertLess(n["reportAgeSeconds"], 10, n)

        # The command shows the same, from either side of the cluster.
        rc, out, err = self.cmd("status")
        self.assertEqual(rc, 0, err)
        for u in streams:
            block = out.split(u + ":", 1)[1].split("\n" + self.dbname + ".", 1)[0]
            self.assertIn("  stream: streaming, lag", block)
            self.assertIn("(as %s reported" % holders[u], block)
        self.assertIn("instances:\n", out)

        # /applied asked of either instance is a promise for every namespace: the dependents
        # show every change when it answers.
        for d in ds.values():
            for _ in range(300):
                self.shop.random_change()
            self.applied_on(d)
            self.assertEqual(self.shop.check(), [])

        # A source dropped on one instance is shown, with why, by the other.
        dropped = "%s.reviews" % self.dbname
        other = ds["b" if holders[dropped] == "a" else "a"]
        saved = list(self.db.reviews.find())
        self.db.reviews.drop()
        wait_until(lambda: not self.namespaces(other)[dropped]["streaming"], timeout=20,
                   message="the other instance shows the dropped source not streaming")
        n = self.namespaces(other)[dropped]
        self.assertIn("dropped", n["state"])
        self.assertIn("waiting for the collection to exist again", n["state"])
        self.assertEqual(n["holder"], holders[dropped])
        self.assertEqual(self.status(other)["health"]["state"], "critical")
        html = page_dom(self, other, self.browser())
        row = self.row(html, dropped)
        self.assertIn('data-state="not-streaming"', row)
        self.assertIn('data-holder="%s"' % holders[dropped], row)
        self.assertIn("waiting for the collection to exist again", row)
        self.assertRegex(html, r'<div id="health" data-state="critical">5 of 6 namespaces streaming')
        self.db.reviews.insert_many(saved)
        wait_until(lambda: self.namespaces(other)[dropped]["streaming"], timeout=30,
                   message="streaming again once the source exists again")
        self.converge()
        for d in ds.values():
            self.assertEqual(d.stop(), 0)

    def test_a_paused_or_killed_instances_namespaces_move_and_the_other_shows_them_streaming(self):
        ds, streams, holders = self.two()
        a, b = ds["a"], ds["b"]
        of_b = [u for u in streams if holders[u] == "b"]
        wait_until(lambda: all(self.namespaces(a)[u].get("reportAgeSeconds") is not None for u in of_b),
                   timeout=20, message="a shows b's reports")
        # Paused: its last report grows old on a's page until its leases expire and a takes
        # its namespaces; then a shows them as its own.
        b.proc.send_signal(signal.SIGSTOP)
        try:
            wait_until(lambda: all(self.namespaces(a)[u]["holder"] == "a" and self.namespaces(a)[u]["streaming"]
                                   for u in streams), timeout=30, message="a streams everything")
            st = self.status(a)
            self.assertEqual([i["instance"] for i in st["instances"]], ["a"])
            self.assertEqual(st["health"]["state"], "ok", st["health"])
        finally:
            b.proc.send_signal(signal.SIGCONT)
        for _ in range(200):
            self.shop.random_change()
        self.converge()
        # Back, it takes its share again; killed, its share moves and a shows it streaming.
        self.spread(ds, set(streams) | {"auto-backfill"})
        b.kill9()
        wait_until(lambda: all(n["streaming"] and n["holder"] == "a" for n in self.namespaces(a).values()),
                   timeout=30, message="a streams b's namespaces after the kill")
        for _ in range(200):
            self.shop.random_change()
        self.applied_on(a)
        self.assertEqual(self.shop.check(), [])
        html = page_dom(self, a, self.browser())
        for u in streams:
            self.assertIn('data-state="streaming"', self.row(html, u))
            self.assertIn('data-holder="a"', self.row(html, u))
        self.assertIn('data-instance="a"', html)
        self.assertNotIn('data-instance="b"', html)
        self.assertEqual(a.stop(), 0)

    def test_with_mongodb_killed_both_instances_answer_and_name_every_namespace(self):
        if not emulator_only():
            self.skipTest("stops the test server")
        ds, streams, holders = self.two()
        for d in ds.values():
            wait_until(lambda: all(n["streaming"] for n in self.namespaces(d).values()), timeout=20,
                       message="every namespace streaming")
        self.client.close()
        self.clean_up = lambda failed: None  # nothing left to clean on a stopped server
        self.emulator.stop()
        browser = self.browser()
        for name, d in ds.items():
            wait_until(lambda: not self.status(d)["mongodb"]["reachable"], timeout=20,
                       message="%s sees MongoDB unreachable" % name)
            st = self.status(d)
            self.assertEqual(sorted(n["namespace"] for n in st["namespaces"]), streams)
            for n in st["namespaces"]:
                self.assertFalse(n["streaming"], n)
                self.assertTrue(n["state"], n)
                if not n["held"]:
                    # Another instance's: why, and what its holder last said.
                    self.assertTrue(n["state"].startswith("MongoDB cannot be reached"), n)
                    self.assertIn("%s last reported it" % holders[n["namespace"]], n["state"])
            html = page_dom(self, d, browser)
            self.assertRegex(html, r'<div id="mongodb">MongoDB cannot be reached since ')
            for u in streams:
                self.assertIn('data-state="not-streaming"', self.row(html, u))
        for d in ds.values():
            self.assertEqual(stop_within(d, 6)[0], 0)


if __name__ == "__main__":
    unittest.main()
