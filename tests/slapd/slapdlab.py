"""slapdlab.py -- drive OpenLDAP's slapd/back-mdb (Debian's slapd 2.5, which embeds LMDB
0.9.29 and calls it through the PLT) on stock LMDB or, with LD_PRELOAD, on our library.

One scenario (run_scenario): slapadd -q of the generated LDIF, slapd on 127.0.0.1:<free
port> serving ldapsearch and ldapmodify, slapd stopped, slapcat; the database files
checked with real `mdb_stat -efa` and our mdbcheck; the dynamic linker's bindings of
back_mdb recorded with LD_DEBUG=bindings.  Everything lives in a private temp directory
(own slapd.conf, own DB dir, own pid file); the slapd started is always stopped.
"""

import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "compat"))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # the repository root: lab
import compatlib  # noqa: E402
import gen_ldif  # noqa: E402
from lab import slapd as lab_slapd  # noqa: E402

BACK_MDB = "/usr/lib/ldap/back_mdb.so"
SCHEMA = "/etc/ldap/schema"
TOOLS = ("slapd", "slapadd", "slapcat", "slaptest", "ldapsearch", "ldapmodify")
# attributes whose values the server makes up at run time (modify time, CSN, UUID of an
# entry added over LDAP): normalised in slapcat output only when not from our LDIF
RUNTIME_ATTRS = ("entryUUID", "entryCSN", "createTimestamp", "modifyTimestamp")
ROOTDN, ROOTPW = "cn=admin,dc=example,dc=com", "secret"


def missing_tools():
    out = [t for t in TOOLS if not (shutil.which(t) or os.path.exists(f"/usr/sbin/{t}"))]
    if not os.path.exists(BACK_MDB):
        out.append(BACK_MDB)
    return out


def tool(name):
    return shutil.which(name) or f"/usr/sbin/{name}"


def lmdb_api_names():
    """The 56 LMDB API functions: Debian's liblmdb.so.0 exports minus the midl helpers."""
    names = set()
    r = compatlib.run(["nm", "-D", "--defined-only", compatlib.SYSTEM_LIB])
    for line in r.stdout.splitlines():
        p = line.split()
        if (
            len(p) >= 3
            and p[1] == "T"
            and p[2].startswith("mdb_")
            and not p[2].startswith(("mdb_midl", "mdb_mid2l"))
        ):
            names.add(p[2].split("@")[0])
    return names


def dynamic_defined(path):
    r = compatlib.run(["nm", "-D", "--defined-only", path])
    return {ln.split()[2].split("@")[0] for ln in r.stdout.splitlines() if len(ln.split()) >= 3}


def plt_names(path):
    """Functions a shared object calls through its PLT (R_X86_64_JUMP_SLOT relocations)."""
    r = compatlib.run(["readelf", "-rW", path])
    out = set()
    for line in r.stdout.splitlines():
        if "JUMP_SLOT" in line:
            p = line.split()
            if len(p) >= 5:
                out.add(p[4].split("@")[0])
    return out


def symbol_report(our_lib):
    """Static facts: which API functions back-mdb calls through its PLT, whether our
    library exports them all, and whether any other mdb_* name collides."""
    api = lmdb_api_names()
    bm = os.path.realpath(BACK_MDB)
    plt = plt_names(bm)
    called_api = sorted(n for n in plt if n in api)
    ours = {n for n in dynamic_defined(our_lib) if n.startswith("mdb_")}
    bm_defined = {n for n in dynamic_defined(bm) if n.startswith("mdb_")}
    return {
        "api": sorted(api),
        "called_api": called_api,
        "not_exported_by_ours": sorted(set(called_api) - ours),
        "ours_non_api": sorted(ours - api),  # we export exactly the API: must be empty
        "collisions": sorted((bm_defined - api) & ours),  # back-mdb's own mdb_* names
        "back_mdb_own_mdb_names": len(bm_defined - api),
        "plt_mdb_names": len([n for n in plt if n.startswith("mdb_")]),
    }


