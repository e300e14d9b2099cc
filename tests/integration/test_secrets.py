"""Secrets in the connection string never show (issue 11 §5): not in any command's output (text
and JSON logs at --log-level debug, libmongoc's own lines included), not on /metrics, not in
what denormd writes to the database. Each URI carries its secret in a different place and is
tried against an unreachable port and against the test server."""
import concurrent.futures
import json
import re
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

from bson import json_util

from tests.integration.base import ShopTestCase
from tests.integration.harness import DENORMD, REAL_URI, wait_until
from tests.integration.shop import Shop

# Short driver timeouts so that the unreachable cases fail fast. They come first: options
# after a secret one are redacted as a whole, and these must stay in effect.
FAST = "serverSelectionTimeoutMS=2000&connectTimeoutMS=1000"

# name: (URI template, the secret, whether the test server accepts the URI)
CASES = {
    "password_unescaped_colon": ("mongodb://app:{secret}:x@{host}/?" + FAST + "&replicaSet=rs0", False),
    "password_escaped_colon": ("mongodb://app:{secret}%3Ax@{host}/?" + FAST + "&replicaSet=rs0", False),
    "tls_key_password": ("mongodb://{host}/?" + FAST + "&replicaSet=rs0&tlsCertificateKeyFilePassword={secret}",
                         False),
    "aws_session_token": ("mongodb://{host}/?" + FAST + "&replicaSet=rs0&authMechanismProperties="
                          "AWS_SESSION_TOKEN:{secret}", True),
}

# libmongoc's own log format, which bypasses --log-format: "2026/11/23 19:22:02.0045: [15680]: ..."
DRIVER_FORMAT = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d+: +\[\d+\]:", re.M)
# denormd's text format, which must not show with --log-format json.
TEXT_FORMAT = re.compile(r"^\d{4}-\d\d-\d\dT\S+Z (DEBUG|INFO |WARN |ERROR) ", re.M)


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    return port


def finish(proc, after, term_wait=45):
    """Lets `proc` run up to `after` seconds, then SIGTERM, then SIGKILL; returns its output."""
    try:
        out, err = proc.communicate(timeout=after)
        return out, err
    except subprocess.TimeoutExpired:
        pass
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.communicate(timeout=term_wait)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


def http_get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
            return r.read().decode()
    except urllib.error.HTTPError as e:
        return e.read().decode()


