"""Every mongosh example of the docs runs here, through mongosh 2.x against the test server.

The ```js blocks of README.md and docs/*.md are read as they stand, so a changed example is what
runs. Each is claimed by one test below by its first statement (after comments and `use`), or
named as a document the shell prints rather than commands; a block nothing claims fails
test_every_js_block_is_claimed. A test feeds its block to mongosh on standard input, as if pasted
into the shell, changing only what a user would (passwordPrompt() answered, the server's
address); any error the shell prints fails it, and it then checks on the server, through
pymongo, that the block did what the docs say. A transcript (the shell's prompt, a command, its
output) must print output of the shown shape (test_docs.assert_shape, with dates free too).

mongosh: DENORMD_MONGOSH, else .cache/mongosh (scripts/install-deps.sh), else the copy
emulator.mongosh_ops installed in the build; skipped when there is none."""
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import pymongo

import tests.integration.test_docs as docs
from tests.integration import seed as shop_seed
from tests.integration.base import kill_daemons
from tests.integration.harness import EMULATOR, REAL_URI, SOURCE_DIR, Denormd, Emulator, wait_until

sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "emulator", "tests"))
import pymongo_auth  # noqa: E402  (its own reading of the createRole block, to compare with)

Block = collections.namedtuple("Block", "where text")

# First statement of a block (a regular expression) -> the test that runs it, or "document: why".
CLAIMS = [
    (r'^db\.orders\.findOne\(\{ status: "PENDING" \}', "test_demo_shows_the_copies_follow"),
    (r"^const shop = \[", "test_the_least_privilege_role_and_user_as_shown"),
    (r"^rs0 \[direct: primary\] shop> rs\.printReplicationInfo\(\)$", "test_replication_info_as_shown"),
    (r"^db\.adminCommand\(\{ replSetResizeOplog: 1, size: ", "test_resize_oplog_as_shown"),
    (r"^db\.runCommand\(\{ collMod: ", "test_pre_images_as_shown"),
    (r"^db\.orders\.createIndex\(", "test_indexes_as_shown"),
    (r"^\{ _id: ", "document: a document as the shell prints it (README's mapping examples), not commands"),
]
PASSWORD = "s3cr@t pw"
# A JavaScript Date as mongosh prints it: free in shown output, as numbers are.
DATE = re.compile(r"[A-Z][a-z]{2} [A-Z][a-z]{2} \d\d \d{4} \d\d:\d\d:\d\d GMT[+-]\d{4} \([^)]*\)")
SHELL_ERRORS = re.compile(r"Uncaught|MongoServerError|MongoshInvalidInputError|SyntaxError|ReferenceError|"
                          r"TypeError")


def js_blocks():
    out = []
    for path in docs.doc_files():
        for line, info, text in docs.fenced_blocks(path):
            if info in ("js", "javascript"):
                out.append(Block("%s:%d" % (os.path.relpath(path, SOURCE_DIR), line), text))
    return out


def first_statement(text):
    for line in text.split("\n"):
        s = line.strip()
        if s and not s.startswith("//") and not re.match(r"^use \w+$", s):
            return s
    return ""


def claims_of(block):
    return [claim for pattern, claim in CLAIMS if re.search(pattern, first_statement(block.text))]


def block_for(test):
    found = [b for b in js_blocks() if claims_of(b) == [test]]
    assert len(found) == 1, "%d blocks of the docs are claimed by %s" % (len(found), test)
    return found[0]


def find_mongosh():
    """The mongosh binary, or (None, why not)."""
    given = os.environ.get("DENORMD_MONGOSH")
    if given:
        return given, None
    candidates = [os.path.join(SOURCE_DIR, ".cache", "mongosh"),
                  os.path.join(os.path.dirname(os.path.abspath(EMULATOR)), "mongosh")]
    for prefix in candidates:
        path = os.path.join(prefix, "node_modules", ".bin", "mongosh")
        if os.access(path, os.X_OK):
            return path, None
    return None, "no mongosh in %s (scripts/install-deps.sh installs it)" % " or ".join(candidates)


