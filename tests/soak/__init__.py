"""The soak test: a seeded random workload with faults against denormd, checked whole by an
independent oracle (tests/soak/oracle.py shares no code with denormd). Run from the repository
root: /usr/bin/python3 -m tests.soak --seed S --minutes M [--ha] [--faults ...]."""
