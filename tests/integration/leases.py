"""What the --ha suites share: starting instances, and reading who holds which lease from each
instance's metrics and from the lease table."""


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

    def check_one_writer(self, instances):
        """Every unit an instance says it holds is its lease in the table, read after: no two
        instances write one namespace."""
        said = {name: self.held_by(d) for name, d in instances.items() if d.proc.poll() is None}
        table = {row["_id"]: row for row in self.db.denormd_leases.find()}
        for name, units in said.items():
            for u in units:
                self.assertEqual(table[u]["owner"], name, "%s says it holds %s, the table says %s" %
                                 (name, u, table[u]["owner"]))