# {symbol: set(target files)} of the bindings made for back_mdb, from the LD_DEBUG_OUTPUT
# files prefix.PID: the lab's reader (lab/slapd.py)
read_bindings = lab_slapd.read_bindings


def check_bindings(bindings, called_api, lib):
    """Problems with back_mdb's bindings: every API function it calls must bind to `lib`
    (our library, or back_mdb itself for stock), and no non-API mdb_* name may bind to our
    library."""
    lib = os.path.realpath(lib)
    problems = []
    for name in called_api:
        got = bindings.get(name)
        if not got:
            problems.append(f"{name}: no binding recorded")
        elif got != {lib}:
            problems.append(f"{name} bound to {sorted(got)}, not {lib}")
    ours = os.path.realpath(compatlib.OUR_LIB)
    api = set(called_api)
    for name, targets in bindings.items():
        if ours in targets and name not in api and lib == ours:
            problems.append(f"non-API symbol {name} bound to our library")
    return problems


def write_conf(d, nosync=True):
    os.makedirs(os.path.join(d, "db"), exist_ok=True)
    conf = os.path.join(d, "slapd.conf")
    with open(conf, "w") as f:
        f.write(f"""# private test instance: not a system service
include {SCHEMA}/core.schema
include {SCHEMA}/cosine.schema
include {SCHEMA}/inetorgperson.schema
pidfile {d}/slapd.pid
argsfile {d}/slapd.args
modulepath /usr/lib/ldap
moduleload back_mdb
loglevel 0
sizelimit unlimited
timelimit unlimited
threads 4
tool-threads 1

database mdb
maxsize 268435456
suffix "dc=example,dc=com"
rootdn "{ROOTDN}"
rootpw {ROOTPW}
directory {d}/db
{"dbnosync" if nosync else ""}
index objectClass eq
index uid,cn eq
index entryCSN,entryUUID eq
""")
    return conf


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def make_changes(n, seed, people):
    """An LDIF change list: modifies (replace description and cn -- the cn index changes --,
    add a mail value, delete telephoneNumber), deletes, adds, modrdns.  Returns (ldif,
    expectations)."""
    r = random.Random(seed * 7919 + 1)
    uids = sorted(people, key=lambda u: int(u.split(".")[1]))
    picked = r.sample(uids, 260)
    mods, dels, ren = picked[:200], picked[200:230], picked[230:240]
    out, exp = [], {"deleted": set(), "renamed": {}, "description": {}, "added": []}
    for u in mods:
        dn = f"uid={u},{gen_ldif.PEOPLE}"
        k = r.randrange(4)
        if k == 0:
            desc = f"changed {r.randrange(10**6)}"
            out.append(f"dn: {dn}\nchangetype: modify\nreplace: description\ndescription: {desc}\n")
            exp["description"][u] = desc
        elif k == 1:
            out.append(f"dn: {dn}\nchangetype: modify\nadd: mail\nmail: {u}@mail2.example\n")
        elif k == 2:
            out.append(f"dn: {dn}\nchangetype: modify\ndelete: telephoneNumber\n")
        else:
            cn = f"Renamed Person {r.randrange(50)}"
            out.append(f"dn: {dn}\nchangetype: modify\nreplace: cn\ncn: {cn}\n")
    for u in dels:
        out.append(f"dn: uid={u},{gen_ldif.PEOPLE}\nchangetype: delete\n")
        exp["deleted"].add(u)
    for i in range(20):
        u = f"new.{i}"
        out.append(
            f"dn: uid={u},{gen_ldif.PEOPLE}\nchangetype: add\nobjectClass: inetOrgPerson\n"
            f"uid: {u}\ncn: New Person {i % 5}\nsn: Person\n"
            f"description: added over LDAP {i}\n"
        )
        exp["added"].append(u)
    for u in ren:
        nu = u.replace("user.", "moved.")
        out.append(
            f"dn: uid={u},{gen_ldif.PEOPLE}\nchangetype: modrdn\nnewrdn: uid={nu}\n"
            f"deleteoldrdn: 1\n"
        )
        exp["renamed"][u] = nu
    return "\n".join(out), exp


