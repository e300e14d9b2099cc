#!/usr/bin/python3
"""docker-compose.yml, checked without a Docker engine:
  * `docker-compose config -q` accepts it (Debian's docker-compose 1.29 here; the file uses
    the Compose Specification, which Compose v2 reads too);
  * from the resolved configuration: the services issue 6 asks for, wired together —
    a MongoDB 7 replica set whose health check initiates it, two denormd replicas with --ha
    (each its own --instance-id and host port) built from the Dockerfile with mappings/
    mounted read-only and started only once the replica set is healthy, Prometheus scraping
    both replicas' metrics ports with the rules loaded, Grafana provisioned with the data
    source and dashboards, and a one-shot seeder waiting for both replicas;
  * every bind-mounted host path exists and every file a service is told to read is
    inside a mount; images carry a version tag; ports are bound to 127.0.0.1 only;
  * with --web-config-file, the file is mounted and what talks to the port can: with
    basic_auth_users, Prometheus' credentials and the health checks'
    (DENORMD_HEALTHCHECK_AUTHORIZATION) verify against the file's bcrypt hashes (libcrypt);
    with tls_server_config, Prometheus scrapes over https.
"""
import argparse
import base64
import ctypes
import ctypes.util
import shutil
import subprocess
import sys
from pathlib import Path

import yaml


def mounts(svc):
    """[(host path or volume name, container path, read_only, is_bind)]"""
    out = []
    for v in svc.get("volumes", []):
        if isinstance(v, str):
            parts = v.split(":")
            src, dst = parts[0], parts[1]
            ro = len(parts) > 2 and "ro" in parts[2].split(",")
            out.append((src, dst, ro, src.startswith(("/", ".", "~"))))
        else:
            out.append((v.get("source"), v.get("target"), bool(v.get("read_only")), v.get("type") == "bind"))
    return out


def host_path_of(svc, container_path):
    """The host file behind a container path, through the service's bind mounts."""
    best = None
    for src, dst, _, bind in mounts(svc):
        if bind and (container_path == dst or container_path.startswith(dst.rstrip("/") + "/")):
            if best is None or len(dst) > len(best[1]):
                best = (src, dst)
    if best is None:
        return None
    return Path(best[0]) / container_path[len(best[1]):].lstrip("/")


def bcrypt_matches(password, hashed):
    """Whether `password` is the one `hashed` (a bcrypt hash) was made from, by libcrypt."""
    lib = ctypes.CDLL(ctypes.util.find_library("crypt") or "libcrypt.so.1")
    lib.crypt.restype = ctypes.c_char_p
    lib.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    out = lib.crypt(password.encode(), hashed.encode())
    return out is not None and out.decode() == hashed


def check_web_config(denormd, prometheus_job, need):
    """The replica's --web-config-file, if any, against what talks to its port."""
    dcmd = denormd.get("command") or []
    if "--web-config-file" not in dcmd:
        return
    path = dcmd[dcmd.index("--web-config-file") + 1]
    host_file = host_path_of(denormd, path)
    need(host_file is not None and host_file.is_file(), f"denormd: --web-config-file {path} is not mounted from the repo")
    if host_file is None or not host_file.is_file():
        return
    web = yaml.safe_load(host_file.read_text(encoding="utf-8")) or {}
    users = web.get("basic_auth_users") or {}
    if users:
        auth = prometheus_job.get("basic_auth") or {}
        user, password = auth.get("username"), auth.get("password")
        need(user in users and bcrypt_matches(password or "", users[user]),
             f"prometheus: job denormd's basic_auth does not match a user of {path}")
        header = str((denormd.get("environment") or {}).get("DENORMD_HEALTHCHECK_AUTHORIZATION", ""))
        given = base64.b64decode(header[len("Basic "):]).decode() if header.startswith("Basic ") else ":"
        hc_user, _, hc_password = given.partition(":")
        need(hc_user in users and bcrypt_matches(hc_password, users[hc_user]),
             f"denormd: DENORMD_HEALTHCHECK_AUTHORIZATION is not the credentials of a user of {path}")
    if web.get("tls_server_config"):
        need(prometheus_job.get("scheme") == "https", f"prometheus: job denormd must scrape https ({path} has TLS)")


