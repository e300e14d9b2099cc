"""`denormd run --web-config-file` (docs/operations.md, "Securing the HTTP port"): the HTTP port
with TLS and basic auth from a web config file in Prometheus' exporter-toolkit format. The
certificate comes from the openssl command line, the password hashes from
scripts/bcrypt-hash.py (libcrypt through ctypes), as the docs make them."""
import base64
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time

from tests.integration.base import ShopTestCase
from tests.integration.harness import DENORMD, SOURCE_DIR, wait_until

PASSWORD = "correct horse battery staple"


def bcrypt_hash(password, cost=4):
    p = subprocess.run(["/usr/bin/python3", os.path.join(SOURCE_DIR, "scripts", "bcrypt-hash.py"),
                        "--cost", str(cost)], input=password + "\n", capture_output=True, text=True,
                       timeout=30, check=True)
    return p.stdout.strip()


def self_signed(folder):
    """cert.pem and key.pem for 127.0.0.1 in `folder`."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-days", "2", "-subj", "/CN=denormd test", "-addext",
                    "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", os.path.join(folder, "key.pem"),
                    "-out", os.path.join(folder, "cert.pem")], capture_output=True, check=True, timeout=60)


def basic(user, password):
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


class WebConfigTest(ShopTestCase):
    DB_PREFIX = "web_"

    def setUp(self):
        super().setUp()
        self.folder = tempfile.mkdtemp(prefix="denormd-web-")
        self.addCleanup(shutil.rmtree, self.folder, True)
        self_signed(self.folder)
        self.config = os.path.join(self.folder, "web.yml")
        self.write_config(bcrypt_hash(PASSWORD))

    def write_config(self, prometheus_hash, extra=""):
        with open(self.config, "w") as f:
            f.write("tls_server_config:\n"
                    "  cert_file: cert.pem\n"  # relative: read from the file's folder
                    "  key_file: key.pem\n"
                    "  min_version: TLS12\n"
                    "basic_auth_users:\n"
                    "  prometheus: %s\n"
                    "http_server_config:\n"
                    "  headers:\n"
                    "    X-Frame-Options: deny\n" % prometheus_hash + extra)

    def https(self, d, path, auth=None, method="GET"):
        """(status, headers, body) of one request over TLS, verifying the server's certificate."""
        ctx = ssl.create_default_context(cafile=os.path.join(self.folder, "cert.pem"))
        conn = http.client.HTTPSConnection("127.0.0.1", d.port, context=ctx, timeout=10)
        try:
            headers = {"Authorization": auth} if auth else {}
            conn.request(method, path, body=b"" if method == "POST" else None, headers=headers)
            r = conn.getresponse()
            return r.status, r.headers, r.read().decode()
        finally:
            conn.close()

    def start_secured(self):
        d = self.daemon(self.uri, "--web-config-file", self.config, ready=False)
        wait_until(lambda: self.https(d, "/readyz", basic("prometheus", PASSWORD))[0] == 200, timeout=30,
                   message="denormd ready over HTTPS")
        return d

    def plain_http(self, port, path):
        """The raw answer to one plain-HTTP request ("" when the connection is closed unanswered)."""
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(("GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n" % path).encode())
            out = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    return out.decode(errors="replace")
                out += chunk

    def test_tls_and_basic_auth_guard_every_endpoint(self):
        self.shop.seed()
        d = self.start_secured()
        self.assertRegex(d.log(), r"metrics listening .*tls=true")
        # Plain HTTP: refused, with the reason, as Prometheus' exporters refuse it.
        answer = self.plain_http(d.port, "/metrics")
        self.assertTrue(answer.startswith("HTTP/1.1 400 "), answer)
        self.assertIn("Client sent an HTTP request to an HTTPS server.", answer)
        self.assertNotIn("denormd_", answer)

        endpoints = [("GET", "/metrics"), ("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/"),
                     ("GET", "/api/v1/status"), ("GET", "/applied?timeout=1"), ("POST", "/-/reload"),
                     ("GET", "/no-such-page")]
        wrong = [None, basic("prometheus", PASSWORD + "x"), basic("nobody", PASSWORD), "Basic !!!", "Bearer abc"]
        for method, path in endpoints:
            for auth in wrong:
                status, headers, body = self.https(d, path, auth, method)
                self.assertEqual(status, 401, "%s %s with %r: %s" % (method, path, auth, body))
                self.assertEqual(headers["WWW-Authenticate"], 'Basic realm="denormd"')
                self.assertEqual(headers["X-Frame-Options"], "deny")
                self.assertNotIn("denormd_", body)
        # Failed logins are logged, at a bounded rate: far fewer lines than failures.
        failures = d.log().count("HTTP login failed")
        self.assertGreaterEqual(failures, 1)
        self.assertLess(failures, 5)

        right = basic("prometheus", PASSWORD)
        status, headers, body = self.https(d, "/metrics", right)
        self.assertEqual(status, 200, body)
        self.assertIn("denormd_build_info", body)
        self.assertEqual(headers["X-Frame-Options"], "deny")
        self.assertEqual(self.https(d, "/readyz", right)[:3:2], (200, "ready\n"))
        self.assertEqual(self.https(d, "/healthz", right)[:3:2], (200, "ok\n"))
        status, headers, body = self.https(d, "/", right)
        self.assertEqual(status, 200)
        self.assertIn("text/html", headers["Content-Type"])
        status, _, body = self.https(d, "/api/v1/status", right)
        self.assertEqual(status, 200, body)
        self.assertIn("namespaces", json.loads(body))
        status, _, body = self.https(d, "/-/reload", right, "POST")
        self.assertEqual((status, body), (200, "reloaded\n"))
        self.assertEqual(d.stop(), 0)

    def test_a_changed_file_takes_effect_without_a_restart(self):
        """As exporter-toolkit reads its file on every request: a new password works within a
        second or so, the old one stops working; a broken file keeps the settings in force."""
        d = self.start_secured()
        self.write_config(bcrypt_hash("new password"))
        wait_until(lambda: self.https(d, "/metrics", basic("prometheus", "new password"))[0] == 200,
                   timeout=10, message="the new password accepted")
        self.assertEqual(self.https(d, "/metrics", basic("prometheus", PASSWORD))[0], 401)
        with open(self.config, "a") as f:
            f.write("rate_limit:\n  burst: 1\n")
        # The file is looked at when a request comes.
        wait_until(lambda: self.https(d, "/healthz", basic("prometheus", "new password"))[0] == 200
                   and "keeping the settings in force" in d.log(), timeout=10, message="the broken file refused")
        self.assertIn("rate_limit: not supported by denormd", d.log())
        self.assertEqual(self.https(d, "/metrics", basic("prometheus", "new password"))[0], 200)
        self.assertEqual(d.stop(), 0)

    def test_a_bad_web_config_file_exits_2_naming_the_file_the_key_and_the_value(self):
        cases = [
            ("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  min_version: TLS11\n",
             "web.yml:4: tls_server_config.min_version: must be TLS12 or TLS13 (denormd supports nothing "
             "older), not \"TLS11\""),
            ("tls_server_config:\n  cert_file: cert.pem\n  keyfile: key.pem\n",
             "web.yml:3: tls_server_config.keyfile: unknown key; allowed here: cert_file, key_file"),
            ("basic_auth_users:\n  prometheus: %s\n" % PASSWORD,
             "web.yml:2: basic_auth_users.prometheus: is not a bcrypt hash"),
            ("tls_server_config:\n  cert_file: missing.pem\n  key_file: key.pem\n",
             "tls_server_config.cert_file: cannot load \"%s\": No such file or directory"
             % os.path.join(self.folder, "missing.pem")),
        ]
        for text, expected in cases:
            with open(self.config, "w") as f:
                f.write(text)
            began = time.monotonic()
            p = subprocess.run([DENORMD, "run", "--uri", self.uri, "--db", self.dbname, "--mappings", self.mappings,
                                "--metrics-addr", "127.0.0.1:0", "--web-config-file", self.config],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(expected, p.stderr)
            self.assertIn(self.config, p.stderr)
            self.assertLess(time.monotonic() - began, 30)
            self.assertNotIn(PASSWORD, p.stderr + p.stdout)  # a pasted password is never shown
        p = subprocess.run([DENORMD, "run", "--uri", self.uri, "--mappings", self.mappings,
                            "--web-config-file", os.path.join(self.folder, "none.yml")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("none.yml: cannot read the web config file: No such file or directory", p.stderr)
