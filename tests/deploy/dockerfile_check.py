#!/usr/bin/python3
"""Static checks of the Dockerfile and .dockerignore (there is no Docker engine in CI).

  * multi-stage, every stage on Debian bookworm;
  * the build stage installs the same Debian packages CI builds with: each one is in
    scripts/install-deps.sh, and each build tool and -dev library there (except the
    test-only ones listed below) is in the Dockerfile;
  * it configures and builds exactly as the project documents (Release, tests off,
    target denormd) and the runtime stage copies that binary;
  * the runtime stage installs no compiler, curl or wget, runs as a non-root user, has a
    HEALTHCHECK on /healthz and runs denormd as its entrypoint;
  * every file the build reads is in the build context after .dockerignore.
"""
import argparse
import json
import re
import shlex
import sys
from pathlib import Path

from docker_context import context_files

# Packages of scripts/install-deps.sh that only tests, tools or the demo need.
TEST_ONLY = {"libgtest-dev", "libgmock-dev", "libbenchmark-dev"}
BUILD_TOOLS = {"g++", "cmake", "ninja-build", "pkg-config"}
NOT_IN_RUNTIME = {"g++", "gcc", "clang", "cmake", "ninja-build", "make", "curl", "wget", "pkg-config"}


def instructions(text):
    """[(INSTRUCTION, arguments)] with continuations joined and comments dropped."""
    out, buf = [], ""
    for line in text.splitlines():
        s = line.strip()
        if not buf and (not s or s.startswith("#")):
            continue
        if buf and s.startswith("#"):
            continue
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        buf += s
        word, _, rest = buf.partition(" ")
        out.append((word.upper(), rest.strip()))
        buf = ""
    return out


def install_deps_packages(path):
    text = path.read_text(encoding="utf-8")
    m = re.search(r"^packages=\((.*?)^\)", text, re.S | re.M)
    if not m:
        raise SystemExit(f"{path}: no packages=( ... ) array")
    words = []
    for line in m.group(1).splitlines():
        words += line.split("#", 1)[0].split()
    return set(words)


def apt_packages(run_args):
    """Package names in the `apt-get install` commands of a RUN line (xargs lists excluded)."""
    pkgs = []
    for cmd in re.split(r"&&|;|\|\|", run_args):
        words = cmd.split()
        if "install" not in words or not any(w.endswith("apt-get") for w in words):
            continue
        after = words[words.index("install") + 1:]
        pkgs += [w for w in after if not w.startswith("-") and "=" not in w]
    return pkgs


