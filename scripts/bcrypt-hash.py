#!/usr/bin/python3
"""Prints the bcrypt hash of a password, for basic_auth_users in denormd's web config file
(docs/operations.md, "Securing the HTTP port").

The password is the first line of stdin, or is asked for twice on a terminal; never an
argument, which `ps` and the shell history would show. libcrypt (libxcrypt, on every Debian
system) computes the hash through ctypes: Python's crypt module is deprecated (gone in 3.13).
`htpasswd -nBC 10 "" | tr -d ':\\n'` (apache2-utils) prints the same kind of hash.

Usage: scripts/bcrypt-hash.py [--cost N] < password-file"""
import argparse
import ctypes
import ctypes.util
import getpass
import sys


def bcrypt(password, cost):
    """The $2b$ hash of `password` (bytes) at `cost`, with a fresh salt from the system."""
    lib = ctypes.CDLL(ctypes.util.find_library("crypt") or "libcrypt.so.1")
    lib.crypt_gensalt.restype = ctypes.c_char_p
    lib.crypt_gensalt.argtypes = [ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p, ctypes.c_int]
    lib.crypt.restype = ctypes.c_char_p
    lib.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    salt = lib.crypt_gensalt(b"$2b$", cost, None, 0)  # no random bytes given: libcrypt draws them
    if not salt:
        raise OSError("libcrypt cannot make a bcrypt salt")
    out = lib.crypt(password, salt)
    if not out or out.startswith(b"*"):
        raise OSError("libcrypt cannot compute the hash")
    return out.decode()


def read_password():
    if sys.stdin.isatty():
        first = getpass.getpass("Password: ")
        if getpass.getpass("Again: ") != first:
            sys.exit("error: the passwords differ")
        return first.encode()
    return sys.stdin.buffer.readline().rstrip(b"\r\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cost", type=int, default=10, help="bcrypt cost, 4 to 31 (default 10: some 70 ms)")
    args = ap.parse_args()
    if not 4 <= args.cost <= 31:
        sys.exit("error: --cost must be from 4 to 31")
    password = read_password()
    if not password:
        sys.exit("error: empty password")
    if len(password) > 72:
        sys.exit("error: bcrypt reads only the first 72 bytes of a password; use a shorter one")
    print(bcrypt(password, args.cost))


if __name__ == "__main__":
    main()