def search_plan(n, seed, people):
    """[(name, base, filter, attrs)], seeded: uid, cn, entryUUID equality (the indexes),
    an AND, and an objectClass count."""
    r = random.Random(seed * 104729 + 3)
    uids = sorted(people)
    plan = []
    for u in r.sample(uids, 150):
        plan.append(("uid", gen_ldif.PEOPLE, f"(uid={u})", ["uid", "cn", "mail"]))
    for u in r.sample(uids, 40):
        plan.append(("cn", gen_ldif.PEOPLE, f"(cn={people[u]['cn']})", ["uid"]))
    for u in r.sample(uids, 40):
        plan.append(("uuid", gen_ldif.SUFFIX, f"(entryUUID={people[u]['entryUUID']})", ["1.1"]))
    for u in r.sample(uids, 20):
        plan.append(
            (
                "and",
                gen_ldif.SUFFIX,
                f"(&(objectClass=person)(cn={people[u]['cn']})(uid={u}))",
                ["uid"],
            )
        )
    plan.append(("count", gen_ldif.SUFFIX, "(objectClass=inetOrgPerson)", ["1.1"]))
    plan.append(("renamed", gen_ldif.PEOPLE, "(|(uid=moved.*)(uid=new.*))", ["uid", "cn"]))
    return plan


def ldapsearch(port, base, flt, attrs, timeout=60, scope="sub"):
    cmd = [
        tool("ldapsearch"),
        "-x",
        "-LLL",
        "-o",
        "ldif-wrap=no",
        "-H",
        f"ldap://127.0.0.1:{port}/",
        "-s",
        scope,
        "-b",
        base,
        flt,
        *attrs,
    ]
    r = compatlib.run(cmd, timeout=timeout)
    return r.returncode, r.stdout


def normalise_slapcat(text, ldif_values):
    """Replace run-time values of RUNTIME_ATTRS (not from our LDIF) by a placeholder."""
    out = []
    for line in text.splitlines():
        k, sep, v = line.partition(": ")
        if sep and k in RUNTIME_ATTRS and v not in ldif_values:
            line = f"{k}: <set by the server at run time>"
        out.append(line)
    return "\n".join(out) + "\n"


def stop(proc, timeout=15):
    return lab_slapd.interrupt(proc, timeout)


