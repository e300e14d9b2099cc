"""The sample aggregate mappings (products-rating, customers-spent) checked against the soak
oracle (tests/soak/oracle.py), for the suites that run them."""
import json
import os

from tests.soak import oracle


def mismatches(db, mappings_dir):
    """Every difference between the aggregate dependents in `db` and their children. The
    mappings are read from `mappings_dir`. customers-spent's itemsBought sums an expression the
    oracle does not evaluate ($reduce over items.qty with $add): each order's sum of its
    quantities is worked out here, for the integers the shop writes, and summed by the oracle as
    a field."""
    out = []
    for name in ("products-rating", "customers-spent"):
        with open(os.path.join(mappings_dir, name + ".json")) as f:
            m = json.load(f)
        children = list(db[m["source"]["collection"]].find())
        if name == "customers-spent":
            m["fields"]["itemsBought"] = {"$sum": "itemsBoughtHere"}
            for o in children:
                items = o.get("items")
                if isinstance(items, list):
                    o["itemsBoughtHere"] = sum(i["qty"] for i in items if "qty" in i)
        parents = list(db[m["target"]["collection"]].find())
        out += oracle.check(m, {m["source"]["collection"]: children, m["target"]["collection"]: parents})
    return out