@unittest.skipIf(REAL_URI, "builds URIs around the test server's address")
class SecretsTest(ShopTestCase):
    DB_PREFIX = "sec_"

    def setUp(self):
        super().setUp()
        self.shop = Shop(self.db, seed=3)
        self.recorded = []  # (description, log format, text)

    # ---- helpers ------------------------------------------------------------------------------
    def record(self, what, text, fmt=None):
        self.recorded.append((what, fmt, text or ""))

    def command(self, uri, args, fmt, level="debug", cap=15):
        argv = [DENORMD, *args[:1], "--uri", uri, "--db", self.dbname, "--mappings", self.mappings,
                "--log-format", fmt, "--log-level", level, *args[1:]]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = finish(p, cap)
        self.record("%s %s (exit %s)" % (" ".join(args), fmt, p.returncode), out + err, fmt)
        return out, err

    def run_daemon(self, uri, fmt, *extra, ready=False, meta=None):
        """`denormd run` for a few seconds (until ready when it can connect), scraped, then SIGTERM.
        `meta`: its own database for checkpoints, so that daemons run side by side do not fence
        each other out (only one may write a namespace without --ha)."""
        log = tempfile.TemporaryFile(mode="w+")
        argv = [DENORMD, "run", "--uri", uri, "--db", meta or self.dbname, "--mappings", self.mappings,
                "--metrics-addr", "127.0.0.1:0", "--log-format", fmt, "--log-level", "debug", *extra]
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, text=True)

        def text():
            log.seek(0)
            return log.read()

        try:
            port = None
            deadline = time.time() + 15
            while port is None and time.time() < deadline and p.poll() is None:
                m = re.search(r'metrics listening.*?port.?[=:](\d+)', text())
                port = int(m.group(1)) if m else None
                time.sleep(0.05)
            if port is not None:
                if ready:
                    wait_until(lambda: "ready" == http_get(port, "/readyz").strip(), timeout=30,
                               message="denormd ready")
                    self.make_changes()
                else:
                    time.sleep(2.5)  # the driver logs every 0.5 s while it cannot connect
                self.record("GET /metrics", http_get(port, "/metrics"))
                self.record("GET /readyz", http_get(port, "/readyz"))
            finish(p, 0.1)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            self.record("run %s %s (exit %s)" % (" ".join(extra), fmt, p.returncode), text(), fmt)
            log.close()

    def make_changes(self):
        """Events for every mapping, one of them rejected by the server (a dead letter)."""
        for _ in range(20):
            self.shop.random_change()
        big = "y" * (9 * 1024 * 1024)
        order = self.db.orders.find_one({})
        self.db.orders.update_one({"_id": order["_id"]}, {"$set": {"blob": big}})
        self.db.customers.update_one({"_id": order["customerId"]}, {"$set": {"name": big}})
        wait_until(lambda: self.db.denormd_deadletters.count_documents({}) > 0, timeout=30,
                   message="a dead letter")
        wait_until(lambda: self.db.denormd_checkpoints.count_documents({}) > 0, timeout=30,
                   message="checkpoints")

    def database_dump(self):
        names = self.client.list_database_names()
        dump = []
        for dbname in names:
            for coll in self.client[dbname].list_collection_names():
                for doc in self.client[dbname][coll].find():
                    dump.append(json_util.dumps(doc))
        return "\n".join(dump)

    def check_logs_obey_the_flags(self):
        for what, fmt, text in self.recorded:
            self.assertIsNone(DRIVER_FORMAT.search(text), "the driver's own format in %s:\n%s" % (what, text[-3000:]))
            if fmt == "json":
                self.assertIsNone(TEXT_FORMAT.search(text), "a text log line in %s:\n%s" % (what, text[-3000:]))
                for line in text.splitlines():
                    if line.startswith('{"ts"'):
                        json.loads(line)

    def check_case(self, name):
        template, connects = CASES[name]
        secret = "S3cr3t" + name.replace("_", "")[:10] + "PW"
        hosts = [("127.0.0.1:%d" % closed_port(), False),
                 ("%s:%d" % (self.emulator.host, self.emulator.port), connects)]
        if connects:
            self.shop.seed()
        start_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))
        for host, reachable in hosts:
            uri = template.format(secret=secret, host=host)
            # Where the server cannot be reached the commands give up after 3 s, so that their
            # giving-up messages are recorded too.
            give_up = [] if reachable else ["--timeout", "3"]
            runs = []
            for fmt in ("text", "json"):
                runs += [lambda fmt=fmt: self.command(uri, ["status", *give_up], fmt),
                         lambda fmt=fmt: self.command(uri, ["status", "--json", *give_up], fmt),
                         lambda fmt=fmt: self.command(uri, ["verify", *give_up], fmt),
                         lambda fmt=fmt: self.command(uri, ["verify", "--json", "--repair", *give_up], fmt),
                         lambda fmt=fmt: self.command(uri, ["backfill", *give_up], fmt,
                                                      cap=60 if reachable else 4)]
                runs.append(lambda fmt=fmt: self.run_daemon(uri, fmt, meta=self.dbname + "_" + fmt))
            runs += [lambda: self.run_daemon(uri, "text", "--start-at", start_at,
                                             meta=self.dbname + "_start"),
                     lambda: self.run_daemon(uri, "json", "--resume-after",
                                             '{"_data": "8200000001000000012B0229296E04"}',
                                             meta=self.dbname + "_resume")]
            if reachable:
                # Changes, a dead letter and checkpoints first, for the other commands to show.
                self.run_daemon(uri, "text", ready=True)
            # Side by side (they read, or write what they all agree on, or wait for server
            # selection), so that the test costs seconds, not a minute.
            with concurrent.futures.ThreadPoolExecutor(len(runs)) as pool:
                for f in [pool.submit(run) for run in runs]:
                    f.result()
            # Below the driver's debug level its lines stay out.
            _, err = self.command(uri, ["status"], "text", level="warn")
            self.assertNotIn("DEBUG", err)
            self.assertNotIn("INFO", err)
        if connects:
            self.assertGreater(self.db.denormd_deadletters.count_documents({}), 0)
            self.assertGreater(self.db.denormd_checkpoints.count_documents({}), 0)
        self.record("database", self.database_dump())

        for what, _, text in self.recorded:
            self.assertNotIn(secret, text, "the secret shows in %s:\n%s" % (what, text[-3000:]))
        self.check_logs_obey_the_flags()
        # The outputs are not empty: the commands ran and said something.
        self.assertTrue(any("****" in text for _, _, text in self.recorded))

    # -----------------------------------------------------------------------------------------
    def test_password_with_an_unescaped_colon(self):
        self.check_case("password_unescaped_colon")
        invalid = [t for w, _, t in self.recorded if w.startswith("status ")]
        self.assertTrue(all("invalid MongoDB URI: Password" in t for t in invalid), invalid[:1])

    def test_password_with_an_escaped_colon(self):
        self.check_case("password_escaped_colon")

    def test_tls_certificate_key_file_password(self):
        self.check_case("tls_key_password")

    def test_aws_session_token(self):
        self.check_case("aws_session_token")


if __name__ == "__main__":
    unittest.main()
