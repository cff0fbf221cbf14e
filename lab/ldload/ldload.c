/* ldload.c -- the lab's compiled LDAP load client: SearchRate, ModRate, or both at once.
 *
 * Owns: LDAPv3 requests encoded as BER by hand (bind, search, modify), one TCP connection
 * to 127.0.0.1 per thread with a fixed number of requests in flight (a closed loop), and
 * the per-kind counts, latency histogram and per-interval series of the measured window.
 * Built by the lab at run time (lab/fastclient.py); speaks only what slapd needs here, so
 * that the client, not slapd, is never what limits the rate.
 *
 * Invariants:
 * - Every loop is bounded in time: no request is sent after the window closes, the
 *   outstanding ones are drained within --grace seconds, and what is still unanswered then
 *   is counted as errors (never waited for).
 * - Modify threads own disjoint entries (entry x belongs to thread x mod modify-threads),
 *   and a thread never sends a modify for an entry that already has one in flight; so the
 *   modifies of one entry form a sequence and its last acknowledged value is decidable.
 *   An entry whose last modify was never answered is left out of --acked.
 * - A response is matched to its request by message id; an id we did not send, or bytes
 *   that are not an LDAPMessage, end that connection and count its outstanding requests
 *   as errors.
 *
 * Output: one JSON object per line: one per kind ("search", "modify"), then "process"
 * (the whole client's CPU in the window).  Exit status 0 when every thread connected and
 * ran, 1 when one could not (the JSON still says how many), 2 on bad arguments.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { SEARCH, MODIFY, NKINDS };
static const char *const KIND_NAME[NKINDS] = {"search", "modify"};

/* protocolOp tags (APPLICATION class, constructed) */
#define OP_BIND_REQ 0x60
#define OP_BIND_RESP 0x61
#define OP_SEARCH_REQ 0x63
#define OP_SEARCH_ENTRY 0x64
#define OP_SEARCH_DONE 0x65
#define OP_SEARCH_REF 0x73
#define OP_MODIFY_REQ 0x66
#define OP_MODIFY_RESP 0x67

#define VALUE_LEN 80
#define MAX_DEPTH 256
#define MAX_THREADS 256
#define REQ_MAX 1024 /* one encoded request; DNs and values here are far shorter */

/* Latency histogram: exact microseconds below 1024, then 512 sub-buckets per power of two
 * (under 0.2% relative error), up to 2^40 us. */
#define HIST_LINEAR 1024
#define HIST_SUB 512
#define HIST_EXP 31
#define HIST_SIZE (HIST_LINEAR + HIST_EXP * HIST_SUB)

static struct {
	int port;
	long entries;
	int threads[NKINDS];
	int depth[NKINDS];
	double warmup, duration, interval, grace;
	double start_at; /* the common start (CLOCK_MONOTONIC s), or 0: once connected */
	uint64_t seed;
	const char *base, *bind_dn, *bind_pw, *acked_path, *attr;
} opt = {
    .port = 0,
    .entries = 0,
    .warmup = 1.0,
    .duration = 3.0,
    .interval = 1.0,
    .grace = 10.0,
    .seed = 1,
    .base = "ou=People,dc=example,dc=com",
    .bind_dn = "cn=admin,dc=example,dc=com",
    .bind_pw = "secret",
    .acked_path = NULL,
    .attr = "description",
};

enum { NONE, ACKED, UNDECIDED };

struct slot {
	int used;
	int32_t msgid;
	double sent;
	long entry;
	uint64_t vkey; /* the modify's value is value_of(vkey) */
};

struct thread {
	pthread_t tid;
	int kind, index, depth;
	uint64_t rng;
	/* results */
	long ops, completed, errors, entries_seen, unanswered, connect_failed, protocol_errors;
	long recvs, sends; /* system calls: most of this client's CPU is in them */
	double lat_sum_us;
	uint32_t *hist;
	long *buckets;
	double cpu0, cpu1; /* this thread's CPU at the window's start and end */
	int cpu_marks;
	char failure[200];
	/* modify, per owned entry: the value key of its last acknowledged modify, whether there
	 * is one (or its last modify was left unanswered), and whether one is in flight */
	uint64_t *acked;
	unsigned char *state;
	unsigned char *busy;
	long owned;
};

