#!/usr/bin/python3
"""docs/operations.md's least-privilege role through pymongo 3.11 against mongo-emulator --auth:
a user administrator runs the createRole and createUser of "A least-privilege MongoDB role"
(read from the document itself, with the password given instead of passwordPrompt()), then
denormd's user does what the role grants (change streams on the shop's collections, reads,
updates, its own state, the oplog's oldest entry, killSessions of its own session) and is
refused (13 Unauthorized) what it does not grant.

Usage: pymongo_auth.py PATH_TO_MONGO_EMULATOR   (exit 77 = skipped)
"""
import os
import re
import sys
import unittest

try:
    import pymongo
    from bson.son import SON
    from pymongo.errors import OperationFailure
except ImportError:
    print("pymongo is not installed for", sys.executable)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pymongo_compat import read_events, start_emulator  # noqa: E402

EMULATOR_PATH = None
DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs",
                    "operations.md")
PASSWORD = "s3cr@t pw"


def strings(text):
    return re.findall(r'"([^"]*)"', text)


def docs_snippet():
    """The mongosh block of docs/operations.md that creates denormd's role and user."""
    with open(DOCS) as f:
        text = f.read()
    m = re.search(r"```js\n((?:(?!```).)*db\.createRole\((?:(?!```).)*)```", text, re.S)
    if not m:
        raise AssertionError("docs/operations.md has no createRole block")
    return m.group(1)


def commands_from_docs():
    """The snippet's createRole and createUser as commands. Each privilege template of the
    snippet must be understood here, or the test fails (update it with the document)."""
    block = docs_snippet()
    shop = strings(re.search(r"const shop = \[(.*?)\];", block).group(1))
    privileges = []
    templates = 0
    spread = (r'\.\.\.(shop|\[[^\]]*\])\.map\(\(c\) => \(\{\s*resource: \{ db: "([^"]+)", '
              r'collection: c \},\s*actions: \[([^\]]*)\] \}\)\)')
    for names, db, actions in re.findall(spread, block):
        templates += 1
        for c in shop if names == "shop" else strings(names):
            privileges.append({"resource": {"db": db, "collection": c},
                               "actions": strings(actions)})
    literal = r'^\s*\{ resource: \{ db: "([^"]+)", collection: "([^"]*)" \}, actions: \[([^\]]*)\] \},$'
    for db, coll, actions in re.findall(literal, block, re.M):
        templates += 1
        privileges.append({"resource": {"db": db, "collection": coll},
                           "actions": strings(actions)})
    if templates != block.count("resource:"):
        raise AssertionError("a privilege of docs/operations.md's role is not understood here")
    role = re.search(r'db\.createRole\(\{\s*role: "([^"]+)"', block).group(1)
    if not re.search(r"\],\s*roles: \[\],\s*\}\);", block):
        raise AssertionError("the role inherits roles: update this test")
    user = re.search(r'db\.createUser\(\{ user: "([^"]+)", pwd: passwordPrompt\(\), '
                     r'roles: \[\{ role: "([^"]+)", db: "([^"]+)" \}\] \}\);', block)
    # mongosh adds the write concern its helpers use.
    wc = {"w": "majority", "wtimeout": 600000}
    create_role = {"createRole": role, "privileges": privileges, "roles": [], "writeConcern": wc}
    create_user = {"createUser": user.group(1), "pwd": PASSWORD,
                   "roles": [{"role": user.group(2), "db": user.group(3)}], "writeConcern": wc}
    return create_role, create_user


