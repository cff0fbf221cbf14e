#!/usr/bin/env python3
"""gen_ldif.py -- a seeded LDIF directory for the slapd/back-mdb test.

    gen_ldif.py [-n 10000] [--seed 1] [-o FILE|-]

The suffix dc=example,dc=com, ou=People, and N inetOrgPerson entries uid=user.0..N-1.
Names are drawn from small pools, so cn values repeat (the cn equality index then holds
several IDs per key: DUPSORT data in back-mdb).  Every entry also carries the operational
attributes slapadd would otherwise invent (entryUUID, entryCSN, creator/modifier names and
timestamps), derived from the seed, so that two loads of the same file -- one on stock
slapd, one on our library -- produce byte-identical slapcat output.
The output depends only on N and the seed.
"""

import os
import random
import sys
import uuid

SUFFIX = "dc=example,dc=com"
PEOPLE = "ou=People," + SUFFIX
ADMIN = "cn=admin," + SUFFIX

FIRST = [
    "Ada",
    "Alan",
    "Barbara",
    "Brian",
    "Claude",
    "Dennis",
    "Donald",
    "Edsger",
    "Frances",
    "Grace",
    "Hedy",
    "Ivan",
    "John",
    "Ken",
    "Leslie",
    "Margaret",
    "Niklaus",
    "Radia",
    "Shafi",
    "Tony",
    "Ursula",
    "Vint",
    "Whitfield",
    "Yukihiro",
    "Zhores",
]
LAST = [
    "Abbott",
    "Baker",
    "Castro",
    "Dubois",
    "Eriksen",
    "Fischer",
    "Garcia",
    "Hughes",
    "Ivanova",
    "Jansen",
    "Kowalski",
    "Lopez",
    "Moreau",
    "Nakamura",
    "Okafor",
    "Petrov",
    "Quinn",
    "Rossi",
    "Schmidt",
    "Tanaka",
    "Umar",
    "Varga",
    "Weber",
    "Xu",
    "Yilmaz",
    "Zimmermann",
    "Andersson",
    "Bianchi",
    "Costa",
    "Dimitrov",
]
CITIES = ["Aarhus", "Bergen", "Cork", "Dresden", "Eindhoven", "Faro", "Graz", "Haarlem"]


class Gen:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.csn = 0

    def op_attrs(self):
        """Operational attributes with values we control (time counts up from 2026-01-01)."""
        self.csn += 1
        sec = self.csn // 1000
        usec = self.csn % 1000 * 1000
        ts = f"202601{1 + sec // 86400:02d}{sec // 3600 % 24:02d}{sec // 60 % 60:02d}{sec % 60:02d}"
        u = uuid.UUID(int=self.rng.getrandbits(128), version=4)
        return [
            ("entryUUID", str(u)),
            ("creatorsName", ADMIN),
            ("createTimestamp", ts + "Z"),
            ("entryCSN", f"{ts}.{usec:06d}Z#000000#000#000000"),
            ("modifiersName", ADMIN),
            ("modifyTimestamp", ts + "Z"),
        ]

    def person(self, i):
        r = self.rng
        first, last = r.choice(FIRST), r.choice(LAST)
        cn = f"{first} {last}"
        attrs = [
            ("objectClass", "top"),
            ("objectClass", "person"),
            ("objectClass", "organizationalPerson"),
            ("objectClass", "inetOrgPerson"),
            ("uid", f"user.{i}"),
            ("cn", cn),
            ("sn", last),
            ("givenName", first),
            ("initials", first[0] + last[0]),
            ("mail", f"user.{i}@example.com"),
            ("employeeNumber", str(i)),
            ("telephoneNumber", f"+1 555 {r.randrange(10000):04d} {r.randrange(1000):03d}"),
            ("l", r.choice(CITIES)),
            ("description", f"This is the description for {cn}."),
        ]
        if r.random() < 0.3:
            attrs.append(("mobile", f"+1 555 {r.randrange(10000000):07d}"))
        return f"uid=user.{i},{PEOPLE}", attrs + self.op_attrs()


def entries(n, seed):
    g = Gen(seed)
    yield (
        SUFFIX,
        [
            ("objectClass", "top"),
            ("objectClass", "dcObject"),
            ("objectClass", "organization"),
            ("dc", "example"),
            ("o", "Example"),
        ]
        + g.op_attrs(),
    )
    yield (
        PEOPLE,
        [("objectClass", "top"), ("objectClass", "organizationalUnit"), ("ou", "People")]
        + g.op_attrs(),
    )
    for i in range(n):
        yield g.person(i)


def people(n, seed):
    """{uid: cn} of the generated people (for the test's expectations)."""
    out = {}
    for _dn, attrs in entries(n, seed):
        d = dict((k, v) for k, v in attrs if k in ("uid", "cn", "entryUUID"))
        if "uid" in d:
            out[d["uid"]] = d
    return out


def write(f, n, seed):
    for dn, attrs in entries(n, seed):
        f.write(f"dn: {dn}\n")
        for k, v in attrs:
            f.write(f"{k}: {v}\n")
        f.write("\n")


def main():
    # the repository root, for the lab's command line (the same options as lab.makeldif)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from lab.makeldif import ldif_cli

    ldif_cli(write, __doc__)


if __name__ == "__main__":
    main()