static double t0_global; /* the common start, CLOCK_MONOTONIC seconds */
static pthread_barrier_t connected, started;
static int nbuckets;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double clock_s(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* A value is a function of its key alone, so --acked can be written from the keys. */
static void value_of(uint64_t key, char out[VALUE_LEN])
{
	static const char chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	uint64_t s = key, r = 0;
	for (int i = 0; i < VALUE_LEN; i++) {
		if (i % 8 == 0)
			r = splitmix(&s);
		out[i] = chars[(r & 0xff) % 62];
		r >>= 8;
	}
}

static int hist_index(double us)
{
	uint64_t v = us <= 0 ? 0 : (uint64_t)us;
	if (v < HIST_LINEAR)
		return (int)v;
	int e = 63 - __builtin_clzll(v); /* >= 10 */
	int shift = e - 9;               /* v >> shift is in [512, 1024) */
	int i = HIST_LINEAR + (e - 10) * HIST_SUB + (int)((v >> shift) - HIST_SUB);
	return i < HIST_SIZE ? i : HIST_SIZE - 1;
}

static double hist_value(int i)
{
	if (i < HIST_LINEAR)
		return i + 0.5;
	int e = (i - HIST_LINEAR) / HIST_SUB + 10, sub = (i - HIST_LINEAR) % HIST_SUB + HIST_SUB;
	int shift = e - 9;
	return ((double)sub + 0.5) * (double)(1ull << shift);
}

/* ---------------------------------------------------------------- BER encoding */

struct buf {
	unsigned char *p;
	size_t len, cap;
};

static void put(struct buf *b, const void *src, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		unsigned char *p = realloc(b->p, cap);
		if (!p) {
			perror("ldload: realloc");
			exit(3);
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

/* Encoders write backwards from the end of a REQ_MAX scratch area: a TLV's length is
 * known once its body is written, so nothing is moved. */
struct rev {
	unsigned char a[REQ_MAX];
	size_t pos; /* first used byte */
};

static size_t rlen(const struct rev *r) { return REQ_MAX - r->pos; }

static void rbytes(struct rev *r, const void *p, size_t n)
{
	r->pos -= n;
	memcpy(r->a + r->pos, p, n);
}

static void rhead(struct rev *r, unsigned char tag, size_t body)
{
	unsigned char h[6];
	int n = 0;
	h[n++] = tag;
	if (body < 0x80) {
		h[n++] = (unsigned char)body;
	} else if (body < 0x100) {
		h[n++] = 0x81;
		h[n++] = (unsigned char)body;
	} else {
		h[n++] = 0x82;
		h[n++] = (unsigned char)(body >> 8);
		h[n++] = (unsigned char)body;
	}
	rbytes(r, h, (size_t)n);
}

static void roctets(struct rev *r, unsigned char tag, const char *s, size_t n)
{
	rbytes(r, s, n);
	rhead(r, tag, n);
}

static void rinteger(struct rev *r, unsigned char tag, int64_t v)
{
	unsigned char b[9];
	int n = 0;
	/* minimal two's complement, most significant byte first */
	do {
		b[8 - n++] = (unsigned char)(v & 0xff);
		v >>= 8;
	} while (!((v == 0 && !(b[9 - n] & 0x80)) || (v == -1 && (b[9 - n] & 0x80))));
	rbytes(r, b + 9 - n, (size_t)n);
	rhead(r, tag, (size_t)n);
}

/* close a constructed TLV whose body began `mark` bytes from the end */
static void rclose(struct rev *r, unsigned char tag, size_t mark) { rhead(r, tag, rlen(r) - mark); }

static void message(struct buf *out, struct rev *r, int32_t msgid)
{
	rinteger(r, 0x02, msgid);
	rhead(r, 0x30, rlen(r));
	put(out, r->a + r->pos, rlen(r));
}

static void enc_bind(struct buf *out, int32_t msgid, const char *dn, const char *pw)
{
	struct rev r = {.pos = REQ_MAX};
	roctets(&r, 0x80, pw, strlen(pw));
	roctets(&r, 0x04, dn, strlen(dn));
	rinteger(&r, 0x02, 3);
	rhead(&r, OP_BIND_REQ, rlen(&r));
	message(out, &r, msgid);
}

static void enc_search(struct buf *out, int32_t msgid, long x)
{
	struct rev r = {.pos = REQ_MAX};
	char uid[32];
	int n = snprintf(uid, sizeof uid, "user.%ld", x);
	rhead(&r, 0x30, 0); /* attributes: none named, so every user attribute */
	size_t m = rlen(&r);
	roctets(&r, 0x04, uid, (size_t)n);
	roctets(&r, 0x04, "uid", 3);
	rclose(&r, 0xA3, m); /* equalityMatch */
	rbytes(&r, "\x01\x01\x00", 3); /* typesOnly FALSE */
	rinteger(&r, 0x02, 0);             /* timeLimit */
	rinteger(&r, 0x02, 0);             /* sizeLimit */
	rinteger(&r, 0x0A, 0);             /* derefAliases never */
	rinteger(&r, 0x0A, 2);             /* scope subtree */
	roctets(&r, 0x04, opt.base, strlen(opt.base));
	rhead(&r, OP_SEARCH_REQ, rlen(&r));
	message(out, &r, msgid);
}

static void enc_modify(struct buf *out, int32_t msgid, long x, const char value[VALUE_LEN])
{
	struct rev r = {.pos = REQ_MAX};
	char dn[512];
	int n = snprintf(dn, sizeof dn, "uid=user.%ld,%s", x, opt.base);
	roctets(&r, 0x04, value, VALUE_LEN);
	rclose(&r, 0x31, 0); /* vals: SET OF one value */
	roctets(&r, 0x04, opt.attr, strlen(opt.attr));
	rclose(&r, 0x30, 0); /* PartialAttribute */
	rinteger(&r, 0x0A, 2);   /* operation: replace */
	rclose(&r, 0x30, 0); /* change */
	rclose(&r, 0x30, 0); /* changes: SEQUENCE OF one change */
	roctets(&r, 0x04, dn, (size_t)n);
	rclose(&r, OP_MODIFY_REQ, 0);
	message(out, &r, msgid);
}

/* ---------------------------------------------------------------- BER decoding */

/* Length at p (at most end): the length, and *hdr the bytes it took; -1 when incomplete,
 * -2 when malformed. */
static long ber_len(const unsigned char *p, const unsigned char *end, int *hdr)
{
	if (p >= end)
		return -1;
	if (*p < 0x80) {
		*hdr = 1;
		return *p;
	}
	int n = *p & 0x7f;
	if (n == 0 || n > 4)
		return -2;
	if (p + 1 + n > end)
		return -1;
	long v = 0;
	for (int i = 1; i <= n; i++)
		v = (v << 8) | p[i];
	*hdr = 1 + n;
	return v;
}

struct msg {
	int32_t msgid;
	int op;
	int rc; /* the resultCode of a response that has one, else 0 */
};

/* Parse one whole LDAPMessage at p: its size, 0 when incomplete, -1 when malformed. */
static long parse_msg(const unsigned char *p, const unsigned char *end, struct msg *m)
{
	int h;
	if (p >= end)
		return 0;
	if (p[0] != 0x30)
		return -1;
	long len = ber_len(p + 1, end, &h);
	if (len == -1)
		return 0;
	if (len < 0)
		return -1;
	const unsigned char *q = p + 1 + h, *mend = q + len;
	if (mend > end)
		return 0;
	if (q + 2 > mend || q[0] != 0x02 || q[1] < 1 || q[1] > 4 || q + 2 + q[1] > mend)
		return -1;
	int32_t id = 0;
	for (int i = 0; i < q[1]; i++)
		id = (int32_t)(((uint32_t)id << 8) | q[2 + i]);
	q += 2 + q[1];
	if (q >= mend)
		return -1;
	m->msgid = id;
	m->op = q[0];
	m->rc = 0;
	long olen = ber_len(q + 1, mend, &h);
	if (olen < 0)
		return -1;
	const unsigned char *b = q + 1 + h;
	if (m->op == OP_SEARCH_DONE || m->op == OP_MODIFY_RESP || m->op == OP_BIND_RESP) {
		if (b + 3 > mend || b[0] != 0x0A || b[1] != 1)
			return -1;
		m->rc = b[2];
	}
	return mend - p;
}

/* ---------------------------------------------------------------- one connection */

struct conn {
	int fd;
	unsigned char *in;
	size_t inlen, incap;
	struct buf out;
};

static int conn_open(struct conn *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof *c);
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (c->fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)opt.port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* both directions bounded: a send blocks at most 10 s, a receive 50 ms, so the load
	 * loop looks at the clock at least every 50 ms */
	struct timeval tv = {.tv_sec = 10}, rtv = {.tv_usec = 50000};
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &rtv, sizeof rtv);
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		snprintf(err, errlen, "connect 127.0.0.1:%d: %s", opt.port, strerror(errno));
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	c->incap = 1 << 16;
	c->in = malloc(c->incap);
	if (!c->in) {
		perror("ldload: malloc");
		exit(3);
	}
	return 0;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->in);
	free(c->out.p);
	c->in = NULL;
	c->out.p = NULL;
}