class LeastPrivilegeRole(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proc, uri = start_emulator(EMULATOR_PATH, "--auth")
        cls.host_port = uri.split("//")[1].split("/")[0]
        # The localhost exception: the first user, then a user administrator.
        first = pymongo.MongoClient(uri)
        first.admin.command("createUser", "root", pwd="root-pw", roles=["root"])
        first.close()
        cls.root = cls.login("root", "root-pw")
        cls.root.admin.command("createUser", "useradmin", pwd="ua-pw",
                               roles=[{"role": "userAdminAnyDatabase", "db": "admin"}])
        useradmin = cls.login("useradmin", "ua-pw")
        create_role, create_user = commands_from_docs()
        cls.role_name = create_role["createRole"]
        cls.user_name = create_user["createUser"]
        useradmin.admin.command(SON(create_role))
        useradmin.admin.command(SON(create_user))
        useradmin.close()
        for coll in ("customers", "products", "reviews", "orders"):
            cls.root.shop[coll].insert_many([{"_id": 1, "n": 1}, {"_id": 2, "n": 2}])
        cls.denormd = cls.login(cls.user_name, PASSWORD)

    @classmethod
    def tearDownClass(cls):
        cls.denormd.close()
        cls.root.close()
        cls.proc.terminate()
        cls.proc.wait(timeout=10)
        cls.proc.stdout.close()

    @classmethod
    def login(cls, user, pwd):
        return pymongo.MongoClient(
            "mongodb://%s:%s@%s/?replicaSet=rs0&authSource=admin"
            % (user, pwd.replace("@", "%40").replace(" ", "%20"), cls.host_port),
            serverSelectionTimeoutMS=10000)

    def assert_unauthorized(self, action, what):
        with self.assertRaises(OperationFailure, msg=what) as e:
            action()
        self.assertEqual(e.exception.code, 13, what)
        self.assertEqual(e.exception.details.get("codeName"), "Unauthorized", what)
        return e.exception.details["errmsg"]

    def test_the_role_is_the_documented_one(self):
        info = self.root.admin.command("rolesInfo", self.role_name, showPrivileges=True)
        role = info["roles"][0]
        self.assertFalse(role["isBuiltin"])
        resources = {(p["resource"]["db"], p["resource"]["collection"]): p["actions"]
                     for p in role["privileges"]}
        self.assertEqual(resources[("shop", "orders")], ["changeStream", "find", "update"])
        self.assertEqual(resources[("shop", "denormd_checkpoints")],
                         ["find", "insert", "remove", "update"])
        self.assertEqual(resources[("shop", "denormd_mappings")],
                         ["find", "insert", "remove", "update"])
        self.assertEqual(resources[("shop", "")], ["listCollections"])
        self.assertEqual(resources[("local", "oplog.rs")], ["find"])
        self.assertEqual(len(resources), 15)
        status = self.denormd.admin.command("connectionStatus")["authInfo"]
        self.assertEqual(status["authenticatedUsers"], [{"user": self.user_name, "db": "admin"}])
        self.assertEqual(status["authenticatedUserRoles"], [{"role": self.role_name, "db": "admin"}])

    def test_what_the_role_grants_works(self):
        shop = self.denormd.shop
        with shop.orders.watch(full_document="updateLookup") as stream:
            self.root.shop.orders.update_one({"_id": 1}, {"$set": {"n": 10}})
            events = read_events(stream, 1)
        self.assertEqual([e["operationType"] for e in events], ["update"])
        self.assertEqual(events[0]["fullDocument"], {"_id": 1, "n": 10})
        self.assertEqual(shop.customers.count_documents({}), 2)
        # listCollections on the database: denormd reads the sources' options.
        self.assertEqual(sorted(shop.list_collection_names()),
                         ["customers", "orders", "products", "reviews"])
        self.assertEqual(list(shop.reviews.aggregate([{"$group": {"_id": None, "n": {"$sum": "$n"}}}])),
                         [{"_id": None, "n": 3}])
        self.assertEqual(shop.products.update_many({}, {"$inc": {"n": 1}}).modified_count, 2)
        state = shop.denormd_checkpoints
        state.insert_one({"_id": "w", "token": 1})
        state.update_one({"_id": "w"}, {"$set": {"token": 2}})
        self.assertEqual(state.find_one({"_id": "w"})["token"], 2)
        self.assertEqual(state.delete_one({"_id": "w"}).deleted_count, 1)
        self.denormd.local["oplog.rs"].find_one(sort=[("$natural", 1)])
        # killSessions of its own session needs no privilege.
        with self.denormd.start_session() as s:
            shop.customers.find_one({}, session=s)
            self.assertEqual(
                self.denormd.admin.command("killSessions", [{"id": s.session_id["id"]}])["ok"], 1.0)

    def test_what_the_role_does_not_grant_is_refused(self):
        shop = self.denormd.shop
        message = self.assert_unauthorized(lambda: shop.customers.insert_one({"_id": 3}),
                                           "insert into shop.customers")
        self.assertTrue(message.startswith(
            'not authorized on shop to execute command { insert: "customers"'), message)
        self.assert_unauthorized(lambda: shop.orders.delete_one({"_id": 1}), "remove")
        self.assert_unauthorized(lambda: shop.watch(), "a database change stream")
        self.assert_unauthorized(lambda: self.denormd.watch(), "a cluster change stream")
        self.assert_unauthorized(lambda: shop.orders.create_index("n"), "createIndex")
        self.assert_unauthorized(lambda: shop.orders.drop(), "drop")
        self.assert_unauthorized(lambda: shop.payments.find_one(), "another collection")
        self.assert_unauthorized(lambda: self.denormd.admin.command("serverStatus"),
                                 "serverStatus")
        self.assert_unauthorized(lambda: self.denormd.local.startup_log.find_one(),
                                 "local beyond the oplog")
        # listCollections is granted on the shop database only; elsewhere, with
        # authorizedCollections and nameOnly, only the collections the role has privileges on.
        self.assert_unauthorized(lambda: self.denormd.local.list_collection_names(),
                                 "listCollections on local")
        self.assertEqual(self.denormd.local.list_collection_names(authorizedCollections=True),
                         ["oplog.rs"])

    def sasl_counts(self):
        commands = self.root.admin.command("serverStatus")["metrics"]["commands"]
        return tuple(commands.get(c, {}).get("total", 0) for c in ("saslStart", "saslContinue"))

    def test_pymongo_authenticates_speculatively(self):
        # pymongo 3.11 puts SCRAM-SHA-256's first step in the handshake's speculativeAuthenticate
        # and continues from the answer: no saslStart.
        starts, continues = self.sasl_counts()
        client = self.login(self.user_name, PASSWORD)
        client.shop.customers.find_one()
        self.assertEqual(self.sasl_counts(), (starts, continues + 1))
        client.close()

    def test_a_wrong_password_fails_with_18(self):
        client = self.login(self.user_name, "wrong")
        with self.assertRaises(OperationFailure) as e:
            client.shop.customers.find_one()
        self.assertEqual(e.exception.code, 18)
        self.assertEqual(e.exception.details.get("errmsg"), "Authentication failed.")
        client.close()


if __name__ == "__main__":
    if os.environ.get("DENORMD_TEST_URI"):
        print("needs a server of its own (--auth)")
        sys.exit(77)
    EMULATOR_PATH = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("EMULATOR")
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2)
