"""Computed fields end to end (docs/computed-fields.md): copies, recent arrays and aggregates
whose fields are aggregation expressions, evaluated by the server. The expected values are
computed here in Python, by rules written from MongoDB's documentation, sharing nothing with
denormd; the workload is random (seeded per test), and a kill -9, a replay and a reload of a
changed expression must all end exact."""
import json
import random
import signal
import time

from tests.integration.base import ShopTestCase
from tests.integration.harness import mapping_folder, wait_until

MISSING = object()


def customers_copy(db, display=None):
    return {"name": "orders-customer", "kind": "copy",
            "source": {"db": db, "collection": "customers"},
            "target": {"db": db, "collection": "orders", "key": "customerId"},
            "into": "customer",
            "fields": {"name": "name",
                       "display": display or {"$concat": ["$name", " <", "$email", ">"]},
                       "city": {"$toUpper": {"$ifNull": ["$address.city", "unknown"]}},
                       "code": {"$toInt": "$code"}},
            "onSourceDelete": "unset"}


def recent_reviews(db):
    return {"name": "products-recent-reviews", "kind": "recent",
            "source": {"db": db, "collection": "reviews", "parentKey": "productId"},
            "target": {"db": db, "collection": "products"},
            "into": "recentReviews", "idField": "id",
            "fields": {"id": "_id", "stars": "stars", "at": "at",
                       "label": {"$concat": [{"$toString": "$stars"}, "/5 by ", "$author"]}},
            "sort": {"at": -1}, "limit": 3, "onSourceDelete": "pullAndRefill"}


def customers_spent(db, mode="recompute"):
    return {"name": "customers-spent", "kind": "aggregate", "mode": mode,
            "fillNewTargets": mode == "incremental",
            "source": {"db": db, "collection": "lines", "parentKey": "customerId"},
            "target": {"db": db, "collection": "customers"},
            "into": "spent",
            "fields": {"total": {"$sum": {"$multiply": ["$quantity", "$price"]}},
                       "lines": {"$count": {}}}}


# The oracle: MongoDB's semantics of the expressions above, for the values the workload uses.
def concat(*parts):
    if any(p is None or p is MISSING for p in parts):
        return None
    return "".join(parts)


def expected_customer(c, display="default"):
    if c is None:
        return {}
    out = {"name": c.get("name", MISSING)}
    if display == "default":
        out["display"] = concat(c.get("name", MISSING), " <", c.get("email", MISSING), ">")
    else:
        out["display"] = concat("Dear ", c.get("name", MISSING))
    city = (c.get("address") or {}).get("city") if isinstance(c.get("address"), dict) else None
    out["city"] = (city if city is not None else "unknown").upper()
    code = c.get("code", MISSING)
    if code is MISSING or code is None:
        out["code"] = None  # $toInt of null or of a missing field is null
    elif isinstance(code, str) and code.lstrip("-").isdigit():
        out["code"] = int(code)
    else:
        out["code"] = MISSING  # "abc": $toInt fails; the field is absent and a dead letter says why
    return {k: v for k, v in out.items() if v is not MISSING}