/* Send everything queued in c->out (bounded by SO_SNDTIMEO): 0, or -1. */
static int conn_flush(struct conn *c)
{
	size_t off = 0;
	while (off < c->out.len) {
		ssize_t n = send(c->fd, c->out.p + off, c->out.len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	c->out.len = 0;
	return 0;
}

/* Read what arrives within the socket's receive timeout (one recv: a poll first would
 * double the system calls, which are most of this client's CPU): bytes read, 0 on
 * timeout, -1 when the connection closed or failed. */
static long conn_fill(struct conn *c)
{
	if (c->incap - c->inlen < 16384) {
		c->incap *= 2;
		unsigned char *p = realloc(c->in, c->incap);
		if (!p) {
			perror("ldload: realloc");
			exit(3);
		}
		c->in = p;
	}
	ssize_t n = recv(c->fd, c->in + c->inlen, c->incap - c->inlen, 0);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	if (n <= 0)
		return -1;
	c->inlen += (size_t)n;
	return n;
}

static void consume(struct conn *c, size_t n)
{
	memmove(c->in, c->in + n, c->inlen - n);
	c->inlen -= n;
}

/* A simple bind, answered before the load starts (bounded by the grace period). */
static int bind_simple(struct conn *c, char *err, size_t errlen)
{
	enc_bind(&c->out, 1, opt.bind_dn, opt.bind_pw);
	if (conn_flush(c) < 0) {
		snprintf(err, errlen, "bind: send failed");
		return -1;
	}
	double stop = now_s() + opt.grace;
	while (now_s() < stop) {
		struct msg m;
		long n = parse_msg(c->in, c->in + c->inlen, &m);
		if (n < 0) {
			snprintf(err, errlen, "bind: malformed response");
			return -1;
		}
		if (n > 0) {
			consume(c, (size_t)n);
			if (m.op != OP_BIND_RESP || m.msgid != 1) {
				snprintf(err, errlen, "bind: unexpected op 0x%02x", m.op);
				return -1;
			}
			if (m.rc != 0) {
				snprintf(err, errlen, "bind as %s: result code %d", opt.bind_dn, m.rc);
				return -1;
			}
			return 0;
		}
		if (conn_fill(c) < 0) {
			snprintf(err, errlen, "bind: connection closed");
			return -1;
		}
	}
	snprintf(err, errlen, "bind: no answer in %.0f s", opt.grace);
	return -1;
}

/* ---------------------------------------------------------------- the load loop */

static int modify_threads(void) { return opt.threads[MODIFY]; }

/* An entry of this modify thread's share with no modify in flight, or -1 (all tried). */
static long pick_modify_entry(struct thread *t)
{
	for (int tries = 0; tries < 64; tries++) {
		long k = (long)(splitmix(&t->rng) % (uint64_t)t->owned);
		if (!t->busy[k])
			return k;
	}
	for (long k = 0; k < t->owned; k++) /* small shares: look at every entry */
		if (!t->busy[k])
			return k;
	return -1;
}

static int send_one(struct thread *t, struct conn *c, struct slot *s, int32_t msgid)
{
	s->msgid = msgid;
	if (t->kind == SEARCH) {
		s->entry = (long)(splitmix(&t->rng) % (uint64_t)opt.entries);
		enc_search(&c->out, msgid, s->entry);
	} else {
		long k = pick_modify_entry(t);
		if (k < 0)
			return 0;
		char value[VALUE_LEN];
		s->entry = k;
		s->vkey = splitmix(&t->rng);
		value_of(s->vkey, value);
		t->busy[k] = 1;
		enc_modify(&c->out, msgid, t->index + k * modify_threads(), value);
	}
	s->used = 1;
	s->sent = now_s();
	return 1;
}

static void mark_cpu(struct thread *t, double now, double win_start, double win_end)
{
	if (t->cpu_marks == 0 && now >= win_start) {
		t->cpu0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
		t->cpu_marks = 1;
	}
	if (t->cpu_marks == 1 && now >= win_end) {
		t->cpu1 = clock_s(CLOCK_THREAD_CPUTIME_ID);
		t->cpu_marks = 2;
	}
}

static void *run_thread(void *arg)
{
	struct thread *t = arg;
	struct conn c;
	struct slot slots[MAX_DEPTH];
	int ok = conn_open(&c, t->failure, sizeof t->failure) == 0;
	if (ok && t->kind == MODIFY && bind_simple(&c, t->failure, sizeof t->failure) < 0)
		ok = 0;
	if (!ok)
		t->connect_failed = 1;
	pthread_barrier_wait(&connected);
	pthread_barrier_wait(&started); /* t0_global is set between the two */
	if (!ok) {
		if (c.fd >= 0)
			conn_close(&c);
		return NULL;
	}
	double t0 = t0_global, win_start = t0 + opt.warmup, win_end = win_start + opt.duration;
	double hard_stop = win_end + opt.grace;
	memset(slots, 0, sizeof slots);
	int32_t next_id = 2;
	int pending = 0;
	for (int i = 0; i < t->depth; i++)
		pending += send_one(t, &c, &slots[i], next_id++);
	int dead = conn_flush(&c) < 0;
	if (dead)
		snprintf(t->failure, sizeof t->failure, "send failed");
	while (pending > 0 && !dead) {
		double now = now_s();
		mark_cpu(t, now, win_start, win_end);
		if (now > hard_stop)
			break;
		long got = conn_fill(&c);
		t->recvs++;
		if (got < 0) {
			snprintf(t->failure, sizeof t->failure, "connection closed by the server");
			dead = 1;
			break;
		}
		size_t off = 0;
		now = now_s();
		for (;;) {
			struct msg m;
			long n = parse_msg(c.in + off, c.in + c.inlen, &m);
			if (n == 0)
				break;
			if (n < 0) {
				snprintf(t->failure, sizeof t->failure, "malformed LDAPMessage");
				t->protocol_errors++;
				dead = 1;
				break;
			}
			off += (size_t)n;
			if (m.op == OP_SEARCH_ENTRY) {
				t->entries_seen++;
				continue;
			}
			if (m.op == OP_SEARCH_REF)
				continue;
			int want = t->kind == SEARCH ? OP_SEARCH_DONE : OP_MODIFY_RESP;
			struct slot *s = NULL;
			for (int i = 0; i < t->depth; i++)
				if (slots[i].used && slots[i].msgid == m.msgid)
					s = &slots[i];
			if (!s || m.op != want) {
				/* a Notice of Disconnection (id 0) or an answer to nothing we sent */
				snprintf(t->failure, sizeof t->failure,
				         "unexpected op 0x%02x for message id %d (result code %d)", m.op,
				         (int)m.msgid, m.rc);
				t->protocol_errors++;
				dead = 1;
				break;
			}
			s->used = 0;
			pending--;
			t->completed++;
			if (t->kind == MODIFY) {
				t->busy[s->entry] = 0;
				if (m.rc == 0) {
					t->acked[s->entry] = s->vkey;
					t->state[s->entry] = ACKED;
				}
			}
			if (now >= win_start && now < win_end) {
				double us = (now - s->sent) * 1e6;
				t->ops++;
				t->lat_sum_us += us;
				t->hist[hist_index(us)]++;
			}
			if (m.rc != 0)
				t->errors++;
			int b = (int)((now - t0) / opt.interval);
			if (b >= 0 && b < nbuckets)
				t->buckets[b]++;
			if (now < win_end)
				pending += send_one(t, &c, s, next_id++);
		}
		if (off)
			consume(&c, off);
		if (!dead && c.out.len && (t->sends++, conn_flush(&c) < 0)) {
			snprintf(t->failure, sizeof t->failure, "send failed");
			dead = 1;
		}
	}
	mark_cpu(t, now_s(), win_start, win_end);
	if (t->cpu_marks == 1) {
		t->cpu1 = clock_s(CLOCK_THREAD_CPUTIME_ID);
		t->cpu_marks = 2;
	}
	t->unanswered = pending;
	t->errors += pending;
	if (pending && !t->failure[0])
		snprintf(t->failure, sizeof t->failure, "%d requests unanswered after %.0f s of grace",
		         pending, opt.grace);
	for (int i = 0; i < t->depth; i++)
		if (slots[i].used && t->kind == MODIFY)
			t->state[slots[i].entry] = UNDECIDED; /* it may or may not have committed */
	conn_close(&c);
	return NULL;
}

/* ---------------------------------------------------------------- output */

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static double pct(const uint64_t *hist, long total, double p)
{
	if (total == 0)
		return 0.0;
	long rank = (long)(p * (double)total); /* the same rank rule as lab/load.py */
	if (rank >= total)
		rank = total - 1;
	long seen = 0;
	for (int i = 0; i < HIST_SIZE; i++) {
		seen += (long)hist[i];
		if (seen > rank)
			return hist_value(i) / 1000.0;
	}
	return hist_value(HIST_SIZE - 1) / 1000.0;
}

static void report_kind(int kind, struct thread *ts, int nt)
{
	long recvs = 0, sends = 0;
	long ops = 0, completed = 0, errors = 0, entries = 0, unanswered = 0, failed = 0, proto = 0;
	double lat = 0, cpu = 0;
	uint64_t *hist = calloc(HIST_SIZE, sizeof *hist);
	long *buckets = calloc((size_t)nbuckets, sizeof *buckets);
	const char *failure = "";
	if (!hist || !buckets) {
		perror("ldload: calloc");
		exit(3);
	}
	for (int i = 0; i < nt; i++) {
		struct thread *t = &ts[i];
		if (t->kind != kind)
			continue;
		ops += t->ops;
		completed += t->completed;
		recvs += t->recvs;
		sends += t->sends;
		errors += t->errors + t->connect_failed;
		entries += t->entries_seen;
		unanswered += t->unanswered;
		failed += t->connect_failed;
		proto += t->protocol_errors;
		lat += t->lat_sum_us;
		if (t->cpu_marks == 2)
			cpu += t->cpu1 - t->cpu0;
		for (int j = 0; j < HIST_SIZE; j++)
			hist[j] += t->hist[j];
		for (int j = 0; j < nbuckets; j++)
			buckets[j] += t->buckets[j];
		if (!failure[0] && t->failure[0])
			failure = t->failure;
	}
	printf("{\"kind\": \"%s\", \"threads\": %d, \"depth\": %d, \"ops\": %ld, \"errors\": %ld, "
	       "\"ops_s\": %.3f, \"avg_ms\": %.6f, \"p50_ms\": %.6f, \"p99_ms\": %.6f, "
	       "\"completed\": %ld, \"entries_returned\": %ld, \"unanswered\": %ld, \"connect_failures\": %ld, "
	       "\"protocol_errors\": %ld, \"recv_calls\": %ld, \"send_calls\": %ld, \"cpu_s\": %.6f, \"interval_s\": %g, \"intervals\": [",
	       KIND_NAME[kind], opt.threads[kind], opt.depth[kind], ops, errors,
	       (double)ops / opt.duration, ops ? lat / (double)ops / 1000.0 : 0.0,
	       pct(hist, ops, 0.50), pct(hist, ops, 0.99), completed, entries, unanswered, failed, proto, recvs, sends, cpu,
	       opt.interval);
	for (int j = 0; j < nbuckets; j++)
		printf("%s%ld", j ? ", " : "", buckets[j]);
	printf("], \"failure\": ");
	json_str(failure);
	printf("}\n");
	free(hist);
	free(buckets);
}

static int write_acked(struct thread *ts, int nt)
{
	FILE *f = fopen(opt.acked_path, "w");
	if (!f) {
		fprintf(stderr, "ldload: %s: %s\n", opt.acked_path, strerror(errno));
		return -1;
	}
	char value[VALUE_LEN];
	for (int i = 0; i < nt; i++) {
		struct thread *t = &ts[i];
		if (t->kind != MODIFY || !t->acked)
			continue;
		for (long k = 0; k < t->owned; k++) {
			if (t->state[k] != ACKED)
				continue;
			value_of(t->acked[k], value);
			fprintf(f, "uid=user.%ld,%s\t%.*s\n", t->index + k * modify_threads(), opt.base,
			        VALUE_LEN, value);
		}
	}
	return fclose(f) == 0 ? 0 : -1;
}

/* ---------------------------------------------------------------- main */

static void usage(void)
{
	fprintf(stderr,
	        "usage: ldload --port P --entries N [--search THREADSxDEPTH] [--modify THREADSxDEPTH]\n"
	        "              [--warmup S] [--duration S] [--interval S] [--grace S] [--seed N]\n"
	        "              [--start-at MONOTONIC_S]\n"
	        "              [--base DN] [--bind-dn DN] [--bind-pw PW] [--acked FILE]\n");
	exit(2);
}

static int parse_shape(const char *s, int *threads, int *depth)
{
	char *end;
	long a = strtol(s, &end, 10);
	if (*end != 'x')
		return -1;
	long b = strtol(end + 1, &end, 10);
	if (*end || a < 0 || a > MAX_THREADS || b < 1 || b > MAX_DEPTH)
		return -1;
	*threads = (int)a;
	*depth = (int)b;
	return 0;
}

static double parse_seconds(const char *s, double lo, double hi)
{
	char *end;
	double v = strtod(s, &end);
	if (*end || !(v >= lo && v <= hi))
		usage();
	return v;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			usage();
		i++;
		char *end;
		if (!strcmp(a, "--port")) {
			long p = strtol(v, &end, 10);
			if (*end || p < 1 || p > 65535)
				usage();
			opt.port = (int)p;
		} else if (!strcmp(a, "--entries")) {
			opt.entries = strtol(v, &end, 10);
			if (*end || opt.entries < 1)
				usage();
		} else if (!strcmp(a, "--search") || !strcmp(a, "--modify")) {
			int k = !strcmp(a, "--search") ? SEARCH : MODIFY;
			if (parse_shape(v, &opt.threads[k], &opt.depth[k]) < 0)
				usage();
		} else if (!strcmp(a, "--warmup")) {
			opt.warmup = parse_seconds(v, 0, 3600);
		} else if (!strcmp(a, "--duration")) {
			opt.duration = parse_seconds(v, 0.01, 36000);
		} else if (!strcmp(a, "--interval")) {
			opt.interval = parse_seconds(v, 0.01, 3600);
		} else if (!strcmp(a, "--start-at")) {
			opt.start_at = parse_seconds(v, 0, 1e12);
		} else if (!strcmp(a, "--grace")) {
			opt.grace = parse_seconds(v, 0.1, 3600);
		} else if (!strcmp(a, "--seed")) {
			opt.seed = strtoull(v, &end, 10);
			if (*end)
				usage();
		} else if (!strcmp(a, "--base")) {
			opt.base = v;
		} else if (!strcmp(a, "--bind-dn")) {
			opt.bind_dn = v;
		} else if (!strcmp(a, "--bind-pw")) {
			opt.bind_pw = v;
		} else if (!strcmp(a, "--acked")) {
			opt.acked_path = v;
		} else {
			usage();
		}
	}
	int nt = opt.threads[SEARCH] + opt.threads[MODIFY];
	if (!opt.port || !opt.entries || nt == 0 || strlen(opt.base) > 400)
		usage();
	if (opt.threads[MODIFY] > opt.entries) {
		fprintf(stderr, "ldload: more modify threads than entries\n");
		return 2;
	}
	double span = opt.warmup + opt.duration;
	nbuckets = (int)lround(span / opt.interval);
	if (nbuckets < 1)
		nbuckets = 1;

	struct thread *ts = calloc((size_t)nt, sizeof *ts);
	if (!ts) {
		perror("ldload: calloc");
		return 3;
	}
	uint64_t seeder = opt.seed * 0x100000001B3ull + 0x5EED;
	for (int i = 0, k = 0; k < NKINDS; k++) {
		for (int j = 0; j < opt.threads[k]; j++, i++) {
			struct thread *t = &ts[i];
			t->kind = k;
			t->index = j;
			t->depth = opt.depth[k];
			t->rng = splitmix(&seeder);
			t->hist = calloc(HIST_SIZE, sizeof *t->hist);
			t->buckets = calloc((size_t)nbuckets, sizeof *t->buckets);
			if (k == MODIFY) {
				t->owned = (opt.entries - j + opt.threads[MODIFY] - 1) / opt.threads[MODIFY];
				t->acked = calloc((size_t)t->owned, sizeof *t->acked);
				t->state = calloc((size_t)t->owned, 1);
				t->busy = calloc((size_t)t->owned, 1);
				if (t->depth > t->owned)
					t->depth = (int)t->owned; /* one modify in flight per entry at most */
				if (!t->acked || !t->state || !t->busy) {
					perror("ldload: calloc");
					return 3;
				}
			}
			if (!t->hist || !t->buckets) {
				perror("ldload: calloc");
				return 3;
			}
		}
	}
	pthread_barrier_init(&connected, NULL, (unsigned)nt + 1);
	pthread_barrier_init(&started, NULL, (unsigned)nt + 1);
	for (int i = 0; i < nt; i++) {
		if (pthread_create(&ts[i].tid, NULL, run_thread, &ts[i]) != 0) {
			perror("ldload: pthread_create");
			return 3;
		}
	}
	pthread_barrier_wait(&connected);
	/* a caller measuring the server over the same window names the start (the clock is
	 * the one Python's time.monotonic() reads); a late connect starts late, never early */
	t0_global = now_s();
	if (opt.start_at > t0_global) {
		while (now_s() < opt.start_at) {
			double left = opt.start_at - now_s();
			struct timespec d = {.tv_sec = (time_t)left,
			                     .tv_nsec = (long)((left - (double)(time_t)left) * 1e9)};
			nanosleep(&d, NULL);
		}
		t0_global = opt.start_at;
	}
	pthread_barrier_wait(&started);

	/* the whole process's CPU over the window, sampled by this (sleeping) thread */
	struct timespec ts_sleep;
	double t_start = t0_global + opt.warmup, t_end = t_start + opt.duration;
	struct rusage ru0, ru1;
	double wall0, wall1;
	for (;;) {
		double left = t_start - now_s();
		if (left <= 0)
			break;
		ts_sleep.tv_sec = (time_t)left;
		ts_sleep.tv_nsec = (long)((left - (double)ts_sleep.tv_sec) * 1e9);
		nanosleep(&ts_sleep, NULL);
	}
	getrusage(RUSAGE_SELF, &ru0);
	wall0 = now_s();
	for (;;) {
		double left = t_end - now_s();
		if (left <= 0)
			break;
		ts_sleep.tv_sec = (time_t)left;
		ts_sleep.tv_nsec = (long)((left - (double)ts_sleep.tv_sec) * 1e9);
		nanosleep(&ts_sleep, NULL);
	}
	getrusage(RUSAGE_SELF, &ru1);
	wall1 = now_s();
	for (int i = 0; i < nt; i++)
		pthread_join(ts[i].tid, NULL);

	double user = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
	              (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6;
	double sys = (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
	             (double)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	if (cores < 1)
		cores = 1;
	int failed = 0;
	for (int k = 0; k < NKINDS; k++)
		if (opt.threads[k])
			report_kind(k, ts, nt);
	for (int i = 0; i < nt; i++)
		failed += ts[i].connect_failed != 0;
	if (opt.acked_path && opt.threads[MODIFY] && write_acked(ts, nt) < 0)
		failed++;
	printf("{\"kind\": \"process\", \"cpu_s\": %.6f, \"cpu_user_s\": %.6f, \"cpu_sys_s\": %.6f, "
	       "\"window_s\": %.6f, \"cores\": %ld, \"cpu_share\": %.6f, \"seed\": %llu, "
	       "\"failed_threads\": %d, \"t0\": %.6f}\n",
	       user + sys, user, sys, wall1 - wall0, cores, (user + sys) / (opt.duration * (double)cores),
	       (unsigned long long)opt.seed, failed, t0_global);
	fflush(stdout);
	for (int i = 0; i < nt; i++) {
		free(ts[i].hist);
		free(ts[i].buckets);
		free(ts[i].acked);
		free(ts[i].state);
		free(ts[i].busy);
	}
	free(ts);
	pthread_barrier_destroy(&connected);
	pthread_barrier_destroy(&started);
	return failed ? 1 : 0;
}
