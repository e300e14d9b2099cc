"""Processes and checks shared by the integration suites.

The suites start `mongo-emulator` (or use DENORMD_TEST_URI, a real replica set) and run the
real `denormd` binary against it. Everything is bounded in time and cleaned up.
"""
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pymongo

BUILD_DIR = os.environ.get("DENORMD_BUILD_DIR", "")
DENORMD = os.environ.get("DENORMD_BIN", os.path.join(BUILD_DIR, "bin", "denormd"))
EMULATOR = os.environ.get("DENORMD_EMULATOR", os.path.join(BUILD_DIR, "tests", "emulator", "mongo-emulator"))
SOURCE_DIR = os.environ.get("DENORMD_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
REAL_URI = os.environ.get("DENORMD_TEST_URI", "")


def emulator_only():
    """True when emulator-only knobs (restarts, --oplog-max-events) are available."""
    return not REAL_URI


class Emulator:
    def __init__(self, *args):
        self.proc = subprocess.Popen([EMULATOR, "--port", "0", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        m = re.match(r"listening on (\S+):(\d+)", line)
        if not m:
            self.stop()
            raise RuntimeError("mongo-emulator did not start: %r" % line)
        self.host, self.port = m.group(1), int(m.group(2))
        self.uri = "mongodb://%s:%d/?replicaSet=rs0" % (self.host, self.port)

    def uri_as(self, user, password):
        """This server's URI with a user's credentials (created in admin)."""
        quote = urllib.parse.quote
        return "mongodb://%s:%s@%s:%d/?replicaSet=rs0&authSource=admin" % (
            quote(user, safe=""), quote(password, safe=""), self.host, self.port)

    def create_first_user(self, user, password, roles=("root",)):
        """Started with --auth: creates the first user through the localhost exception (as
        `mongod --auth` allows) and returns its URI."""
        client = pymongo.MongoClient(self.uri, serverSelectionTimeoutMS=10000)
        try:
            client.admin.command("createUser", user, pwd=password, roles=list(roles))
        finally:
            client.close()
        return self.uri_as(user, password)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Denormd:
    """A `denormd run` child process; its log is kept for assertions and failure output."""

    def __init__(self, uri, db, mappings_dir, *extra, env=None, auto_backfill=False, lifecycle=True):
        self.log_path = tempfile.mktemp(prefix="denormd-", suffix=".log")
        self.log_file = open(self.log_path, "w")
        # Suites that test the stream start without the automatic backfill of new mappings
        # (every mapping is new to a fresh database); test_mapping_versions turns it on.
        auto = () if auto_backfill else ("--no-auto-backfill",)
        # POST /-/reload is off by default (--web-enable-lifecycle); the suites reload through it.
        if lifecycle:
            auto += ("--web-enable-lifecycle",)
        cmd = [DENORMD, "run", "--uri", uri, "--db", db, "--mappings", mappings_dir,
               "--metrics-addr", "127.0.0.1:0", "--log-level", "debug", *auto, *extra]
        self.proc = subprocess.Popen(cmd, stdout=self.log_file, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, **(env or {})))
        self.port = None
        deadline = time.time() + 15
        while time.time() < deadline and self.port is None:
            m = re.search(r"metrics listening .*port=(\d+)", self.log())
            if m:
                self.port = int(m.group(1))
            elif self.proc.poll() is not None:
                raise RuntimeError("denormd exited at start:\n" + self.log())
            else:
                time.sleep(0.05)
        if self.port is None:
            self.kill9()
            raise RuntimeError("denormd did not report its metrics port:\n" + self.log())

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def get(self, path):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.port, path), timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metrics(self):
        """{(name, frozenset(labels.items())): value} from /metrics."""
        status, text = self.get("/metrics")
        assert status == 200, status
        out = {}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            m = re.match(r"(\w+)(?:\{(.*)\})? (\S+)", line)
            if not m:
                continue
            labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
            out[(m.group(1), labels)] = float(m.group(3))
        return out

    def metric_sum(self, name, **labels):
        want = set(labels.items())
        return sum(v for (n, ls), v in self.metrics().items() if n == name and want <= set(ls))

    def stop(self, timeout=15):
        """SIGTERM and wait; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout)
        self.log_file.close()
        return self.proc.returncode

    def kill9(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log_file.close()

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0


def free_port():
    """A local port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_within(d, seconds):
    """SIGTERM `d`; returns (exit code, seconds it took); kills it after 30 s."""
    began = time.time()
    d.proc.send_signal(signal.SIGTERM)
    try:
        d.proc.wait(30)
    except subprocess.TimeoutExpired:
        d.kill9()
    d.log_file.close()
    took = time.time() - began
    assert took < seconds, "SIGTERM took %.1f s (bound %d s):\n%s" % (took, seconds, d.log()[-4000:])
    return d.proc.returncode, took


def raise_descriptor_limit(needed):
    """Raises the soft RLIMIT_NOFILE to the hard limit (children inherit it); whether `needed`
    descriptors are now allowed."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft == resource.RLIM_INFINITY or soft >= needed


class Proxy:
    """A TCP proxy on 127.0.0.1 to a test server, which can turn into a broken server: after
    answer_garbage(), every request on every connection, open or new, is answered with 16 bytes
    of 0xFF (a message length of -1), and open connections get those bytes at once too, as the
    reply to whatever they wait for. Replies the server sends after the switch are dropped."""

    GARBAGE = b"\xff" * 16

    def __init__(self, host, port):
        self.target = (host, port)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        # Direct: the server's hello names its own address, which a replica-set client would
        # connect to instead of the proxy.
        self.uri = "mongodb://127.0.0.1:%d/?directConnection=true" % self.port
        self.garbage = False
        self.garbage_replies = 0
        self.lock = threading.Lock()
        self.open = set()
        threading.Thread(target=self._accept, daemon=True).start()

    def answer_garbage(self):
        with self.lock:
            self.garbage = True
            conns = list(self.open)
        for conn in conns:
            self._send_garbage(conn)

    def stop(self):
        self.sock.close()
        with self.lock:
            conns = list(self.open)
        for conn in conns:
            self._close(conn)

    def _send_garbage(self, conn):
        try:
            conn.sendall(self.GARBAGE)
            with self.lock:
                self.garbage_replies += 1
        except OSError:
            pass

    @staticmethod
    def _close(s):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # stopped
            upstream = None
            if not self.garbage:
                try:
                    upstream = socket.create_connection(self.target, timeout=5)
                    upstream.settimeout(None)
                except OSError:
                    conn.close()
                    continue
                threading.Thread(target=self._from_server, args=(conn, upstream), daemon=True).start()
            with self.lock:
                self.open.add(conn)
            threading.Thread(target=self._from_client, args=(conn, upstream), daemon=True).start()

    def _from_client(self, conn, upstream):
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                if self.garbage or upstream is None:
                    self._send_garbage(conn)
                else:
                    upstream.sendall(data)
        except OSError:
            pass
        finally:
            with self.lock:
                self.open.discard(conn)
            self._close(conn)
            if upstream is not None:
                self._close(upstream)

    def _from_server(self, conn, upstream):
        try:
            while True:
                data = upstream.recv(65536)
                if not data:
                    break
                if not self.garbage:
                    conn.sendall(data)
        except OSError:
            pass
        finally:
            self._close(upstream)
            if not self.garbage:
                self._close(conn)


def case_failed(case):
    """Whether the unittest.TestCase `case` has failed so far (for tearDown's diagnostics)."""
    result = getattr(case, "_outcome", None)
    errors = getattr(result, "errors", None) or getattr(getattr(result, "result", None), "errors", [])
    return bool(errors) or bool(getattr(getattr(result, "result", None), "failures", []))


def write_mappings(db, names=None, directory=None, kinds=("copy", "recent")):
    """The sample mappings with "shop" replaced by `db`, in a new folder: those named, else
    those of `kinds` (the aggregate samples need pre-images the shop seed does not enable)."""
    directory = directory or tempfile.mkdtemp(prefix="denormd-mappings-")
    # tests.bench.compare runs both revisions with the older one's samples (the same work, in
    # mappings both understand).
    src = os.environ.get("DENORMD_SAMPLE_MAPPINGS") or os.path.join(SOURCE_DIR, "mappings")
    for name in sorted(os.listdir(src)):
        if names and name[:-5] not in names:
            continue
        with open(os.path.join(src, name)) as f:
            m = json.load(f)
        if not names and m["kind"] not in kinds:
            continue
        m.pop("$schema", None)
        for part in ("source", "target"):
            if m[part].get("db") == "shop":
                m[part]["db"] = db
        with open(os.path.join(directory, name), "w") as f:
            json.dump(m, f)
    return directory


def mapping_folder(*mappings):
    """A new folder holding each mapping (a dict) as <name>.json."""
    directory = tempfile.mkdtemp(prefix="denormd-mappings-")
    for m in mappings:
        with open(os.path.join(directory, m["name"] + ".json"), "w") as f:
            json.dump(m, f)
    return directory


def copy_mapping(db, name, source, target, key, fields, into, source_key=None):
    """A copy mapping from db.source to db.target (as a dict, for mapping_folder)."""
    m = {"name": name, "kind": "copy", "source": {"db": db, "collection": source},
         "target": {"db": db, "collection": target, "key": key}, "into": into, "fields": fields}
    if source_key:
        m["source"]["key"] = source_key
    return m


def wait_until(predicate, timeout=30, interval=0.1, message="condition"):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = predicate()
        if last is True or (last is not None and not isinstance(last, bool) and not last):
            return
        time.sleep(interval)
    if isinstance(last, list) and len(last) > 5:
        last = "%d differences, the first 5: %r" % (len(last), last[:5])
    raise AssertionError("timed out waiting for %s; last result: %s" % (message, str(last)[:4000]))


# --ha: who holds which unit once the instances have spread them (src/lease/lease_machine.cc,
# assign_units), written again here so that tests check the spread against an independent copy.
M64 = (1 << 64) - 1


def fnv1a(text, h=0xcbf29ce484222325):
    for c in text.encode():
        h = ((h ^ c) * 0x100000001b3) & M64
    return h


def mix(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def rendezvous_score(unit, instance):
    return mix(fnv1a(instance, fnv1a(unit) ^ 0x9e3779b97f4a7c15))


def rendezvous_owner(unit, live):
    """The instance among `live` with the highest rendezvous score for `unit`."""
    return max(sorted(live), key=lambda i: rendezvous_score(unit, i))


def balanced_owners(units, live, holders=None):
    """{unit: instance} once `live` have spread `units`, from who holds them now (`holders`,
    {unit: instance}): streams ("db.coll") and jobs (no dot) each shared out on their own, each
    instance an even share (one more for those holding the most), a holder keeping the units
    it scores highest, the rest by rendezvous score."""
    streams = {u for u in units if "." in u}
    out = _balanced_class(streams, live, holders)
    out.update(_balanced_class(set(units) - streams, live, holders))
    return out


def _balanced_class(units, live, holders):
    if not units:
        return {}
    members = sorted(set(live))
    holders = {u: h for u, h in (holders or {}).items() if h in members and u in units}
    load = {m: sum(1 for h in holders.values() if h == m) for m in members}
    by_load = sorted(members, key=lambda m: -load[m])
    base, extra = divmod(len(units), len(members))
    share = {m: base + (1 if i < extra else 0) for i, m in enumerate(by_load)}
    out, given = {}, {m: 0 for m in members}
    for h in members:
        mine = sorted((u for u in sorted(units) if holders.get(u) == h),
                      key=lambda u: -rendezvous_score(u, h))
        for u in mine[:share[h]]:
            out[u] = h
            given[h] += 1
    for u in sorted(units):
        if u not in out:
            o = rendezvous_owner(u, [m for m in members if given[m] < share[m]])
            out[u] = o
            given[o] += 1
    return out