def main():
    here = Path(__file__).resolve().parent
    repo = here.parent.parent
    ap = argparse.ArgumentParser()
    ap.add_argument("--compose", type=Path, default=repo / "docker-compose.yml")
    args = ap.parse_args()
    compose = args.compose.resolve()
    exe = shutil.which("docker-compose")
    if not exe:
        sys.exit("docker-compose is missing: run scripts/install-deps.sh")
    problems = []

    q = subprocess.run([exe, "-f", str(compose), "config", "-q"], cwd=compose.parent,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if q.returncode != 0:
        print(q.stdout)
        print(f"FAIL docker-compose config -q exited {q.returncode}")
        return 1
    resolved = subprocess.run([exe, "-f", str(compose), "config"], cwd=compose.parent, check=True,
                              stdout=subprocess.PIPE, text=True).stdout
    cfg = yaml.safe_load(resolved)
    services = cfg.get("services", {})
    replicas = ("denormd", "denormd-2")
    for name in ("mongo", *replicas, "prometheus", "grafana", "seed"):
        if name not in services:
            problems.append(f"service {name!r} is missing")
    if problems:
        for p in problems:
            print("FAIL", p)
        return 1
    mongo, prom, grafana, seed = (services[n] for n in ("mongo", "prometheus", "grafana", "seed"))

    def need(cond, msg):
        if not cond:
            problems.append(msg)

    # --- every service -------------------------------------------------------------------------
    for name, svc in services.items():
        image = svc.get("image", "")
        if "build" not in svc:
            need(":" in image and not image.endswith(":latest"), f"{name}: image {image!r} has no version tag")
        for src, dst, _, bind in mounts(svc):
            if bind:
                need(Path(src).exists(), f"{name}: bind mount source {src} does not exist")
        for port in svc.get("ports", []):
            host_ip = port.get("host_ip") if isinstance(port, dict) else str(port).split(":")[0]
            need(host_ip == "127.0.0.1", f"{name}: port {port} is published beyond 127.0.0.1")

    # --- mongo: MongoDB 7, replica set, idempotent init in the health check --------------------------
    need(str(mongo.get("image", "")).startswith("mongo:7"), f"mongo: image {mongo.get('image')} is not MongoDB 7")
    cmd = mongo.get("command") or []
    cmd = cmd.split() if isinstance(cmd, str) else cmd
    need("--replSet" in cmd, "mongo: mongod is not started with --replSet")
    rs_name = cmd[cmd.index("--replSet") + 1] if "--replSet" in cmd and cmd.index("--replSet") + 1 < len(cmd) else None
    test = (mongo.get("healthcheck") or {}).get("test") or []
    script = next((a for a in test if a.endswith(".js")), None)
    need(script is not None, "mongo: the health check runs no init script")
    if script:
        host_file = host_path_of(mongo, script)
        need(host_file is not None and host_file.is_file(), f"mongo: health check script {script} is not mounted from the repo")
        if host_file and host_file.is_file():
            text = host_file.read_text(encoding="utf-8")
            need("rs.initiate" in text and "NotYetInitialized" in text,
                 f"{host_file}: must initiate the replica set only when it is not yet initialized")
            need("isWritablePrimary" in text, f"{host_file}: must report healthy only on a primary")
    env = mongo.get("environment") or {}
    need(env.get("DEMO_REPLSET", "rs0") == rs_name, "mongo: DEMO_REPLSET differs from --replSet")

    # --- denormd, twice -------------------------------------------------------------------------
    def flag(c, f):
        return c[c.index(f) + 1] if f in c and c.index(f) + 1 < len(c) else None

    def check_replica(name, denormd):
        """Checks one replica; returns its --instance-id, metrics port, host port, and the rest of
        its command."""
        build = denormd.get("build") or {}
        need(Path(build.get("context", "")).resolve() == repo and build.get("dockerfile", "Dockerfile") == "Dockerfile",
             f"{name}: not built from the repository's Dockerfile")
        need((denormd.get("depends_on") or {}).get("mongo", {}).get("condition") == "service_healthy",
             f"{name}: must depend on mongo being healthy")
        dcmd = denormd.get("command") or []
        need(dcmd[:1] == ["run"], f"{name}: command should start with run: {dcmd}")
        need("--ha" in dcmd, f"{name}: the replicas share the work only with --ha")
        need("--verify-interval" in dcmd, f"{name}: the demo runs the background verify (--verify-interval)")
        mappings_dir = flag(dcmd, "--mappings")
        metrics_addr = flag(dcmd, "--metrics-addr") or ""
        need(mappings_dir is not None, f"{name}: no --mappings")
        m = [x for x in mounts(denormd) if x[1] == mappings_dir]
        need(bool(m) and Path(m[0][0]) == repo / "mappings" and m[0][2],
             f"{name}: {mappings_dir} must be ./mappings mounted read-only")
        uri = (denormd.get("environment") or {}).get("DENORMD_URI", "")
        need(f"replicaSet={rs_name}" in uri and "mongo:27017" in uri,
             f"{name}: DENORMD_URI {uri!r} does not name replica set {rs_name} on mongo:27017")
        need(flag(dcmd, "--db") is not None, f"{name}: no --db")
        metrics_port = metrics_addr.rpartition(":")[2]
        need(metrics_addr.startswith("0.0.0.0:"),
             f"{name}: --metrics-addr {metrics_addr!r} is not reachable from other containers")
        need(str((denormd.get("environment") or {}).get("DENORMD_HEALTHCHECK_PORT", metrics_port)) == metrics_port,
             f"{name}: DENORMD_HEALTHCHECK_PORT differs from the --metrics-addr port")
        ports = denormd.get("ports") or [{}]
        port = ports[0]
        published = str(port.get("published") if isinstance(port, dict) else str(port).split(":")[1])
        instance_id = flag(dcmd, "--instance-id")
        rest = tuple(a for a in dcmd if a != instance_id)
        return instance_id, metrics_port, published, rest

    seen = [check_replica(name, services[name]) for name in replicas]
    ids, ports, published, commands = zip(*seen)
    need(None not in ids and len(set(ids)) == len(ids), f"denormd: each replica needs its own --instance-id: {ids}")
    need(len(set(published)) == len(published), f"denormd: the replicas publish one host port: {published}")
    need(len(set(commands)) == 1, "denormd: the replicas must run the same command apart from --instance-id")
    metrics_port = ports[0]

    # --- seeder ---------------------------------------------------------------------------------
    sdeps = seed.get("depends_on") or {}
    need(sdeps.get("mongo", {}).get("condition") == "service_healthy", "seed: must wait for a healthy mongo")
    for name in replicas:
        need(sdeps.get(name, {}).get("condition") == "service_healthy", f"seed: must wait for a healthy {name}")
    need(seed.get("restart", "no") == "no", "seed: a one-shot service must not restart")
    scmd = seed.get("command") or []
    need(bool(scmd) and scmd[0] == "mongosh", "seed: should run mongosh")
    js = [a for a in scmd if a.endswith(".js")]
    need(bool(js), "seed: runs no script")
    for a in js:
        f = host_path_of(seed, a)
        need(f is not None and f.is_file(), f"seed: script {a} is not mounted from the repo")

    # --- prometheus -------------------------------------------------------------------------------
    pcmd = prom.get("command") or []
    cfg_file = next((a.split("=", 1)[1] for a in pcmd if a.startswith("--config.file=")), "/etc/prometheus/prometheus.yml")
    host_cfg = host_path_of(prom, cfg_file)
    need(host_cfg is not None and host_cfg.is_file(), f"prometheus: {cfg_file} is not mounted from the repo")
    if host_cfg and host_cfg.is_file():
        pc = yaml.safe_load(host_cfg.read_text(encoding="utf-8"))
        targets = [t for j in pc.get("scrape_configs", []) if j.get("job_name") == "denormd"
                   for sc in j.get("static_configs", []) for t in sc.get("targets", [])]
        for name, port in zip(replicas, ports):
            need(f"{name}:{port}" in targets, f"prometheus: job denormd does not scrape {name}:{port} ({targets})")
        job = next((j for j in pc.get("scrape_configs", []) if j.get("job_name") == "denormd"), {})
        check_web_config(services[replicas[0]], job, need)
        for rf in pc.get("rule_files", []):
            need((host_cfg.parent / rf).is_file(), f"prometheus: rule file {rf} is not next to {host_cfg}")
        need(bool(pc.get("rule_files")), "prometheus: no rule_files: the alerts would not be evaluated")

    # --- grafana ----------------------------------------------------------------------------------
    prov = host_path_of(grafana, "/etc/grafana/provisioning")
    need(prov is not None and prov.is_dir(), "grafana: /etc/grafana/provisioning is not mounted from the repo")
    if prov and prov.is_dir():
        for f in (prov / "datasources").glob("*.y*ml"):
            for ds in yaml.safe_load(f.read_text(encoding="utf-8")).get("datasources", []):
                if ds.get("type") == "prometheus":
                    need(ds.get("url") == "http://prometheus:9090", f"grafana: data source url {ds.get('url')} is not the prometheus service")
        providers = [p for f in (prov / "dashboards").glob("*.y*ml")
                     for p in yaml.safe_load(f.read_text(encoding="utf-8")).get("providers", [])]
        need(bool(providers), "grafana: no dashboard provider")
        for p in providers:
            dpath = (p.get("options") or {}).get("path", "")
            host_dir = host_path_of(grafana, dpath)
            need(host_dir is not None and any(host_dir.glob("*.json")),
                 f"grafana: dashboard provider path {dpath} holds no dashboard from the repo")
    home = (grafana.get("environment") or {}).get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH")
    if home:
        hp = host_path_of(grafana, home)
        need(hp is not None and hp.is_file(), f"grafana: home dashboard {home} is not mounted")

    for p in problems:
        print("FAIL", p)
    print(f"compose check: {len(services)} services, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