MONGOSH, WHY_NOT = find_mongosh()


@unittest.skipIf(MONGOSH is None, "mongosh is not available: %s" % WHY_NOT)
@unittest.skipIf(REAL_URI, "needs test servers of its own (--auth, a fresh oplog)")
class MongoshDocsTest(unittest.TestCase):
    def setUp(self):
        self.home = tempfile.mkdtemp(prefix="denormd-mongosh-")
        self.servers = []
        self.clients = []
        self.daemons = []

    def tearDown(self):
        kill_daemons(self, self.daemons)
        for c in self.clients:
            c.close()
        for s in self.servers:
            s.stop()
        shutil.rmtree(self.home, ignore_errors=True)

    # ---- helpers -----------------------------------------------------------------------------
    def server(self, *args):
        s = Emulator(*args)
        self.servers.append(s)
        return s

    def client(self, uri):
        c = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000)
        self.clients.append(c)
        return c

    @staticmethod
    def direct(server, db="", credentials=""):
        """The URI docs/operations.md gives mongosh, for this server."""
        uri = "mongodb://%s%s:%d/%s?directConnection=true" % (credentials, server.host, server.port, db)
        return uri + ("&authSource=admin" if credentials else "")

    def mongosh(self, uri, script, where, env=None, args=()):
        """Runs `script` in mongosh as typed (standard input), or a file given in `args`; the
        output. Fails on any error the shell reports."""
        environment = dict(os.environ, HOME=self.home, MONGOSH_FORCE_DISABLE_TELEMETRY_FOR_TESTING="1", **(env or {}))
        r = subprocess.run([MONGOSH, "--quiet", "--norc", uri, *args], input=script, capture_output=True,
                           text=True, timeout=180, env=environment)
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, "%s: mongosh exited %d:\n%s" % (where, r.returncode, out))
        self.assertIsNone(SHELL_ERRORS.search(out), "%s: the shell reported an error:\n%s" % (where, out))
        return out

    def run_block(self, block, uri):
        """The block as a user pastes it; passwordPrompt() answered with PASSWORD."""
        return self.mongosh(uri, block.text.replace("passwordPrompt()", json.dumps(PASSWORD)) + "\n", block.where)

    # ---- the blocks --------------------------------------------------------------------------
    def test_demo_shows_the_copies_follow(self):
        """operations.md, "Try it": the demo's seeder (deploy/seed/seed.js, through mongosh as the
        compose file runs it) loads the shop while denormd runs the sample mappings; then the
        block, with the table's mongosh URI, shows an open order's customer and product copies
        and a product's newest reviews, each what its source says."""
        block = block_for("test_demo_shows_the_copies_follow")
        with open(os.path.join(SOURCE_DIR, "docs", "operations.md")) as f:
            table_uri = re.search(r'`mongosh "(mongodb://127\.0\.0\.1:27017/[^"]+)"`', f.read()).group(1)
        s = self.server()
        d = Denormd(s.uri, "shop", os.path.join(SOURCE_DIR, "mappings"), auto_backfill=True)
        self.daemons.append(d)
        wait_until(lambda: d.get("/readyz")[0] == 200, timeout=30, message="denormd ready")
        sizes = {"SEED_CHANGE_MINUTES": "0", "SEED_CUSTOMERS": "20", "SEED_PRODUCTS": "8", "SEED_ORDERS": "60",
                 "SEED_HOSTS": "3", "SEED_LOGMSGS": "60", "SEED_REVIEWS": "80"}
        self.mongosh("mongodb://%s:%d/shop?replicaSet=rs0" % (s.host, s.port), "", "deploy/seed/seed.js",
                     env=sizes, args=[os.path.join(SOURCE_DIR, "deploy", "seed", "seed.js")])
        db = self.client(s.uri).shop
        t = db.client.admin.command("ping")["operationTime"]
        wait_until(lambda: d.get("/applied?after=%d:%d&timeout=4" % (t.time, t.inc))[0] == 200, timeout=90,
                   interval=0, message="the seed applied")
        out = self.run_block(block, table_uri.replace("127.0.0.1:27017", "%s:%d" % (s.host, s.port)))
        order = db.orders.find_one({"status": "PENDING"}, {"customer": 1, "items.product": 1, "customerId": 1})
        self.assertIsNotNone(order, "the seed left no PENDING order")
        customer = db.customers.find_one({"_id": order["customerId"]})
        self.assertEqual(order["customer"], shop_seed.customer_snapshot(customer))
        self.assertIn("name: '%s'" % customer["name"], out)
        for item in order["items"]:
            self.assertIn("title: '%s'" % item["product"]["title"], out)
        product = db.products.find_one({}, {"title": 1, "recentReviews": 1})
        self.assertIn("title: '%s'" % product["title"], out)
        newest = shop_seed.expected_recent(db, "recentReviews", product["_id"])
        self.assertTrue(newest, "the seed gave product %r no reviews" % product["_id"])
        self.assertEqual(product["recentReviews"], newest)
        self.assertIn("reviewId: %r" % newest[0]["reviewId"], out)
        self.assertEqual(d.stop(), 0)

    def test_the_least_privilege_role_and_user_as_shown(self):
        """operations.md, "A least-privilege MongoDB role", as a user administrator on a server with
        access control: the role holds the privileges the block lists, and user denormd logs in
        with the password given to passwordPrompt() and can do what denormd needs first."""
        block = block_for("test_the_least_privilege_role_and_user_as_shown")
        s = self.server("--auth")
        root = self.client(s.create_first_user("root", "root-pw"))
        root.admin.command("createUser", "useradmin", pwd="ua-pw",
                           roles=[{"role": "userAdminAnyDatabase", "db": "admin"}])
        root.shop.orders.insert_one({"_id": 1})
        self.assertEqual(block.text.count("passwordPrompt()"), 1, block.where)
        self.run_block(block, self.direct(s, credentials="useradmin:ua-pw@"))
        role, user = pymongo_auth.commands_from_docs()
        info = root.admin.command("rolesInfo", role["createRole"], showPrivileges=True)["roles"]
        self.assertEqual(len(info), 1, info)
        privileges = sorted((p["resource"]["db"], p["resource"]["collection"], tuple(sorted(p["actions"])))
                            for p in info[0]["privileges"])
        listed = sorted((p["resource"]["db"], p["resource"]["collection"], tuple(sorted(p["actions"])))
                        for p in role["privileges"])
        self.assertEqual(privileges, listed)
        self.assertIn(("shop", "", ("listCollections",)), privileges)
        denormd = self.client(s.uri_as(user["createUser"], PASSWORD))
        status = denormd.admin.command("connectionStatus")["authInfo"]
        self.assertEqual(status["authenticatedUsers"], [{"user": "denormd", "db": "admin"}])
        self.assertEqual(status["authenticatedUserRoles"], [{"role": role["createRole"], "db": "admin"}])
        self.assertEqual(denormd.shop.list_collection_names(), ["orders"])
        with denormd.shop.orders.watch():
            pass

    def test_replication_info_as_shown(self):
        """operations.md, "Oplog sizing": the transcript's command after its prompt, on the URI
        that gives that prompt; the output has the shown shape and the server's sizes."""
        block = block_for("test_replication_info_as_shown")
        lines = block.text.split("\n")
        prompt = "rs0 [direct: primary] shop> "
        commands = [l[len(prompt):] for l in lines if l.startswith(prompt)]
        shown = [DATE.sub("<date>", l) for l in lines if l.strip() and not l.startswith(prompt)]
        self.assertEqual(len(commands), 1, block.where)
        s = self.server()
        c = self.client(s.uri)
        c.shop.c.insert_many([{"_id": i} for i in range(5)])
        out = self.run_block(Block(block.where, "\n".join(commands)), self.direct(s, "shop"))
        self.assertTrue(out.startswith(prompt), "%s: mongosh's prompt is not the transcript's:\n%s" % (block.where, out))
        actual = DATE.sub("<date>", out.replace(prompt, "")).strip()
        docs.assert_shape(self, shown, actual, block.where)
        stats = c.local.command("collStats", "oplog.rs")
        size = re.search(r"configured oplog size\n'([\d.]+) MB'", actual).group(1)
        self.assertEqual(float(size), stats["maxSize"] / 1024 / 1024)

    def test_resize_oplog_as_shown(self):
        block = block_for("test_resize_oplog_as_shown")
        s = self.server()
        c = self.client(s.uri)
        c.shop.c.insert_many([{"_id": i} for i in range(5)])  # getReplicationInfo() needs entries
        out = self.run_block(block, self.direct(s))
        size_mb = int(re.search(r"replSetResizeOplog: 1, size: (\d+)", block.text).group(1))
        self.assertEqual(c.local.command("collStats", "oplog.rs")["maxSize"], size_mb * 1024 * 1024)
        self.assertEqual(out.count("ok: 1"), 2, out)
        # The last statement prints the window in hours: a number.
        self.assertRegex(out, r"(?m)^rs0 \[direct: primary\] \w+> \d+(\.\d+)?$")

    def test_pre_images_as_shown(self):
        block = block_for("test_pre_images_as_shown")
        s = self.server()
        shop = self.client(s.uri).shop
        for name in ("customers", "reviews", "orders"):
            shop.create_collection(name)
        self.run_block(block, self.direct(s))
        enabled = sorted(c["name"] for c in shop.list_collections()
                         if c.get("options", {}).get("changeStreamPreAndPostImages", {}).get("enabled"))
        self.assertEqual(enabled, sorted(re.findall(r'collMod: "(\w+)"', block.text)))
        self.assertEqual(enabled, ["orders", "reviews"])

    def test_indexes_as_shown(self):
        block = block_for("test_indexes_as_shown")
        s = self.server()
        shop = self.client(s.uri).shop
        for name in ("orders", "logmsgs", "reviews", "products", "hosts", "customers"):
            shop.create_collection(name)
        self.run_block(block, self.direct(s))
        wanted = re.findall(r"^db\.(\w+)\.createIndex\((\{.*\})\)$", block.text, re.M)
        self.assertEqual(len(wanted), len([l for l in block.text.split("\n") if l.startswith("db.")]))
        for coll, spec in wanted:
            key = json.loads(re.sub(r"([{,]\s*)(\w+):", r'\1"\2":', spec), object_pairs_hook=list)
            keys = [list(i["key"].items()) for i in shop[coll].list_indexes()]
            self.assertIn([tuple(k) for k in key], [[tuple(k) for k in ks] for ks in keys],
                          "%s: no index %s on shop.%s" % (block.where, spec, coll))



class MongoshClaimsTest(unittest.TestCase):
    """Needs no mongosh: every block is claimed, and every claim still has its block."""

    def test_every_js_block_is_claimed(self):
        documents = []
        for b in js_blocks():
            claims = claims_of(b)
            self.assertEqual(len(claims), 1, "%s: `%s` is claimed by %d tests (add it to CLAIMS in %s)"
                             % (b.where, first_statement(b.text), len(claims), __file__))
            if claims[0].startswith("document:"):
                documents.append(b.where)
        claimed = {c for b in js_blocks() for c in claims_of(b)}
        for pattern, claim in CLAIMS:
            self.assertIn(claim, claimed, "no block matches %r any more" % pattern)
        print("\nblocks shown as documents, not run: " + ", ".join(documents))


if __name__ == "__main__":
    unittest.main()
