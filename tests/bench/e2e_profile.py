"""Profile one workload of the end-to-end benchmark with perf.

    python3 -m tests.bench.e2e_profile [--work copy|recent|mixed] [--rate N] [--secs S]
                                       [--target denormd|server] [--out perf.data] [--full]

Seeds the small shop, starts denormd, runs the workload at a fixed rate while `perf record`
samples the chosen process (DWARF call graphs), and prints CPU microseconds per source event
for denormd, the server and the driver. Read the result with `perf report -i OUT`.
"""
import argparse
import subprocess
import time

from tests.bench import e2e_bench as b


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="copy", choices=["copy", "recent", "mixed"])
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--secs", type=float, default=5)
    ap.add_argument("--target", default="denormd", choices=["denormd", "server"])
    ap.add_argument("--out", default="perf.data")
    ap.add_argument("--no-perf", action="store_true", help="only print the CPU figures")
    ap.add_argument("--full", action="store_true",
                    help="the benchmark's full-size shop (20,000 customers, 60,000 orders) instead of the small one")
    a = ap.parse_args()
    bench = b.Bench(argparse.Namespace(quick=not a.full, skip_baseline=True))
    bench.start_server()
    bench.shop.seed(0)
    bench.denormd = b.Denormd(bench.uri, bench.dbname + "_meta", b.write_mappings(bench.dbname),
                              "--log-level", "info", lifecycle=False)
    bench.sync_proc = b.Proc(bench.denormd.proc.pid)
    try:
        bench.wait_ready()
        make = {"copy": bench.shop.copy_event, "recent": bench.shop.recent_event,
                "mixed": bench.shop.mixed_event}[a.work]
        pid = bench.denormd.proc.pid if a.target == "denormd" else bench.server.proc.pid
        perf = None
        if not a.no_perf:
            perf = subprocess.Popen(["perf", "record", "-F", "499", "--call-graph", "dwarf,16384",
                                     "-p", str(pid), "-o", a.out], stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        def commands():
            got = bench.client.admin.command("serverStatus").get("metrics", {}).get("commands", {})
            return {k: v["total"] for k, v in got.items()}

        c0, k0 = bench.cpu(), commands()
        n, s = bench.gen.drive(make, a.rate, seconds=a.secs)
        bench.settle()
        c1, k1 = bench.cpu(), commands()
        if perf:
            perf.send_signal(2)
            perf.wait()
        print("%d events at %.0f/s; CPU µs per event: %s" % (
            n, n / s, {k: round((c1[k] - c0[k]) / n * 1e6, 1) for k in c0}))
        print("server commands per source event: %s" % {
            k: round((k1[k] - k0.get(k, 0)) / n, 3) for k in sorted(k1) if k1[k] - k0.get(k, 0) > n / 1000})
    finally:
        bench.denormd.stop()
        bench.stop_server()


if __name__ == "__main__":
    main()
