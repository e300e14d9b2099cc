"""Faults mixed into a soak run. Each fault is a class with begin() (before a step of writes)
and end() (after it, before the quiescent check); the step's writes happen while the fault
holds. FAULTS names every type the runner accepts; PLANNED lists the types the test server
or the generator cannot do yet (none now): add a class here and its name to FAULTS once it
can."""
import json
import os
import signal
import threading
import time

import pymongo

LEASE_TTL_MS = 1500
OPLOG_MAX_EVENTS = 1500  # the test server's bounded history (--oplog-max-events)

PLANNED = {}  # fault types not available yet: name -> why (none now)


class Fault:
    name = ""
    ha_only = False

    def __init__(self, run):
        self.run = run
        self.rng = run.rng

    def begin(self):
        pass

    def end(self):
        pass


class Kill9(Fault):
    name = "kill9"

    def begin(self):
        self.victim = self.rng.choice(self.run.live())
        self.victim.kill9()

    def end(self):
        self.run.restart(self.victim)


class Sigterm(Fault):
    name = "sigterm"

    def begin(self):
        self.victim = self.rng.choice(self.run.live())
        rc = self.victim.stop(timeout=20)
        if rc != 0:
            self.run.note("sigterm: %s exited %s (expected 0)" % (self.victim.name, rc))

    def end(self):
        self.run.restart(self.victim)


class Sigstop(Fault):
    """SIGSTOP for longer than the lease TTL (with --ha another instance takes the namespaces
    over; the stopped one wakes up still believing it holds them), then SIGCONT."""
    name = "sigstop"

    def begin(self):
        self.victim = self.rng.choice(self.run.live())
        os.kill(self.victim.proc.pid, signal.SIGSTOP)
        self.began = time.time()

    def end(self):
        hold = LEASE_TTL_MS / 1000 * 2 + 0.5
        time.sleep(max(0, hold - (time.time() - self.began)))
        self.run.workload.step(self.run.ops // 2)  # writes taken over by a peer, if any
        os.kill(self.victim.proc.pid, signal.SIGCONT)
        self.run.workload.step(self.run.ops // 4)  # writes right after it wakes


class HaJoinLeave(Fault):
    """An extra --ha instance joins for the step, then leaves (SIGTERM or kill -9)."""
    name = "ha-join-leave"
    ha_only = True

    def begin(self):
        self.extra = self.run.start_instance()

    def end(self):
        self.run.workload.step(self.run.ops // 2)
        if self.rng.random() < 0.5:
            self.extra.kill9()
        else:
            self.extra.stop(timeout=20)
        self.run.daemons.remove(self.extra)


RELOADS = ["add-field", "change-where", "change-filter", "remove-restore"]


class Reload(Fault):
    """A mapping reload on every live instance (SIGHUP or POST /-/reload): a field added, a
    where or filter changed, or a mapping removed (and restored at the end)."""
    name = "reload"

    def begin(self):
        self.kind = self.rng.choice(RELOADS)
        d = self.run.mapping_dir
        self.restore = None
        if self.kind == "remove-restore":
            name = self.rng.choice(sorted(os.listdir(d)))
            self.restore = (name, open(os.path.join(d, name)).read())
            os.remove(os.path.join(d, name))
        else:
            file, edit = {
                "add-field": ("orders-customer.json", lambda m: m["fields"].__setitem__("tier", "tier")
                              if "tier" not in m["fields"] else m["fields"].pop("tier")),
                "change-where": ("orders-customer.json", lambda m: m["target"].__setitem__(
                    "where", {"status": {"$nin": ["CLOSED", "HOLD"]}} if "$ne" in m["target"]["where"]["status"]
                    else {"status": {"$ne": "CLOSED"}})),
                "change-filter": ("products-recent-reviews.json", lambda m: m["source"].__setitem__(
                    "filter", {"hidden": {"$ne": True}, "stars": {"$ne": 0}} if "stars" not in m["source"]["filter"]
                    else {"hidden": {"$ne": True}})),
            }[self.kind]
            path = os.path.join(d, file)
            with open(path) as f:
                m = json.load(f)
            edit(m)
            with open(path, "w") as f:
                json.dump(m, f, indent=1)
        self.run.reload_all()

    def end(self):
        if self.restore:
            with open(os.path.join(self.run.mapping_dir, self.restore[0]), "w") as f:
                f.write(self.restore[1])
            self.run.reload_all()


FAIL_POINTS = [
    {"failCommands": ["update"], "errorCode": 91},                      # ShutdownInProgress
    {"failCommands": ["update", "aggregate", "find"], "closeConnection": True},
    {"failCommands": ["getMore"], "errorCode": 11600},                  # InterruptedAtShutdown
    {"failCommands": ["update"], "writeConcernError": {"code": 64, "errmsg": "waiting for replication timed out"}},
    {"failCommands": ["aggregate"], "errorCode": 189},                  # PrimarySteppedDown
]


class FailPoint(Fault):
    """failCommand on the commands denormd sends (appName "denormd"), for the step."""
    name = "failpoint"

    def begin(self):
        self.data = dict(self.rng.choice(FAIL_POINTS), appName="denormd")
        mode = self.rng.choice([{"times": self.rng.randint(1, 5)}, {"activationProbability": 0.3}])
        self.run.admin({"configureFailPoint": "failCommand", "mode": mode, "data": self.data})

    def end(self):
        self.run.workload.step(self.run.ops // 2)
        time.sleep(0.5)
        self.run.admin({"configureFailPoint": "failCommand", "mode": "off"})


class LostHistory(Fault):
    """Every instance stopped while more changes than the server keeps are written: each
    restarts from a position no longer in the history and re-syncs."""
    name = "lost-history"

    def begin(self):
        self.stopped = list(self.run.live())
        for d in self.stopped:
            if self.rng.random() < 0.5:
                d.kill9()
            else:
                d.stop(timeout=20)

    def end(self):
        self.run.workload.noise(OPLOG_MAX_EVENTS + 100)
        self.run.workload.step(self.run.ops // 2)
        for d in self.stopped:
            self.run.restart(d)


class StepDown(Fault):
    """replSetStepDown {force: true} for 1-3 s at a random point of the step's writes: the node
    is secondary for the window (writes refused with 10107, primary reads with 13435; pymongo
    retries the generator's), then primary again. With the soak's read-preference knob
    (Run.__init__) denormd's change streams are also killed at their next getMore."""
    name = "stepdown"

    def begin(self):
        self.window = self.rng.randint(1, 3)
        self.began = None
        delay = self.rng.uniform(0, 1.5)

        def step_down():
            time.sleep(delay)
            try:
                self.run.admin({"replSetStepDown": self.window, "force": True})
                self.began = time.time()
            except pymongo.errors.PyMongoError as e:
                self.run.note("stepdown: replSetStepDown failed: %s" % e)

        self.thread = threading.Thread(target=step_down, daemon=True)
        self.thread.start()

    def end(self):
        self.thread.join()
        if self.began is not None:
            time.sleep(max(0, self.began + self.window - time.time()))
        self.run.workload.step(self.run.ops // 2)  # writes after the window


# Known holes, not yet fixed, by the fault that shows them: why a run leaves it out (printed).
KNOWN_HOLES = {}  # fault types of known holes not yet fixed: name -> why (none now)

FAULTS = {f.name: f for f in (Kill9, Sigterm, Sigstop, Reload, FailPoint, LostHistory, StepDown,
                              HaJoinLeave)}
