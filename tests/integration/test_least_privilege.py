"""denormd under the least-privilege role of docs/operations.md ("A least-privilege MongoDB
role"), on `mongo-emulator --auth`: a root user through the localhost exception, a user
administrator, then the document's createRole and createUser as that administrator (read from
the document by tests/emulator/tests/pymongo_auth.py), and `denormd run` with the sample
mappings/ as user "denormd". The sample shop then runs exactly (every dependent of the eight
mappings checked against the suites' oracles); a wrong password, and a role without one of its
privileges, are named where an operator looks: /readyz, the status API, the log and
denormd_errors_total."""
import json
import os
import sys
import unittest
import zlib

import pymongo
from bson.son import SON

from tests.integration import aggregates
from tests.integration.base import kill_daemons
from tests.integration.harness import REAL_URI, SOURCE_DIR, Denormd, Emulator, wait_until
from tests.integration.shop import Shop

sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "emulator", "tests"))
import pymongo_auth  # noqa: E402  (the docs' createRole/createUser, read from the document)

PASSWORD = "s3cr@t pw"  # needs percent-encoding in the URI, as the docs say
MAPPINGS = os.path.join(SOURCE_DIR, "mappings")


def role_without(create_role, collection, action):
    """The documented createRole with `action` taken out on shop.`collection`."""
    out = json.loads(json.dumps(create_role))
    found = 0
    for p in out["privileges"]:
        if p["resource"] == {"db": "shop", "collection": collection} and action in p["actions"]:
            p["actions"].remove(action)
            found += 1
    assert found == 1, "the documented role grants no %s on shop.%s" % (action, collection)
    return out


