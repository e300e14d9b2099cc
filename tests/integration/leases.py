"""What the --ha suites share: starting instances, and reading who holds which lease from each
instance's metrics and from the lease table."""
from tests.integration.harness import balanced_owners, wait_until


class LeaseHelpers:
    """A mixin for a ShopTestCase: instances of `denormd run --ha` and what they hold."""
    TTL_MS = 2000

    def instance(self, name, ttl_ms=None, *extra, auto_backfill=False):
        return self.daemon(self.uri, "--ha", "--instance-id", name, "--lease-ttl-ms",
                           str(ttl_ms or self.TTL_MS), *extra, auto_backfill=auto_backfill)

    def units(self, d):
        return {dict(labels)["unit"] for (n, labels), _ in d.metrics().items() if n == "denormd_lease_held"}

    def held_by(self, d):
        try:
            return {dict(labels)["unit"] for (n, labels), v in d.metrics().items()
                    if n == "denormd_lease_held" and v == 1}
        except (OSError, AssertionError):
            return set()  # stopped, or stopping

    def owners(self, instances):
        """{unit: [names of the live instances that say they hold it]}."""
        out = {}
        for name, d in instances.items():
            if d.proc.poll() is None:
                for u in self.held_by(d):
                    out.setdefault(u, []).append(name)
        return out

    def all_held_once(self, instances, units):
        o = self.owners(instances)
        return set(o) == units and all(len(v) == 1 for v in o.values())

    def balanced(self, instances, units, owners=None):
        """Every unit held once, and the live instances' counts of streams (of jobs, of each
        namespace's partitions) within one of each other (in `owners`, or read now)."""
        o = self.owners(instances) if owners is None else owners
        if set(o) != units or any(len(v) != 1 for v in o.values()):
            return False
        live = [name for name, d in instances.items() if d.proc.poll() is None]
        # As assign_units shares them: namespaces, jobs, and each namespace's partitions apart.
        classes = {u: u.split("#")[0] if "#" in u else ("." in u) for u in o}
        for c in set(classes.values()):
            counts = [sum(1 for u, v in o.items() if name in v and classes[u] == c) for name in live]
            if max(counts) - min(counts) > 1:
                return False
        return True

    def spread(self, instances, units, timeout=20):
        """Waits until `instances` hold `units` evenly, the same in two readings in a row (each
        instance's metrics are read one after another, so one reading can catch a unit between
        two holders); {unit: [holder]} then."""
        seen = []

        def settled():
            o = self.owners(instances)
            if not self.balanced(instances, units, o):
                seen.clear()
                return False
            stable = seen == [o]
            seen[:] = [o]
            return stable

        wait_until(settled, timeout=timeout, message="units spread evenly")
        return seen[0]

    def first(self, name, start):
        """Starts the first instance and waits until it holds every unit: ({name: it}, units,
        {unit: name})."""
        d = start(name)
        units = self.units(d)
        wait_until(lambda: self.held_by(d) == units, timeout=20, message="%s holds every unit" % name)
        return {name: d}, units, {u: name for u in units}

    def join(self, ds, name, start, units, holders):
        """Starts `name` beside `ds` and waits until the units are where assign_units puts them
        from `holders`; the new {unit: holder}."""
        ds[name] = start(name)
        expected = balanced_owners(units, list(ds), holders)
        wait_until(lambda: self.owners(ds) == {u: [h] for u, h in expected.items()}, timeout=20,
                   message="units spread as assign_units says")
        return expected

    def start_spread(self, names, start):
        """Starts `names` one after another, each waiting for the spread: (instances, units,
        {unit: holder})."""
        ds, units, holders = self.first(names[0], start)
        for n in names[1:]:
            holders = self.join(ds, n, start, units, holders)
        return ds, units, holders

    def check_one_writer(self, instances):
        """Every unit an instance says it holds is its lease in the table, read after: no two
        instances write one namespace."""
        said = {name: self.held_by(d) for name, d in instances.items() if d.proc.poll() is None}
        table = {row["_id"]: row for row in self.db.denormd_leases.find()}
        for name, units in said.items():
            for u in units:
                self.assertEqual(table[u]["owner"], name, "%s says it holds %s, the table says %s" %
                                 (name, u, table[u]["owner"]))