class ComputedFieldsTest(ShopTestCase):
    DB_PREFIX = "computed_"

    def applied(self, d):
        t = self.client.admin.command("ping")["operationTime"]
        # Waits of 4 s each: the harness's HTTP client gives up after 5.
        wait_until(lambda: d.get("/applied?after=%d:%d&timeout=4" % (t.time, t.inc))[0] == 200,
                   timeout=60, interval=0, message="applied")

    def verify(self):
        rc, out, err = self.cmd("verify", "--json")
        self.assertIn(rc, (0, 3), err)
        return rc, json.loads(out)

    def random_customer(self, rnd, i):
        c = {"_id": i, "name": rnd.choice(["Ada", "Bob", "Cy", "Dee"]) + str(i),
             "email": "u%d@example.com" % i}
        if rnd.random() < 0.7:
            c["address"] = {"city": rnd.choice(["paris", "Oslo", "lima"])}
        c["code"] = str(rnd.randint(1, 999)) if rnd.random() < 0.9 else "abc"
        return c

    def mutate_customer(self, rnd, i):
        choice = rnd.randrange(7)
        if choice == 0:
            return {"$set": {"name": rnd.choice(["Eve", "Fay", "Gus"]) + str(rnd.randint(0, 99))}}
        if choice == 1:
            return {"$unset": {"email": ""}} if rnd.random() < 0.3 else {"$set": {"email": "e%d@x.org" % rnd.randint(0, 99)}}
        if choice == 2:
            return {"$set": {"address.city": rnd.choice(["rome", "Kyiv", None])}}
        if choice == 3:
            return {"$unset": {"address": ""}}
        if choice == 4:
            return {"$set": {"code": rnd.choice(["12", "-7", "x1", "300"])}}
        if choice == 5:
            return {"$set": {"unrelated": rnd.randint(0, 9)}}
        return {"$set": {"name": "Z" + str(i)}, "$unset": {"code": ""}}

    def orders_as_expected(self, display="default"):
        customers = {c["_id"]: c for c in self.db.customers.find()}
        for o in self.db.orders.find():
            want = expected_customer(customers.get(o["customerId"]), display)
            if o.get("customer", {}) != want:
                self.mismatch = (o, want)
                return False
        return True

    def test_copies_stay_exact_under_a_random_workload_a_kill9_and_a_reload(self):
        rnd = random.Random(1)
        self.mappings = mapping_folder(customers_copy(self.dbname))
        for c in ("customers", "orders"):
            self.db.create_collection(c)
        self.db.orders.create_index("customerId")
        d = self.start()
        self.db.customers.insert_many([self.random_customer(rnd, i) for i in range(20)])
        self.db.orders.insert_many([{"_id": i, "customerId": i % 20} for i in range(60)])
        # New orders are not filled (no fillNewTargets): write every customer once so every
        # order holds its copy.
        for i in range(20):
            self.db.customers.update_one({"_id": i}, {"$set": {"touched": 1}})
        for _ in range(150):
            i = rnd.randrange(20)
            self.db.customers.update_one({"_id": i}, self.mutate_customer(rnd, i))
        self.applied(d)
        self.mismatch = None
        self.assertTrue(self.orders_as_expected(), self.mismatch)

        # A failing expression is a dead letter naming mapping, field, document and error.
        self.db.customers.update_one({"_id": 3}, {"$set": {"code": "not a number"}})
        self.db.customers.update_one({"_id": 4}, {"$set": {"name": "After"}})
        self.applied(d)
        self.assertTrue(self.orders_as_expected(), self.mismatch)
        letters = [x for x in self.db.denormd_deadletters.find({"mapping": "orders-customer"})
                   if "not a number" in json.dumps(x, default=str) or '"code"' in json.dumps(x, default=str)]
        self.assertTrue(letters, list(self.db.denormd_deadletters.find()))
        text = json.dumps(letters[-1], default=str)
        self.assertIn('computed field \\"code\\"', text)
        self.assertIn("3", text)
        self.assertIn("241", text)  # ConversionFailure, as the server said it

        # kill -9 in the middle of a burst; the restart replays from the checkpoint.
        for _ in range(60):
            i = rnd.randrange(20)
            self.db.customers.update_one({"_id": i}, self.mutate_customer(rnd, i))
        d.kill9()
        for _ in range(40):
            i = rnd.randrange(20)
            self.db.customers.update_one({"_id": i}, self.mutate_customer(rnd, i))
        d = self.start()
        self.applied(d)
        self.assertTrue(self.orders_as_expected(), self.mismatch)
        rc, report = self.verify()
        self.assertEqual((rc, report["drifted"]), (0, 0), report)

        # A changed expression, reloaded while running: the automatic backfill rewrites every
        # order, and the stream goes on with the new expression.
        self.assertEqual(d.stop(), 0)
        d = self.start(auto_backfill=True)
        with open(self.mappings + "/orders-customer.json", "w") as f:
            json.dump(customers_copy(self.dbname, {"$concat": ["Dear ", "$name"]}), f)
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: self.orders_as_expected("dear"), timeout=30, message="orders rewritten")
        self.db.customers.update_one({"_id": 5}, {"$set": {"name": "Reloaded"}})
        self.applied(d)
        self.assertTrue(self.orders_as_expected("dear"), self.mismatch)
        self.assertEqual(d.stop(), 0)

    def test_a_replay_recomputes_the_same_values(self):
        rnd = random.Random(2)
        self.mappings = mapping_folder(customers_copy(self.dbname))
        for c in ("customers", "orders"):
            self.db.create_collection(c)
        d = self.start()
        self.db.customers.insert_many([self.random_customer(rnd, i) for i in range(5)])
        self.db.orders.insert_many([{"_id": i, "customerId": i % 5} for i in range(10)])
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
        for _ in range(40):
            i = rnd.randrange(5)
            self.db.customers.update_one({"_id": i}, self.mutate_customer(rnd, i))
        self.applied(d)
        self.assertEqual(d.stop(), 0)
        self.db.orders.update_many({}, {"$unset": {"customer": ""}})
        self.db.customers.update_many({}, {"$set": {"touched": 2}})  # every customer once more
        d = self.start("--start-at", since)
        self.applied(d)
        self.mismatch = None
        self.assertTrue(self.orders_as_expected(), self.mismatch)
        self.assertEqual(d.stop(), 0)

    def test_recent_arrays_and_aggregates_with_expressions(self):
        rnd = random.Random(3)
        self.mappings = mapping_folder(recent_reviews(self.dbname), customers_spent(self.dbname))
        for c in ("reviews", "products", "lines", "customers"):
            self.db.create_collection(c)
        self.db.products.insert_many([{"_id": p} for p in range(4)])
        self.db.customers.insert_many([{"_id": c} for c in range(4)])
        d = self.start()
        next_id = 0
        for step in range(120):
            if step == 60:
                d.kill9()  # mid-workload: the restart replays from the last checkpoint
                d = self.start()
            next_id += 1
            r = rnd.random()
            if r < 0.4:
                self.db.reviews.insert_one({"_id": next_id, "productId": rnd.randrange(4),
                                            "stars": rnd.randint(1, 5), "author": rnd.choice(["ann", "bo"]),
                                            "at": step})
            elif r < 0.5:
                self.db.reviews.delete_one({"_id": rnd.randrange(next_id)})
            elif r < 0.6:
                self.db.reviews.update_one({"_id": rnd.randrange(next_id)}, {"$set": {"stars": rnd.randint(1, 5)}})
            elif r < 0.85:
                self.db.lines.insert_one({"_id": next_id, "customerId": rnd.randrange(4),
                                          "quantity": rnd.randint(1, 3), "price": rnd.choice([2, 2.5, 10])})
            else:
                self.db.lines.update_one({"_id": rnd.randrange(next_id)}, {"$inc": {"quantity": 1}})
        self.applied(d)
        self.assertEqual(d.stop(), 0)
        for p in self.db.products.find():
            reviews = sorted(self.db.reviews.find({"productId": p["_id"]}), key=lambda x: -x["at"])[:3]
            want = [{"id": x["_id"], "stars": x["stars"], "at": x["at"],
                     "label": "%d/5 by %s" % (x["stars"], x["author"])} for x in reviews]
            self.assertEqual(p.get("recentReviews", []), want, p)
        for c in self.db.customers.find():
            lines = list(self.db.lines.find({"customerId": c["_id"]}))
            if not lines:
                continue
            self.assertAlmostEqual(c["spent"]["total"], sum(x["quantity"] * x["price"] for x in lines))
            self.assertEqual(c["spent"]["lines"], len(lines))
        rc, report = self.verify()
        self.assertEqual((rc, report["drifted"]), (0, 0), report)

    def test_an_incremental_aggregate_sums_an_expression_exactly(self):
        rnd = random.Random(4)
        self.mappings = mapping_folder(customers_spent(self.dbname, "incremental"))
        for c in ("lines", "customers"):
            self.db.create_collection(c)
        for c in ("lines", "customers"):
            self.db.command({"collMod": c, "changeStreamPreAndPostImages": {"enabled": True}})
        self.db.customers.insert_many([{"_id": c} for c in range(4)])
        d = self.start()
        ids = []
        for step in range(150):
            r = rnd.random()
            if r < 0.5 or not ids:
                ids.append(step)
                self.db.lines.insert_one({"_id": step, "customerId": rnd.randrange(4),
                                          "quantity": rnd.randint(1, 3), "price": rnd.choice([2, 2.5, 10])})
            elif r < 0.7:
                self.db.lines.update_one({"_id": rnd.choice(ids)}, {"$inc": {"quantity": 1}})
            elif r < 0.8:
                self.db.lines.update_one({"_id": rnd.choice(ids)}, {"$set": {"customerId": rnd.randrange(4)}})
            else:
                self.db.lines.delete_one({"_id": ids.pop(rnd.randrange(len(ids)))})
        self.applied(d)
        self.assertEqual(d.stop(), 0)
        for c in self.db.customers.find():
            lines = list(self.db.lines.find({"customerId": c["_id"]}))
            self.assertEqual(c.get("spent", {}).get("total", 0), sum(x["quantity"] * x["price"] for x in lines), c)
            self.assertEqual(c.get("spent", {}).get("lines", 0), len(lines), c)
        rc, report = self.verify()
        self.assertEqual((rc, report["drifted"]), (0, 0), report)

    def test_a_failing_child_in_an_aggregate_is_a_dead_letter_and_the_stream_goes_on(self):
        self.failing_child(False)

    def test_under_ha_a_failing_child_is_left_out_by_fenced_writes_too(self):
        """Under --ha the recompute runs in a transaction, which the server's refusal aborts: the
        batch is written again one call per transaction, where only the failing parent is left."""
        self.failing_child(True)

    def test_under_ha_copies_with_a_failing_document_stay_exact(self):
        """New orders are filled from their customer inside a fenced transaction; computing a
        failing customer's fields there would abort it, so they are computed outside."""
        m = customers_copy(self.dbname)
        m["fillNewTargets"] = True
        self.mappings = mapping_folder(m)
        for c in ("customers", "orders"):
            self.db.create_collection(c)
        d = self.start_ha(3)
        self.db.customers.insert_many([{"_id": 1, "name": "A", "email": "a@x", "code": "1"},
                                       {"_id": 2, "name": "B", "email": "b@x", "code": "2"}])
        self.db.orders.insert_many([{"_id": i, "customerId": 1 + i % 2} for i in range(6)])
        self.db.customers.update_one({"_id": 1}, {"$set": {"code": "nope"}})
        self.db.customers.update_one({"_id": 2}, {"$set": {"name": "B2"}})
        self.applied(d)
        self.db.orders.insert_many([{"_id": 10 + i, "customerId": 1 + i % 2} for i in range(4)])
        self.applied(d)
        self.mismatch = None
        self.assertTrue(self.orders_as_expected(), self.mismatch)
        # One for the update of customer 1, one for each fill of its new orders (the first three
        # too when their fills read customer 1 after its update); none for customer 2.
        letters = list(self.db.denormd_deadletters.find({"mapping": "orders-customer"}))
        self.assertGreaterEqual(len(letters), 3, letters)
        for x in letters:
            self.assertIn("source document 1:", x["error"]["reason"])
        self.assertEqual(d.stop(), 0)

    def start_ha(self, units):
        """An --ha instance once it holds its `units` leases and streams them (a standby is ready
        before it holds any)."""
        d = self.start("--ha", "--instance-id", "a")
        wait_until(lambda: d.metric_sum("denormd_lease_held") >= units, timeout=20, message="leases held")
        wait_until(lambda: d.get("/readyz")[0] == 200, timeout=20, message="streaming")
        return d

    def failing_child(self, ha):
        """A child whose expression fails (quantity "two") is left out of its parent's values,
        as a fresh evaluation leaves such a value absent, with a dead letter naming it; the
        parent still gets the others' values (before: it was not recomputed at all)."""
        self.mappings = mapping_folder(customers_spent(self.dbname))
        for c in ("lines", "customers"):
            self.db.create_collection(c)
        self.db.customers.insert_many([{"_id": 1}, {"_id": 2}])
        d = self.start_ha(2) if ha else self.start()
        self.db.lines.insert_one({"_id": 1, "customerId": 1, "quantity": 2, "price": 5})
        self.db.lines.insert_one({"_id": 2, "customerId": 1, "quantity": "two", "price": 5})
        self.db.lines.insert_one({"_id": 3, "customerId": 2, "quantity": 3, "price": 5})
        self.applied(d)
        self.assertEqual(self.db.customers.find_one({"_id": 2}).get("spent"), {"total": 15, "lines": 1})
        self.assertEqual(self.db.customers.find_one({"_id": 1}).get("spent"), {"total": 10, "lines": 2})
        letters = list(self.db.denormd_deadletters.find({"mapping": "customers-spent"}))
        self.assertTrue(letters)
        reasons = json.dumps(letters, default=str)
        self.assertIn("the child 2 of the parent 1 is left out", reasons)
        self.assertIn("multiply", reasons.lower())
        # Fixed, the child counts again.
        self.db.lines.update_one({"_id": 2}, {"$set": {"quantity": 1}})
        self.applied(d)
        self.assertEqual(self.db.customers.find_one({"_id": 1}).get("spent"), {"total": 15, "lines": 2})
        self.assertEqual(d.stop(), 0)

    def test_an_incremental_parent_whose_recompute_meets_a_failing_child_gets_its_position(self):
        """An incremental aggregate's parents are recomputed from a snapshot by the automatic
        backfill; one child's expression fails there. The parent still gets the other
        children's values and its position, so later deltas add onto the right values (before:
        the recompute was refused, the parent kept no position, and the next child made it
        `lines: 1` for four children)."""
        self.mappings = mapping_folder(customers_spent(self.dbname, "incremental"))
        for c in ("lines", "customers"):
            self.db.create_collection(c)
            self.db.command({"collMod": c, "changeStreamPreAndPostImages": {"enabled": True}})
        self.db.customers.insert_many([{"_id": 7}, {"_id": 8}])
        self.db.lines.insert_many([{"_id": 1, "customerId": 7, "quantity": 2, "price": 5},
                                   {"_id": 2, "customerId": 7, "quantity": "bad", "price": 5},
                                   {"_id": 3, "customerId": 7, "quantity": 1, "price": 10},
                                   {"_id": 5, "customerId": 8, "quantity": 1, "price": 4}])
        d = self.start(auto_backfill=True)
        wait_until(lambda: "_denormd" in self.db.customers.find_one({"_id": 8}).get("spent", {}),
                   timeout=30, message="the backfill of the other parent")
        spent = self.db.customers.find_one({"_id": 7}).get("spent", {})
        self.assertEqual((spent.get("total"), spent.get("lines")), (20, 3), spent)
        self.assertIn("_denormd", spent, "the parent has no position")
        self.db.lines.insert_one({"_id": 4, "customerId": 7, "quantity": 1, "price": 1})
        self.applied(d)
        spent = self.db.customers.find_one({"_id": 7})["spent"]
        self.assertEqual((spent["total"], spent["lines"]), (21, 4), spent)
        letters = json.dumps(list(self.db.denormd_deadletters.find()), default=str)
        self.assertIn("the child 2 of the parent 7 is left out", letters)
        self.db.lines.update_one({"_id": 2}, {"$set": {"quantity": 3}})
        self.applied(d)
        spent = self.db.customers.find_one({"_id": 7})["spent"]
        self.assertEqual((spent["total"], spent["lines"]), (36, 4), spent)
        self.assertEqual(d.stop(), 0)

    def test_verify_checks_everything_else_and_names_a_failing_child(self):
        """One aggregate child's expression fails. verify checks every other parent and every
        other mapping, reports that child (mapping, parent, _id, the server's error) and exits 3;
        --repair repairs the rest. (Before: exit 1 for everything, naming nothing.)"""
        self.mappings = mapping_folder(customers_spent(self.dbname), customers_copy(self.dbname))
        for c in ("lines", "customers", "orders"):
            self.db.create_collection(c)
        self.db.customers.insert_many([{"_id": i, "name": "C%d" % i, "email": "c%d@x" % i, "code": str(i)}
                                       for i in (1, 2, 3)])
        self.db.orders.insert_many([{"_id": 10 + i, "customerId": i} for i in (1, 2, 3)])
        d = self.start(auto_backfill=True)
        self.db.lines.insert_many([{"_id": 1, "customerId": 1, "quantity": 2, "price": 5},
                                   {"_id": 2, "customerId": 1, "quantity": "two", "price": 5},
                                   {"_id": 3, "customerId": 2, "quantity": 3, "price": 5},
                                   {"_id": 4, "customerId": 3, "quantity": 1, "price": 5}])
        self.db.customers.update_one({"_id": 3}, {"$set": {"name": "C3b"}})
        self.applied(d)
        self.assertEqual(d.stop(), 0)
        # Drift behind denormd's back: a wrong total on parent 2, a stale name on order 13.
        self.db.customers.update_one({"_id": 2}, {"$set": {"spent.total": 999}})
        self.db.orders.update_one({"_id": 13}, {"$set": {"customer.name": "stale"}})
        rc, out, err = self.cmd("verify", "--json")
        self.assertEqual(rc, 3, out + err)
        report = json.loads(out)
        by = {m["mapping"]: m for m in report["mappings"]}
        spent = by["customers-spent"]
        self.assertEqual(spent["checked"], 3, spent)
        self.assertEqual(spent["drifted"], 1, spent)
        self.assertEqual(spent["failingChildren"], 1, spent)
        example = spent["failingExamples"][0]
        self.assertEqual((example["parent"], example["_id"]), (1, 2), example)
        self.assertIn("multiply", example["error"].lower())
        self.assertEqual(by["orders-customer"]["drifted"], 1, by["orders-customer"])
        rc, out, _ = self.cmd("verify")
        self.assertEqual(rc, 3)
        self.assertIn("_id 2 of parent 1:", out)
        rc, out, err = self.cmd("verify", "--repair", "--json")
        self.assertEqual(rc, 3, out + err)
        self.assertEqual(json.loads(out)["repaired"], 2, out)
        self.assertEqual(self.db.customers.find_one({"_id": 2})["spent"]["total"], 15)
        self.assertEqual(self.db.orders.find_one({"_id": 13})["customer"]["name"], "C3b")
        # The child fixed, verify is clean.
        self.db.lines.update_one({"_id": 2}, {"$set": {"quantity": 1}})
        d = self.start()
        self.applied(d)
        self.assertEqual(d.stop(), 0)
        rc, out, err = self.cmd("verify")
        self.assertEqual(rc, 0, out + err)

    def test_a_bad_expression_is_refused_at_load_naming_the_file_and_pointer(self):
        m = customers_copy(self.dbname, {"$concatt": ["$name"]})
        self.mappings = mapping_folder(m)
        rc, out, err = self.cmd("check")
        self.assertEqual(rc, 2, out + err)
        self.assertIn("/fields/display/$concatt", err)
        self.assertIn("$concat", err)  # the did-you-mean
        m = customers_copy(self.dbname, {"$function": {"body": "x", "args": [], "lang": "js"}})
        self.mappings = mapping_folder(m)
        rc, out, err = self.cmd("check")
        self.assertEqual(rc, 2, out + err)
        self.assertIn("$function", err)