@unittest.skipIf(REAL_URI, "needs a test server of its own, started with --auth")
class LeastPrivilegeTest(unittest.TestCase):
    def setUp(self):
        self.emulator = Emulator("--auth")
        self.root = pymongo.MongoClient(self.emulator.create_first_user("root", "root-pw"),
                                        serverSelectionTimeoutMS=10000)
        self.root.admin.command("createUser", "useradmin", pwd="ua-pw",
                                roles=[{"role": "userAdminAnyDatabase", "db": "admin"}])
        self.db = self.root.shop
        self.shop = Shop(self.db, seed=zlib.crc32(self.id().encode()) % 1000)
        self.create_role, self.create_user = pymongo_auth.commands_from_docs()
        self.create_user["pwd"] = PASSWORD
        self.daemons = []

    def tearDown(self):
        kill_daemons(self, self.daemons)
        self.root.close()
        self.emulator.stop()

    # ---- helpers -----------------------------------------------------------------------------
    def as_user_administrator(self, *commands):
        admin = pymongo.MongoClient(self.emulator.uri_as("useradmin", "ua-pw"), serverSelectionTimeoutMS=10000)
        try:
            for c in commands:
                admin.admin.command(SON(c))
        finally:
            admin.close()

    def grant(self, create_role=None):
        """The documented role (or `create_role`) and user, as a user administrator runs them."""
        self.as_user_administrator(create_role or self.create_role, self.create_user)

    def restore_role(self):
        """Gives the role the documented privileges again (updateRole)."""
        self.as_user_administrator({"updateRole": self.create_role["createRole"],
                                    "privileges": self.create_role["privileges"]})

    def start(self, password=PASSWORD, auto_backfill=False):
        d = Denormd(self.emulator.uri_as(self.create_user["createUser"], password), "shop", MAPPINGS,
                    auto_backfill=auto_backfill)
        self.daemons.append(d)
        return d

    def pre_images(self):
        """docs/operations.md, "Pre-images for aggregate mappings", as an administrator does."""
        for c in ("reviews", "orders"):
            self.db.command({"collMod": c, "changeStreamPreAndPostImages": {"enabled": True}})

    def ready(self, d, timeout=30):
        wait_until(lambda: d.get("/readyz")[0] == 200, timeout=timeout, message="denormd ready")

    def not_ready_saying(self, d, text, timeout=30):
        """Waits until /readyz is 503 and names `text`; the body."""
        got = {}

        def check():
            got["r"] = d.get("/readyz")
            return got["r"][0] == 503 and text in got["r"][1]
        wait_until(check, timeout=timeout, message="/readyz naming %r (last: %r)" % (text, got.get("r")))
        return got["r"][1]

    def status(self, d):
        code, body = d.get("/api/v1/status")
        self.assertEqual(code, 200, body)
        return json.loads(body)

    def applied(self, d):
        t = self.root.admin.command("ping")["operationTime"]
        wait_until(lambda: d.get("/applied?after=%d:%d&timeout=4" % (t.time, t.inc))[0] == 200,
                   timeout=90, interval=0, message="every change applied")

    def aggregate_mismatches(self):
        return aggregates.mismatches(self.db, MAPPINGS)

    # ---- the sample shop ---------------------------------------------------------------------
    def test_the_sample_shop_runs_exactly_under_the_documented_role(self):
        self.shop.seed()
        self.pre_images()
        self.grant()
        d = self.start(auto_backfill=True)
        self.ready(d)
        for name in sorted(f[:-5] for f in os.listdir(MAPPINGS) if f.endswith(".json")):
            wait_until(lambda: d.metric_sum("denormd_backfill_progress", mapping=name) == 1, timeout=90,
                       message="the automatic backfill of %s done" % name)
        for _ in range(400):
            self.shop.random_change()
        self.applied(d)
        # Once /applied answers, every dependent is in line: no waiting.
        self.assertEqual(self.shop.check(), [])
        self.assertEqual(self.aggregate_mismatches(), [])
        self.assertGreater(self.db.customers.count_documents({"orderCount": {"$gt": 0}}), 10)
        self.assertEqual(d.get("/readyz"), (200, "ready\n"))
        self.assertEqual(d.metric_sum("denormd_errors_total", code="13"), 0, d.log()[-4000:])
        self.assertEqual(d.metric_sum("denormd_deadletters_total"), 0)
        self.assertNotIn("not authorized", d.log())
        self.assertEqual(d.stop(), 0)

    # ---- failure states ----------------------------------------------------------------------
    def test_a_wrong_password_is_named_in_readyz_the_status_and_the_log(self):
        self.shop.seed(customers=5, products=5, orders=20, hosts=2, logs=20, reviews=20)
        self.grant()
        d = self.start(password="not the password")
        said = 'authentication failed for user "denormd" (authSource admin)'
        body = self.not_ready_saying(d, said)
        self.assertIn("waiting for MongoDB: ", body)
        self.assertNotIn("not the password", body)
        status = self.status(d)
        self.assertIn(said, status["mongodb"]["error"])
        self.assertTrue(status["mongodb"]["reachable"], status["mongodb"])
        for n in status["namespaces"]:
            self.assertFalse(n["streaming"], n)
            self.assertIn(said, n["state"], n)
        logged = said.replace('"', '\\"')  # as the text log quotes a field
        wait_until(lambda: logged in d.log(), timeout=10, message="the log naming the user")
        self.assertGreater(d.metric_sum("denormd_errors_total", code="18"), 0)
        self.assertNotIn("not the password", d.log())
        # The password given to the user instead: denormd goes on by itself.
        self.as_user_administrator({"updateUser": "denormd", "pwd": "not the password"})
        self.ready(d)
        self.assertNotIn(said, d.get("/api/v1/status")[1])
        self.assertEqual(d.stop(), 0)

    def test_a_missing_update_privilege_is_named_with_its_namespace(self):
        self.shop.seed(customers=5, products=5, orders=20, hosts=2, logs=20, reviews=20)
        self.grant(role_without(self.create_role, "orders", "update"))
        d = self.start()
        self.ready(d)
        order = self.db.orders.find_one({"status": {"$in": ["NEW", "PAID"]}})
        self.db.customers.update_one({"_id": order["customerId"]}, {"$set": {"name": "Renamed"}})
        said = "the user's roles do not grant update on shop.orders"
        body = self.not_ready_saying(d, said)
        self.assertIn("shop.customers: cannot write the copies: " + said, body)
        states = {n["namespace"]: n["state"] for n in self.status(d)["namespaces"]}
        self.assertIn(said, states["shop.customers"])
        self.assertNotIn(said, states["shop.hosts"])
        wait_until(lambda: d.metric_sum("denormd_errors_total", stage="write", code="13") > 0, timeout=10,
                   message="denormd_errors_total{stage=write,code=13}")
        self.assertIn(said, d.log())
        self.assertNotEqual(self.db.orders.find_one({"_id": order["_id"]})["customer"]["name"], "Renamed")
        # Granted: the batch goes through and nothing was skipped.
        self.restore_role()
        self.ready(d)
        self.applied(d)
        self.assertEqual(self.db.orders.find_one({"_id": order["_id"]})["customer"]["name"], "Renamed")
        self.assertEqual(d.stop(), 0)

    def test_a_missing_change_stream_privilege_is_named_with_its_namespace(self):
        self.shop.seed(customers=5, products=5, orders=20, hosts=2, logs=20, reviews=20)
        self.grant(role_without(self.create_role, "hosts", "changeStream"))
        d = self.start()
        said = "the user's roles do not grant changeStream and find on shop.hosts"
        self.not_ready_saying(d, said)
        # The others stream (hosts may be refused before they have opened their streams).
        wait_until(lambda: "shop.customers:" not in d.get("/readyz")[1], timeout=30,
                   message="shop.customers streaming")
        body = self.not_ready_saying(d, said)
        self.assertIn("shop.hosts: cannot open the change stream: " + said, body)
        self.assertNotIn("shop.customers:", body)
        states = {n["namespace"]: (n["streaming"], n["state"]) for n in self.status(d)["namespaces"]}
        self.assertFalse(states["shop.hosts"][0])
        self.assertIn(said, states["shop.hosts"][1])
        self.assertEqual(states["shop.customers"], (True, "streaming"))
        self.assertGreater(d.metric_sum("denormd_errors_total", stage="stream", code="13"), 0)
        self.assertIn(said, d.log())
        self.restore_role()
        self.ready(d)
        host = self.db.hosts.find_one()
        self.db.hosts.update_one({"_id": host["_id"]}, {"$set": {"name": "renamed-host"}})
        self.applied(d)
        names = {m["host"]["name"] for m in self.db.logmsgs.find({"hostId": host["_id"]})}
        self.assertEqual(names, {"renamed-host"})
        self.assertEqual(d.stop(), 0)

    def test_without_list_collections_the_image_check_and_a_dropped_source_say_why(self):
        """The two reasons the role grants listCollections on shop: at start denormd reads the
        aggregate mappings' sources' options (pre- and post-images), and a watcher whose source
        was dropped asks whether it exists again."""
        self.shop.seed(customers=5, products=5, orders=20, hosts=2, logs=20, reviews=20)
        self.pre_images()
        self.grant(role_without(self.create_role, "", "listCollections"))
        d = self.start()
        self.ready(d)
        said = "the user's roles do not grant listCollections on the database shop"
        self.assertIn("cannot tell whether shop.reviews keeps pre- and post-images (needed by "
                      "products-rating): " + said, d.log())
        self.db.hosts.drop()
        body = self.not_ready_saying(d, "shop.hosts: cannot tell whether the source collection exists again: "
                                     + said)
        self.assertNotIn("shop.customers:", body)
        self.assertGreater(d.metric_sum("denormd_errors_total", stage="stream", code="13"), 0)
        # Granted, it waits for the collection, and re-syncs once it is back.
        self.restore_role()
        self.not_ready_saying(d, "shop.hosts: source dropped; waiting for the collection to exist again")
        self.db.hosts.insert_one({"_id": "web-09", "name": "web-09", "ipaddr": "10.0.0.9"})
        self.ready(d)
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
