#!/usr/bin/python3
"""Runs the container health checks exactly as Docker would, against stub HTTP servers on
127.0.0.1, since CI has no Docker engine:
  * the Dockerfile's HEALTHCHECK (GET /healthz), and
  * the denormd service's healthcheck in docker-compose.yml (GET /readyz), taken from
    `docker-compose config` so Compose's own `$$` unescaping is part of the test.
Each must succeed on 200 (with or without a reason phrase, HTTP/1.0 or 1.1) and fail on
another status, a wrong path, a server that never answers, and a closed port, within the
time Docker allows it; and send DENORMD_HEALTHCHECK_AUTHORIZATION, when set, as the
Authorization header (basic auth from --web-config-file)."""
import argparse
import json
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from dockerfile_check import instructions


class Stub:
    """One-connection-at-a-time HTTP server answering `status_line` for `path`, 404 otherwise;
    status_line None = accept and never answer. With `authorization`, a request without that
    Authorization header is answered 401."""

    def __init__(self, path, status_line, authorization=None):
        self.path, self.status_line, self.authorization = path, status_line, authorization
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.requests = []
        self.stop = False
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        self.sock.settimeout(0.2)
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(5)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                except OSError:
                    pass
                request_line = data.split(b"\r\n", 1)[0].decode(errors="replace")
                self.requests.append(request_line)
                if self.status_line is None:
                    time.sleep(6)
                    continue
                parts = request_line.split()
                status = self.status_line if len(parts) >= 2 and parts[1] == self.path else "HTTP/1.1 404 Not Found"
                headers = data.split(b"\r\n\r\n", 1)[0].decode(errors="replace").split("\r\n")[1:]
                if self.authorization and "Authorization: " + self.authorization not in headers:
                    status = "HTTP/1.1 401 Unauthorized"
                body = b"ok\n"
                conn.sendall(f"{status}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)

    def close(self):
        self.stop = True
        self.sock.close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def dockerfile_healthcheck(path):
    hc = [r for w, r in instructions(path.read_text(encoding="utf-8")) if w == "HEALTHCHECK"]
    if not hc:
        raise SystemExit("Dockerfile has no HEALTHCHECK")
    opts, _, cmd = hc[-1].partition("CMD")
    timeout = re.search(r"--timeout=(\d+)s", opts)
    argv = json.loads(cmd.strip())
    return argv, int(timeout.group(1)) if timeout else 30


def compose_healthcheck(compose_file):
    import yaml
    exe = shutil.which("docker-compose")
    if not exe:
        raise SystemExit("docker-compose is missing: run scripts/install-deps.sh")
    out = subprocess.run([exe, "-f", str(compose_file), "config"], check=True, text=True,
                         stdout=subprocess.PIPE, cwd=compose_file.parent).stdout
    hc = yaml.safe_load(out)["services"]["denormd"]["healthcheck"]
    test = hc["test"]
    if test[0] == "CMD-SHELL":
        argv = ["/bin/sh", "-c", test[1]]
    else:
        argv = test[1:]
    # `docker-compose config` prints a Compose file, so `$` is still escaped as `$$`.
    argv = [a.replace("$$", "$") for a in argv]
    timeout = int(str(hc.get("timeout", "30s")).rstrip("s"))
    return argv, timeout


def run_probe(argv, port, timeout, authorization=None):
    env = {"PATH": "/usr/bin:/bin", "DENORMD_HEALTHCHECK_PORT": str(port)}
    if authorization:
        env["DENORMD_HEALTHCHECK_AUTHORIZATION"] = authorization
    start = time.monotonic()
    try:
        p = subprocess.run(argv, env=env, timeout=timeout + 2, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        code = p.returncode
    except subprocess.TimeoutExpired:
        code = "timeout"
    return code, time.monotonic() - start


def main():
    here = Path(__file__).resolve().parent
    repo = here.parent.parent
    ap = argparse.ArgumentParser()
    ap.add_argument("--dockerfile", type=Path, default=repo / "Dockerfile")
    ap.add_argument("--compose", type=Path, default=repo / "docker-compose.yml")
    args = ap.parse_args()

    probes = [("Dockerfile HEALTHCHECK", "/healthz", *dockerfile_healthcheck(args.dockerfile)),
              ("docker-compose denormd healthcheck", "/readyz", *compose_healthcheck(args.compose))]
    problems, runs = [], 0
    for label, path, argv, timeout in probes:
        cases = [
            ("200 OK", "HTTP/1.1 200 OK", True),
            ("200 without a reason phrase", "HTTP/1.1 200", True),
            ("HTTP/1.0 200", "HTTP/1.0 200 OK", True),
            ("503", "HTTP/1.1 503 Service Unavailable", False),
            ("500", "HTTP/1.1 500 Internal Server Error", False),
            ("2000 is not 200", "HTTP/1.1 2000 Odd", False),
            ("no answer", None, False),
        ]
        for name, status, healthy in cases:
            stub = Stub(path, status)
            try:
                code, took = run_probe(argv, stub.port, timeout)
            finally:
                stub.close()
            runs += 1
            ok = (code == 0) == healthy and code != "timeout" and took <= timeout
            if ok and stub.requests and not stub.requests[0].startswith(f"GET {path} HTTP/1."):
                ok = False
            if not ok:
                problems.append(f"{label}: {name}: exit {code} after {took:.1f}s (Docker allows {timeout}s), "
                                f"expected {'healthy' if healthy else 'unhealthy'}; requests {stub.requests}")
        # wrong path: a server that only answers 200 somewhere else
        stub = Stub("/elsewhere", "HTTP/1.1 200 OK")
        try:
            code, took = run_probe(argv, stub.port, timeout)
        finally:
            stub.close()
        runs += 1
        if code == 0:
            problems.append(f"{label}: healthy although {path} answered 404")
        # basic auth (--web-config-file): the header is sent when DENORMD_HEALTHCHECK_AUTHORIZATION
        # is set, and a port that wants it and does not get it is unhealthy
        auth = "Basic cHJvbWV0aGV1czpkZW5vcm1kLWRlbW8="
        for given, healthy in ((auth, True), (None, False), ("Basic d3Jvbmc6d3Jvbmc=", False)):
            stub = Stub(path, "HTTP/1.1 200 OK", authorization=auth)
            try:
                code, took = run_probe(argv, stub.port, timeout, authorization=given)
            finally:
                stub.close()
            runs += 1
            if (code == 0) != healthy or code == "timeout":
                problems.append(f"{label}: basic auth with {given!r}: exit {code}, expected "
                                f"{'healthy' if healthy else 'unhealthy'}")
        # closed port
        code, took = run_probe(argv, free_port(), timeout)
        runs += 1
        if code == 0 or code == "timeout":
            problems.append(f"{label}: closed port: exit {code}, expected a quick failure")
    for p in problems:
        print("FAIL", p)
    print(f"health checks: {runs} probes, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