def main():
    here = Path(__file__).resolve().parent
    repo = here.parent.parent
    ap = argparse.ArgumentParser()
    ap.add_argument("--dockerfile", type=Path, default=repo / "Dockerfile")
    ap.add_argument("--install-deps", type=Path, default=repo / "scripts" / "install-deps.sh")
    args = ap.parse_args()
    problems = []
    ins = instructions(args.dockerfile.read_text(encoding="utf-8"))

    # ARGs before the first FROM can parameterize FROM.
    global_args = {}
    for word, rest in ins:
        if word == "FROM":
            break
        if word == "ARG":
            k, _, v = rest.partition("=")
            global_args[k] = v
    stages = []  # [{"base", "name", "ins": [...]}]
    for word, rest in ins:
        if word == "FROM":
            parts = rest.split()
            base = re.sub(r"\$\{?(\w+)\}?", lambda m: global_args.get(m.group(1), m.group(0)), parts[0])
            name = parts[2] if len(parts) >= 3 and parts[1].upper() == "AS" else None
            stages.append({"base": base, "name": name, "ins": []})
        elif stages:
            stages[-1]["ins"].append((word, rest))
    if len(stages) < 2:
        problems.append(f"expected a multi-stage build, found {len(stages)} stage(s)")
        stages += [{"base": "", "name": None, "ins": []}] * (2 - len(stages))
    for s in stages:
        if not re.match(r"^(docker\.io/)?(library/)?debian:bookworm(-slim)?(@sha256:[0-9a-f]{64})?$", s["base"]):
            problems.append(f"stage {s['name'] or '?'}: base image {s['base']!r} is not Debian bookworm")
    build, runtime = stages[0], stages[-1]

    # ---- build stage: same packages as CI ------------------------------------------------------
    deps = install_deps_packages(args.install_deps)
    build_pkgs = set()
    for word, rest in build["ins"]:
        if word == "RUN":
            build_pkgs |= set(apt_packages(rest))
    if not build_pkgs:
        problems.append("the build stage installs no packages with apt-get")
    for p in sorted(build_pkgs - deps):
        problems.append(f"build stage installs {p}, which scripts/install-deps.sh (CI) does not")
    needed = {p for p in deps if p.endswith("-dev") and p not in TEST_ONLY} | (BUILD_TOOLS & deps)
    for p in sorted(needed - build_pkgs):
        problems.append(f"scripts/install-deps.sh has {p} but the Dockerfile's build stage does not install it "
                        f"(add it there, or to TEST_ONLY in {Path(__file__).name} if only tests need it)")
    runs = " ".join(rest for word, rest in build["ins"] if word == "RUN")
    for flag in ("-G Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DDENORMD_BUILD_TESTS=OFF", "--target denormd"):
        if flag not in runs:
            problems.append(f"build stage: the cmake commands lack {flag!r}")
    if "build/bin/denormd" not in runs:
        problems.append("build stage does not take the binary from build/bin/denormd")

    # ---- runtime stage ----------------------------------------------------------------------------
    rt = runtime["ins"]
    words = [w for w, _ in rt]
    for word, rest in rt:
        if word == "RUN":
            bad = set(apt_packages(rest)) & NOT_IN_RUNTIME
            if bad:
                problems.append(f"runtime stage installs {sorted(bad)}: the image must hold the binary and its libraries only")
    if not any(w == "COPY" and "--from=" in r and "denormd" in r for w, r in rt):
        problems.append("runtime stage does not copy the denormd binary from the build stage")
    users = [r for w, r in rt if w == "USER"]
    if not users:
        problems.append("runtime stage has no USER: it would run as root")
    elif users[-1].split(":")[0] in ("root", "0"):
        problems.append(f"runtime stage runs as {users[-1]!r}")
    hc = [r for w, r in rt if w == "HEALTHCHECK"]
    if not hc:
        problems.append("runtime stage has no HEALTHCHECK")
    else:
        cmd = hc[-1][hc[-1].find("CMD") + 3:].strip()
        if "/healthz" not in cmd:
            problems.append(f"HEALTHCHECK does not probe /healthz: {cmd}")
        if cmd.startswith("["):
            try:
                argv = json.loads(cmd)
            except ValueError as e:
                problems.append(f"HEALTHCHECK CMD is not valid JSON: {e}")
                argv = []
        else:
            argv = shlex.split(cmd)
        if argv and argv[0] in ("curl", "wget"):
            problems.append(f"HEALTHCHECK uses {argv[0]}, which the runtime image does not hold")
    entry = [r for w, r in rt if w == "ENTRYPOINT"]
    if not entry or "denormd" not in entry[-1]:
        problems.append("runtime stage's ENTRYPOINT is not denormd")
    if "EXPOSE" not in words:
        problems.append("runtime stage does not EXPOSE the metrics port")

    # ---- build context -----------------------------------------------------------------------------
    files = context_files(repo)
    for needed_path in ("CMakeLists.txt", "deploy/docker/runtime-packages.sh"):
        if needed_path not in files:
            problems.append(f"{needed_path} is not in the build context (.dockerignore)")
    for d in ("src/", "cmake/"):
        if not any(f.startswith(d) for f in files):
            problems.append(f"{d} is not in the build context (.dockerignore)")
    for leak in ("build/", ".git/", "build-", "tests/"):
        hits = [f for f in files if f.startswith(leak)]
        if hits:
            problems.append(f".dockerignore lets {leak}* into the build context ({hits[0]}, ...)")
    for word, rest in build["ins"]:
        if word == "COPY" and "--from" not in rest:
            srcs = shlex.split(rest)[:-1]
            for src in srcs:
                if src != "." and src not in files and not any(f.startswith(src.rstrip("/") + "/") for f in files):
                    problems.append(f"COPY {src}: not in the build context")

    for p in problems:
        print("FAIL", p)
    print(f"Dockerfile check: {len(stages)} stages, {len(build_pkgs)} build packages, "
          f"{len(files)} files in the context, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
