"""What the suites that change mappings share: an added field on orders-customer, and how to
check that every open order has it."""
import json
import os
import threading
import time
import urllib.error
import urllib.request

from tests.integration.base import ShopTestCase
from tests.integration.harness import wait_until

OPEN = {"status": {"$nin": ["DELIVERED", "CANCELLED"]}}


class MappingChangeCase(ShopTestCase):
    """The sample shop with helpers to change its mappings and check the result."""

    def add_mail_to_orders_customer(self):
        path = os.path.join(self.mappings, "orders-customer.json")
        with open(path) as f:
            m = json.load(f)
        m["fields"]["mail"] = "email"
        with open(path, "w") as f:
            json.dump(m, f)

    def differences_with_mail(self):
        """The shop's differences, counting an open order's customer copy right when it also
        holds the new field `mail` (the shop's own check knows the sample definition only)."""
        out = []
        for d in self.shop.check():
            # A customer without an email (the workload unsets some) has no mail either.
            with_mail = dict(d[3], **({"mail": d[3]["email"]} if "email" in d[3] else {})) \
                if d[0] == "orders-customer" else None
            if with_mail is not None and d[2] == with_mail:
                continue
            out.append(d)
        missing = self.orders_missing_mail()
        return out + ([("orders without customer.mail", missing)] if missing else [])

    def orders_missing_mail(self):
        """Open orders whose customer copy lacks the customer's current email as `mail`."""
        emails = {c["_id"]: c.get("email") for c in self.db.customers.find({}, {"email": 1})}
        return sum(1 for o in self.db.orders.find(OPEN, {"customerId": 1, "customer": 1})
                   if o.get("customerId") in emails and (o.get("customer") or {}).get("mail") != emails[o["customerId"]])

    def reloads(self, d, result):
        return d.metric_sum("denormd_mapping_reloads_total", result=result)

    def post_reload(self, d):
        req = urllib.request.Request("http://127.0.0.1:%d/-/reload" % d.port, method="POST", data=b"")
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def versions(self):
        rc, out, err = self.cmd("status", "--json")
        self.assertEqual(rc, 0, out + err)
        return {m["mapping"]: m for m in json.loads(out)["mappings"]}

    def run_once(self):
        """Starts denormd (it records its mappings at start) and stops it; returns its metrics."""
        d = self.start()
        metrics = d.metrics()
        self.assertEqual(d.stop(), 0)
        return metrics

    def workload(self):
        """Random shop changes on a thread until the returned stop() is called."""
        done = threading.Event()

        def work():
            while not done.is_set():
                self.shop.random_change()

        t = threading.Thread(target=work)
        t.start()

        def stop():
            done.set()
            t.join()
        return stop

    def mail_converges(self, d, stop_workload):
        """Waits until `d` has backfilled orders-customer, stops the workload, and waits until
        every mapping is in line and every open order has customer.mail."""
        try:
            wait_until(lambda: d.metric_sum("denormd_backfill_progress", mapping="orders-customer") == 1,
                       timeout=60, message="the automatic backfill of orders-customer done")
            time.sleep(0.5)
        finally:
            stop_workload()
        wait_until(lambda: not self.differences_with_mail(), timeout=60, interval=0.25,
                   message="every mapping in line, open orders with customer.mail")