def run_scenario(impl, n=10000, seed=1, workdir=None, keep=False):
    """impl: 'stock' (back-mdb's own LMDB 0.9.29) or 'ours' (LD_PRELOAD of our library).
    Returns a dict of everything the tests compare."""
    d = workdir or tempfile.mkdtemp(prefix=f"slapd-{impl}-")
    res = {"impl": impl, "dir": d, "steps": [], "times": {}}
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if impl == "ours":
        env["LD_PRELOAD"] = os.path.realpath(compatlib.OUR_LIB)
    expect_lib = compatlib.OUR_LIB if impl == "ours" else os.path.realpath(BACK_MDB)
    dbg = dict(env, LD_DEBUG="bindings")
    proc = None
    t_all = time.monotonic()
    try:
        conf = write_conf(d)
        ldif = os.path.join(d, "in.ldif")
        with open(ldif, "w") as f:
            gen_ldif.write(f, n, seed)
        people = gen_ldif.people(n, seed)
        ldif_values = set()
        with open(ldif) as f:
            for line in f:
                k, sep, v = line.rstrip("\n").partition(": ")
                if sep and k in RUNTIME_ATTRS:
                    ldif_values.add(v)

        t0 = time.monotonic()
        r = compatlib.run(
            [tool("slapadd"), "-q", "-f", conf, "-l", ldif],
            env=dict(dbg, LD_DEBUG_OUTPUT=os.path.join(d, "bind-slapadd")),
            timeout=120,
        )
        res["times"]["slapadd"] = time.monotonic() - t0
        res["slapadd_rc"] = r.returncode
        res["slapadd_err"] = r.stderr[-2000:]
        if r.returncode != 0:
            return res

        port = free_port()
        res["port"] = port
        log = open(os.path.join(d, "slapd.log"), "w")
        proc = subprocess.Popen(
            [tool("slapd"), "-f", conf, "-h", f"ldap://127.0.0.1:{port}/", "-d", "0"],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(dbg, LD_DEBUG_OUTPUT=os.path.join(d, "bind-slapd")),
        )
        t0 = time.monotonic()
        ready = False
        while time.monotonic() - t0 < 30 and proc.poll() is None:
            rc, _ = ldapsearch(port, "", "(objectClass=*)", ["1.1"], timeout=10, scope="base")
            if rc == 0:
                ready = True
                break
            time.sleep(0.2)
        res["times"]["slapd_start"] = time.monotonic() - t0
        res["slapd_ready"] = ready
        if not ready:
            stop(proc)
            log.close()
            res["slapd_log"] = open(os.path.join(d, "slapd.log")).read()[-3000:]
            return res

        plan = search_plan(n, seed, people)
        t0 = time.monotonic()
        res["search_before"] = [
            (name, flt) + ldapsearch(port, base, flt, attrs) for name, base, flt, attrs in plan
        ]
        res["times"]["searches_before"] = time.monotonic() - t0

        changes, exp = make_changes(n, seed, people)
        res["expect"] = exp
        with open(os.path.join(d, "changes.ldif"), "w") as f:
            f.write(changes)
        t0 = time.monotonic()
        r = compatlib.run(
            [
                tool("ldapmodify"),
                "-x",
                "-H",
                f"ldap://127.0.0.1:{port}/",
                "-D",
                ROOTDN,
                "-w",
                ROOTPW,
                "-f",
                os.path.join(d, "changes.ldif"),
            ],
            timeout=120,
        )
        res["times"]["ldapmodify"] = time.monotonic() - t0
        res["modify_rc"], res["modify_out"] = r.returncode, r.stdout + r.stderr

        t0 = time.monotonic()
        res["search_after"] = [
            (name, flt) + ldapsearch(port, base, flt, attrs) for name, base, flt, attrs in plan
        ]
        res["times"]["searches_after"] = time.monotonic() - t0
        res["slapd_exit"] = stop(proc)
        proc = None
        log.close()

        t0 = time.monotonic()
        out = os.path.join(d, "out.ldif")
        r = compatlib.run(
            [tool("slapcat"), "-f", conf, "-l", out],
            env=dict(dbg, LD_DEBUG_OUTPUT=os.path.join(d, "bind-slapcat")),
            timeout=120,
        )
        res["times"]["slapcat"] = time.monotonic() - t0
        res["slapcat_rc"] = r.returncode
        with open(out) as f:
            raw = f.read()
        res["slapcat_raw"] = raw
        res["slapcat"] = normalise_slapcat(raw, ldif_values)

        res["file_problems"] = compatlib.check_env_files(os.path.join(d, "db"))
        called = symbol_report(compatlib.OUR_LIB if impl == "ours" else compatlib.SYSTEM_LIB)[
            "called_api"
        ]
        res["binding_problems"] = {}
        for prog in ("slapadd", "slapd", "slapcat"):
            b = read_bindings(os.path.join(d, f"bind-{prog}"))
            res["binding_problems"][prog] = check_bindings(b, called, expect_lib)
        return res
    finally:
        if proc is not None:
            stop(proc)
        res["times"]["total"] = time.monotonic() - t_all
        if not keep and not workdir:
            # the LD_DEBUG files are large; the rest is small, but nothing is kept
            shutil.rmtree(d, ignore_errors=True)
