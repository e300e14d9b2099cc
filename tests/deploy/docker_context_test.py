#!/usr/bin/python3
"""Does the Docker build context (the repository minus .dockerignore) hold everything the
image's build stage needs? Copies exactly those files to a temporary folder and runs the
Dockerfile's CMake configure there (Release, tests off); with --expect-target the
`denormd` target must exist, and with --build it is also compiled, as `docker build` would.
CI runs the configure; `--build` is for a manual, complete rehearsal (minutes on 2 cores)."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from docker_context import context_files


def main():
    here = Path(__file__).resolve().parent
    repo = here.parent.parent
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", type=Path, default=repo)
    ap.add_argument("--expect-target", action="store_true", help="the denormd target must exist")
    ap.add_argument("--build", action="store_true", help="also build denormd and run --version")
    ap.add_argument("--jobs", default="2")
    args = ap.parse_args()

    files = context_files(args.repo)
    tmp = Path(tempfile.mkdtemp(prefix="denormd-docker-context-"))
    try:
        src = tmp / "src"
        for rel in sorted(files):
            dst = src / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(args.repo / rel, dst)
        build = src / "build"
        env = dict(os.environ)
        configure = ["cmake", "-S", str(src), "-B", str(build), "-G", "Ninja",
                     "-DCMAKE_BUILD_TYPE=Release", "-DDENORMD_BUILD_TESTS=OFF"]
        p = subprocess.run(configure, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        if p.returncode != 0:
            print(p.stdout[-4000:])
            print(f"FAIL the build context ({len(files)} files) does not configure: {' '.join(configure)}")
            return 1
        if args.expect_target or args.build:
            targets = subprocess.run(["ninja", "-C", str(build), "-t", "targets", "all"], check=True,
                                     stdout=subprocess.PIPE, text=True).stdout
            if not any(line.startswith("denormd:") for line in targets.splitlines()):
                print("FAIL the build context configures, but has no denormd target")
                return 1
        if args.build:
            b = subprocess.run(["cmake", "--build", str(build), "--target", "denormd", "-j", args.jobs],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if b.returncode != 0:
                print(b.stdout[-6000:])
                print("FAIL denormd does not build from the build context")
                return 1
            v = subprocess.run([str(build / "bin" / "denormd"), "--version"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            print(f"built {build / 'bin' / 'denormd'}: {v.stdout.strip()} (exit {v.returncode})")
            if v.returncode != 0:
                return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"docker context: {len(files)} files, configure ok"
          + (", denormd target present" if args.expect_target else "")
          + (", built" if args.build else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
