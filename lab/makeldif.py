"""makeldif.py -- a MakeLDIF-style directory of N people, the same bytes for the same
(N, seed): the suffix dc=example,dc=com, ou=People, and uid=user.0 .. user.N-1, each an
inetOrgPerson with the attributes of MakeLDIF's example template (names, phones, postal
address, an 80-odd character description).  slapadd adds the operational attributes
(entryUUID, entryCSN, timestamps) itself, so those differ between loads; every user
attribute does not.

    python -m lab.makeldif -n 100000 [--seed 1] [-o FILE|-]
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import Callable, TextIO

SUFFIX = "dc=example,dc=com"
PEOPLE = f"ou=People,{SUFFIX}"
ROOTDN = f"cn=admin,{SUFFIX}"
ROOTPW = "secret"

_GIVEN = (
    "Aaron Abigail Adele Agnes Aldo Alma Amos Anika Arlo Astrid Basil Beatrix Bruno Cecil "
    "Celeste Cyrus Dagny Dario Delia Dmitri Edith Elias Elsa Emeric Esme Felix Fiona Flora "
    "Gideon Greta Hannes Hazel Hugo Ida Ines Ivo Jasper Jonas Juno Kasimir Klara Lars Lena "
    "Linus Lotte Magnus Malin Milo Mira Nils Nora Odile Olaf Otto Pia Quentin Rhea Rufus "
    "Selma Silas Solveig Theo Tilde Ulla Viggo Wanda Xaver Ylva Zeno"
).split()
_SUR = (
    "Abel Adler Arendt Bauer Beck Berg Blom Brandt Dahl Eder Falk Fink Frey Graf Hahn Hart "
    "Holm Horn Imhof Jung Kahl Keller Klein Koch Kraus Lang Lind Lorenz Maier Marx Moll Nagel "
    "Noll Ohm Pohl Quast Rapp Reich Roth Sauer Seidel Stark Thal Ulm Vogt Wahl Weber Wolf "
    "Xylander Yildiz Zander Zeller Zorn"
).split()
_STREETS = "Oak Pine Maple Cedar Elm Birch Willow Aspen Spruce Chestnut".split()
_CITIES = "Aalborg Basel Coimbra Delft Espoo Freiburg Ghent Hamar Innsbruck Jena".split()
_STATES = "AK AL AZ CA CO CT DE FL GA HI IA ID IL IN KS KY MA MD ME MI MN MO".split()


def _phone(r: random.Random) -> str:
    return f"+1 {r.randrange(100, 999)} {r.randrange(100, 999)} {r.randrange(10000):04d}"


def person(i: int, r: random.Random) -> str:
    given, sur = r.choice(_GIVEN), r.choice(_SUR)
    cn = f"{given} {sur}"
    street = f"{r.randrange(1, 9999)} {r.choice(_STREETS)} Street"
    city, state, zipc = r.choice(_CITIES), r.choice(_STATES), f"{r.randrange(100000):05d}"
    return (
        f"dn: uid=user.{i},{PEOPLE}\n"
        "objectClass: top\nobjectClass: person\nobjectClass: organizationalPerson\n"
        "objectClass: inetOrgPerson\n"
        f"givenName: {given}\nsn: {sur}\ncn: {cn}\ninitials: {given[0]}{sur[0]}\n"
        f"employeeNumber: {i}\nuid: user.{i}\nmail: user.{i}@example.com\n"
        f"userPassword: pw{r.getrandbits(40):010x}\n"
        f"telephoneNumber: {_phone(r)}\nhomePhone: {_phone(r)}\npager: {_phone(r)}\n"
        f"mobile: {_phone(r)}\nstreet: {street}\nl: {city}\nst: {state}\n"
        f"postalCode: {zipc}\npostalAddress: {cn}${street}${city}, {state}  {zipc}\n"
        f"description: This is the description for {cn}.\n\n"
    )


def write(out: TextIO, n: int, seed: int = 1) -> None:
    out.write(
        f"dn: {SUFFIX}\nobjectClass: top\nobjectClass: dcObject\nobjectClass: organization\n"
        "dc: example\no: Example Corp.\n\n"
        f"dn: {PEOPLE}\nobjectClass: top\nobjectClass: organizationalUnit\nou: People\n\n"
    )
    r = random.Random(seed)
    chunk: list[str] = []
    for i in range(n):
        chunk.append(person(i, r))
        if len(chunk) == 4096:
            out.write("".join(chunk))
            chunk.clear()
    out.write("".join(chunk))


def ldif_cli(
    write_ldif: Callable[[TextIO, int, int], None], doc: str, argv: list[str] | None = None
) -> None:
    """The command line of an LDIF generator write_ldif(out, n, seed): -n N (10000),
    --seed S (1), -o FILE (- for stdout); doc's first paragraph is its description.  Also
    tests/slapd/gen_ldif.py's."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", default="-")
    a = ap.parse_args(argv)
    if a.o == "-":
        write_ldif(sys.stdout, a.n, a.seed)
    else:
        with open(a.o, "w") as f:
            write_ldif(f, a.n, a.seed)


def main(argv: list[str] | None = None) -> None:
    ldif_cli(write, __doc__ or "", argv)


if __name__ == "__main__":
    main()
