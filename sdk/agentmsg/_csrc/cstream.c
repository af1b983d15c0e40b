/* agentmsg._speedups, the whole-body fast paths: the shared machinery. See cstream.h. */
#include "cstream.h"

#include <stdint.h>

#define CS_PREFIX cs_s_
#define CS_DEFINE(var, text) PyObject *cs_s_##var = NULL;
CS_STRINGS(CS_DEFINE)
#undef CS_DEFINE
PyObject *cs_dumps = NULL;

int cs_strings(void) {
    if (cs_dumps != NULL) return 0;
    CS_STRINGS(CS_STRING_INTERN)
    PyObject *orjson = PyImport_ImportModule("orjson");
    if (orjson == NULL) return -1;
    cs_dumps = PyObject_GetAttrString(orjson, "dumps");
    Py_DECREF(orjson);
    return cs_dumps == NULL ? -1 : 0;
}

/* ---- set-up ----------------------------------------------------------------------------------------- */

int cs_begin(CS *b, PyObject *provider, PyObject *prefix, PyObject *stamp, PyObject *arguments_problem) {
    memset(b, 0, sizeof(*b));
    if (cs_strings() < 0) return CS_ERR;
    if (!PyUnicode_CheckExact(provider) || !PyUnicode_CheckExact(stamp) || !PyUnicode_CheckExact(prefix) ||
        !PyUnicode_IS_ASCII(prefix) || PyUnicode_GET_LENGTH(prefix) != 22) {
        PyErr_SetString(PyExc_TypeError, "provider, prefix (22 ASCII characters) and stamp are str");
        return CS_ERR;
    }
    memcpy(b->prefix, PyUnicode_1BYTE_DATA(prefix), 22);
    b->events = PyList_New(0);
    if (b->events == NULL) return CS_ERR;
    b->provider = Py_NewRef(provider);
    b->stamp = Py_NewRef(stamp);
    b->arguments_problem = Py_NewRef(arguments_problem);
    return CS_OK;
}

void cs_clear(CS *b) {
    Py_CLEAR(b->events);
    Py_CLEAR(b->provider);
    Py_CLEAR(b->stamp);
    Py_CLEAR(b->arguments_problem);
    Py_CLEAR(b->response_id);
    Py_CLEAR(b->model);
    Py_CLEAR(b->reply_id);
    for (int i = 0; i < b->nblocks; i++) {
        Py_CLEAR(b->blocks[i].slot);
        Py_CLEAR(b->blocks[i].block_id);
        Py_CLEAR(b->blocks[i].whole_sig);
    }
    b->nblocks = 0;
    for (Py_ssize_t i = 0; i < b->ncalls; i++) {
        CSCall *c = &b->calls[i];
        Py_CLEAR(c->key);
        Py_CLEAR(c->id);
        Py_CLEAR(c->name);
        Py_CLEAR(c->text);
        Py_CLEAR(c->late_sig);
        Py_CLEAR(c->input);
    }
    PyMem_Free(b->calls);
    b->calls = NULL;
    b->ncalls = b->cap = 0;
    Py_CLEAR(b->usage);
    Py_CLEAR(b->finish);
    Py_CLEAR(b->held);
    Py_CLEAR(b->said);
}

/* ---- events ----------------------------------------------------------------------------------------- */

static const char HEXD[] = "0123456789abcdef";

PyObject *cs_event(CS *b, PyObject *type) {
    /* the id: prefix + f"{counter:010x}", as providers._builder._id_counter writes it */
    PyObject *id = PyUnicode_New(32, 127);
    if (id == NULL) return NULL;
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(id);
    memcpy(out, b->prefix, 22);
    unsigned long long n = b->counter++;
    for (int i = 31; i >= 22; i--) {
        out[i] = (Py_UCS1)HEXD[n & 15];
        n >>= 4;
    }
    PyObject *e = PyDict_New();
    if (e == NULL || PyDict_SetItem(e, CS_S(type), type) < 0 || PyDict_SetItem(e, CS_S(id), id) < 0 ||
        PyDict_SetItem(e, CS_S(createdAt), b->stamp) < 0 || PyList_Append(b->events, e) < 0) {
        Py_DECREF(id);
        Py_XDECREF(e);
        return NULL;
    }
    Py_DECREF(id);
    Py_DECREF(e); /* the list holds it */
    return e;
}

/* An event of the reply with replyId, then key/value pairs (NULL-terminated; a NULL value is left out). */
static PyObject *reply_event(CS *b, PyObject *type, ...) {
    PyObject *e = cs_event(b, type);
    if (e == NULL || PyDict_SetItem(e, CS_S(replyId), b->reply_id) < 0) return NULL;
    va_list ap;
    va_start(ap, type);
    PyObject *k;
    while ((k = va_arg(ap, PyObject *)) != NULL) {
        PyObject *v = va_arg(ap, PyObject *);
        if (v != NULL && PyDict_SetItem(e, k, v) < 0) {
            va_end(ap);
            return NULL;
        }
    }
    va_end(ap);
    return e;
}

static int custom(CS *b, PyObject *name, PyObject *value) {
    PyObject *e = cs_event(b, CS_S(CUSTOM));
    if (e == NULL || PyDict_SetItem(e, CS_S(name), name) < 0 || PyDict_SetItem(e, CS_S(value), value) < 0)
        return CS_ERR;
    return CS_OK;
}

/* StreamBuilder._say(0, name, value): held until the reply opens. */
static int say(CS *b, PyObject *name, PyObject *value) {
    if (b->opened) return custom(b, name, value);
    if (b->held == NULL && (b->held = PyList_New(0)) == NULL) return CS_ERR;
    PyObject *t = PyTuple_Pack(2, name, value);
    if (t == NULL) return CS_ERR;
    int rc = PyList_Append(b->held, t);
    Py_DECREF(t);
    return rc < 0 ? CS_ERR : CS_OK;
}

/* {"rule": rule, "message": message} */
static PyObject *rule_value(PyObject *rule, PyObject *message) {
    PyObject *v = PyDict_New();
    if (v == NULL || PyDict_SetItem(v, CS_S(rule), rule) < 0 || PyDict_SetItem(v, CS_S(message), message) < 0) {
        Py_XDECREF(v);
        return NULL;
    }
    return v;
}

/* Whether key was said (1), after marking it said (0); -1 on error. */
static int said_before(CS *b, PyObject *key) {
    if (b->said == NULL && (b->said = PySet_New(NULL)) == NULL) return -1;
    int in = PySet_Contains(b->said, key);
    if (in != 0) return in;
    return PySet_Add(b->said, key) < 0 ? -1 : 0;
}

int cs_not_kept(CS *b, PyObject *key, PyObject *message) {
    int seen = said_before(b, key);
    if (seen != 0) return seen < 0 ? CS_ERR : CS_OK;
    PyObject *v = rule_value(CS_S(not_kept_rule), message);
    if (v == NULL) return CS_ERR;
    int rc = say(b, CS_S(not_kept_event), v);
    Py_DECREF(v);
    return rc;
}

int cs_problem(CS *b, PyObject *rule, PyObject *message) {
    PyObject *key = PyTuple_Pack(2, rule, message);
    if (key == NULL) return CS_ERR;
    int seen = said_before(b, key);
    Py_DECREF(key);
    if (seen != 0) return seen < 0 ? CS_ERR : CS_OK;
    PyObject *v = rule_value(rule, message);
    if (v == NULL) return CS_ERR;
    int rc = say(b, CS_S(problem_event), v);
    Py_DECREF(v);
    return rc;
}

int cs_problem_at(CS *b, PyObject *rule, PyObject *message, CSCall *call) {
    if (!b->opened) return CS_BAIL;
    PyObject *v = rule_value(rule, message);
    if (v == NULL) return CS_ERR;
    if (call != NULL && PyDict_SetItem(v, CS_S(toolCallId), call->id) < 0) {
        Py_DECREF(v);
        return CS_ERR;
    }
    int rc = custom(b, CS_S(problem_event), v);
    Py_DECREF(v);
    return rc;
}

/* ---- the reply -------------------------------------------------------------------------------------- */

int cs_identify(CS *b, PyObject *response_id, PyObject *model) {
    if (b->response_id == NULL && response_id != NULL && PyUnicode_Check(response_id) &&
        PyUnicode_GET_LENGTH(response_id) > 0)
        b->response_id = Py_NewRef(response_id);
    if (b->model == NULL && model != NULL && PyUnicode_Check(model) && PyUnicode_GET_LENGTH(model) > 0)
        b->model = Py_NewRef(model);
    return CS_OK;
}

int cs_open(CS *b) {
    if (b->opened) return CS_OK;
    if (b->response_id == NULL) return CS_BAIL; /* the Python builder makes a random one */
    b->reply_id = Py_NewRef(b->response_id);
    b->opened = 1;
    if (reply_event(b, CS_S(AGENT_START), CS_S(role), CS_S(assistant), NULL) == NULL) return CS_ERR;
    if (reply_event(b, CS_S(MODEL_CALL_START), CS_S(modelName), b->model, NULL) == NULL) return CS_ERR;
    if (b->held != NULL) {
        PyObject *held = b->held;
        b->held = NULL;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(held); i++) {
            PyObject *t = PyList_GET_ITEM(held, i);
            if (custom(b, PyTuple_GET_ITEM(t, 0), PyTuple_GET_ITEM(t, 1)) < 0) {
                Py_DECREF(held);
                return CS_ERR;
            }
        }
        Py_DECREF(held);
    }
    return CS_OK;
}

/* ---- blocks ----------------------------------------------------------------------------------------- */

/* The index of the open block in slot, -1 when none, -2 on error. */
static int find_block(CS *b, PyObject *slot) {
    for (int i = 0; i < b->nblocks; i++) {
        PyObject *s = b->blocks[i].slot;
        if (s == slot) return i;
        int eq = PyObject_RichCompareBool(s, slot, Py_EQ);
        if (eq < 0) return -2;
        if (eq) return i;
    }
    return -1;
}

int cs_block_kind(CS *b, PyObject *slot) {
    int i = find_block(b, slot);
    if (i == -2) return -1;
    return i < 0 ? 0 : b->blocks[i].kind;
}

static int end_at(CS *b, int i, PyObject *metadata) {
    CSBlock blk = b->blocks[i];
    memmove(&b->blocks[i], &b->blocks[i + 1], sizeof(CSBlock) * (size_t)(b->nblocks - i - 1));
    b->nblocks--;
    int rc = CS_OK;
    if (blk.whole_sig != NULL &&
        reply_event(b, CS_S(THINKING_BLOCK_DELTA), CS_S(blockId), blk.block_id, CS_S(delta), CS_S(empty),
                    CS_S(signature), blk.whole_sig, NULL) == NULL)
        rc = CS_ERR;
    if (rc == CS_OK) {
        PyObject *e = reply_event(b, blk.kind == CS_THINKING ? CS_S(THINKING_BLOCK_END) : CS_S(TEXT_BLOCK_END),
                                  CS_S(blockId), blk.block_id, NULL);
        if (e == NULL) rc = CS_ERR;
        else if (metadata != NULL && PyObject_IsTrue(metadata) == 1 && PyDict_SetItem(e, CS_S(metadata), metadata) < 0)
            rc = CS_ERR;
    }
    Py_XDECREF(blk.slot);
    Py_XDECREF(blk.block_id);
    Py_XDECREF(blk.whole_sig);
    return rc;
}

int cs_end_block(CS *b, PyObject *slot, PyObject *metadata) {
    int i = find_block(b, slot);
    if (i == -2) return CS_ERR;
    if (i < 0) return CS_OK;
    return end_at(b, i, metadata);
}

/* StreamBuilder._open: the block of kind in slot (a block of another kind there ends first); its index. */
static int open_block(CS *b, PyObject *slot, int kind, int *at) {
    int i = find_block(b, slot);
    if (i == -2) return CS_ERR;
    if (i >= 0) {
        if (b->blocks[i].kind == kind) {
            *at = i;
            return CS_OK;
        }
        if (end_at(b, i, NULL) < 0) return CS_ERR;
    }
    if (b->nblocks == CS_MAX_BLOCKS) return CS_BAIL;
    b->made++;
    PyObject *id = PyUnicode_FromFormat("%s-%d", kind == CS_THINKING ? "thinking" : "text", b->made);
    if (id == NULL) return CS_ERR;
    CSBlock *blk = &b->blocks[b->nblocks++];
    blk->slot = Py_NewRef(slot);
    blk->kind = kind;
    blk->block_id = id;
    blk->whole_sig = NULL;
    *at = b->nblocks - 1;
    PyObject *e = kind == CS_THINKING
                      ? reply_event(b, CS_S(THINKING_BLOCK_START), CS_S(blockId), id, CS_S(provider), b->provider,
                                    CS_S(model), b->model, NULL)
                      : reply_event(b, CS_S(TEXT_BLOCK_START), CS_S(blockId), id, NULL);
    return e == NULL ? CS_ERR : CS_OK;
}

static int nonempty(PyObject *s) { return s != NULL && s != Py_None && PyUnicode_GET_LENGTH(s) > 0; }

int cs_text(CS *b, PyObject *slot, PyObject *delta, PyObject *ends) {
    if (delta == NULL || delta == Py_None) return CS_OK;
    if (!PyUnicode_CheckExact(delta)) return CS_BAIL; /* said as a problem by the Python builder */
    if (PyUnicode_GET_LENGTH(delta) == 0) return CS_OK;
    int rc = cs_open(b);
    if (rc != CS_OK) return rc;
    if (ends != NULL && (rc = cs_end_block(b, ends, NULL)) != CS_OK) return rc;
    int at;
    if ((rc = open_block(b, slot, CS_TEXT, &at)) != CS_OK) return rc;
    return reply_event(b, CS_S(TEXT_BLOCK_DELTA), CS_S(blockId), b->blocks[at].block_id, CS_S(delta), delta, NULL) ==
                   NULL
               ? CS_ERR
               : CS_OK;
}

int cs_thinking(CS *b, PyObject *slot, PyObject *delta, PyObject *sig, PyObject *redacted) {
    PyObject *parts[3] = {delta, sig, redacted};
    int any = 0;
    for (int i = 0; i < 3; i++) {
        PyObject *p = parts[i];
        if (p == NULL || p == Py_None) continue;
        if (!PyUnicode_CheckExact(p)) return CS_BAIL;
        any |= PyUnicode_GET_LENGTH(p) > 0;
    }
    if (!any) return CS_OK;
    int rc = cs_open(b), at;
    if (rc != CS_OK || (rc = open_block(b, slot, CS_THINKING, &at)) != CS_OK) return rc;
    PyObject *e = reply_event(b, CS_S(THINKING_BLOCK_DELTA), CS_S(blockId), b->blocks[at].block_id, CS_S(delta),
                              delta == NULL ? Py_None : delta, NULL);
    if (e == NULL) return CS_ERR;
    if (nonempty(sig) && PyDict_SetItem(e, CS_S(signature), sig) < 0) return CS_ERR;
    if (nonempty(redacted) && PyDict_SetItem(e, CS_S(redactedData), redacted) < 0) return CS_ERR;
    return CS_OK;
}

int cs_signature(CS *b, PyObject *slot, PyObject *value) {
    if (value == NULL || value == Py_None) return CS_OK;
    if (!PyUnicode_CheckExact(value)) return CS_BAIL;
    if (PyUnicode_GET_LENGTH(value) == 0) return CS_OK;
    int rc = cs_open(b), at;
    if (rc != CS_OK || (rc = open_block(b, slot, CS_THINKING, &at)) != CS_OK) return rc;
    Py_XSETREF(b->blocks[at].whole_sig, Py_NewRef(value));
    return CS_OK;
}

/* ---- tool calls ------------------------------------------------------------------------------------- */

CSCall *cs_open_call(CS *b, PyObject *key) {
    for (Py_ssize_t i = b->ncalls - 1; i >= 0; i--) {
        CSCall *c = &b->calls[i];
        if (!c->open) continue;
        int eq = c->key == key ? 1 : PyObject_RichCompareBool(c->key, key, Py_EQ);
        if (eq < 0) {
            PyErr_Clear();
            continue;
        }
        if (eq) return c;
    }
    return NULL;
}

/* ---- minted call ids: StreamBuilder._start_call's call_ + blake2b(f"{response_id}/None/{n}", 12) ---------
 * (BLAKE2b, RFC 7693, unkeyed, a 12-byte digest: what hashlib.blake2b(seed, digest_size=12) gives; in C, as a
 * Python call cost a microsecond a call, and every Gemini call has its id minted; test_cstream_gemini.py compares
 * the ids with hashlib's) */

static const uint64_t B2_IV[8] = {0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
                                  0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
                                  0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};
static const uint8_t B2_SIGMA[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

static inline uint64_t b2_rotr(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

#define B2_G(a, b, c, d, x, y)          \
    do {                                \
        v[a] = v[a] + v[b] + (x);       \
        v[d] = b2_rotr(v[d] ^ v[a], 32); \
        v[c] = v[c] + v[d];             \
        v[b] = b2_rotr(v[b] ^ v[c], 24); \
        v[a] = v[a] + v[b] + (y);       \
        v[d] = b2_rotr(v[d] ^ v[a], 16); \
        v[c] = v[c] + v[d];             \
        v[b] = b2_rotr(v[b] ^ v[c], 63); \
    } while (0)

static void b2_compress(uint64_t h[8], const uint8_t block[128], uint64_t t, int last) {
    uint64_t m[16], v[16];
    for (int i = 0; i < 16; i++) {
        uint64_t w = 0;
        for (int j = 7; j >= 0; j--) w = (w << 8) | block[i * 8 + j];
        m[i] = w;
    }
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = B2_IV[i];
    }
    v[12] ^= t; /* (the high word of the counter: a seed is far below 2**64 bytes) */
    if (last) v[14] = ~v[14];
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = B2_SIGMA[r];
        B2_G(0, 4, 8, 12, m[s[0]], m[s[1]]);
        B2_G(1, 5, 9, 13, m[s[2]], m[s[3]]);
        B2_G(2, 6, 10, 14, m[s[4]], m[s[5]]);
        B2_G(3, 7, 11, 15, m[s[6]], m[s[7]]);
        B2_G(0, 5, 10, 15, m[s[8]], m[s[9]]);
        B2_G(1, 6, 11, 12, m[s[10]], m[s[11]]);
        B2_G(2, 7, 8, 13, m[s[12]], m[s[13]]);
        B2_G(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

/* blake2b(data, digest_size=12).hexdigest() into hex (24 characters) */
static void b2_hex12(const uint8_t *data, size_t n, char hex[24]) {
    uint64_t h[8];
    memcpy(h, B2_IV, sizeof(h));
    h[0] ^= 0x01010000ULL ^ 12; /* digest length 12, no key, fanout and depth 1 */
    uint64_t t = 0;
    uint8_t block[128];
    while (n > 128) {
        t += 128;
        b2_compress(h, data, t, 0);
        data += 128;
        n -= 128;
    }
    memset(block, 0, sizeof(block));
    memcpy(block, data, n);
    t += n;
    b2_compress(h, block, t, 1);
    for (int i = 0; i < 12; i++) {
        uint8_t byte = (uint8_t)(h[i / 8] >> (8 * (i % 8)));
        hex[2 * i] = "0123456789abcdef"[byte >> 4];
        hex[2 * i + 1] = "0123456789abcdef"[byte & 15];
    }
}

/* The next minted id of the reply (b->minted counted): its response id is known (the reply is open). */
static PyObject *mint(CS *b) {
    Py_ssize_t n;
    const char *rid = PyUnicode_AsUTF8AndSize(b->response_id, &n);
    if (rid == NULL) return NULL;
    b->minted++;
    char tail[32];
    int k = snprintf(tail, sizeof(tail), "/None/%d", b->minted);
    uint8_t small[256];
    uint8_t *seed = (size_t)n + (size_t)k <= sizeof(small) ? small : PyMem_Malloc((size_t)n + (size_t)k);
    if (seed == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(seed, rid, (size_t)n);
    memcpy(seed + n, tail, (size_t)k);
    char id[5 + 24];
    memcpy(id, "call_", 5);
    b2_hex12(seed, (size_t)n + (size_t)k, id + 5);
    if (seed != small) PyMem_Free(seed);
    return PyUnicode_FromStringAndSize(id, (Py_ssize_t)sizeof(id));
}

int cs_call_start(CS *b, PyObject *key, PyObject *id, PyObject *name, PyObject *sig, PyObject *pending) {
    if (!PyUnicode_CheckExact(name) || PyUnicode_GET_LENGTH(name) == 0) return CS_BAIL;
    if (id != NULL && (!PyUnicode_CheckExact(id) || PyUnicode_GET_LENGTH(id) == 0)) return CS_BAIL;
    if (sig != NULL && sig != Py_None && !PyUnicode_CheckExact(sig)) return CS_BAIL;
    if (b->ncalls >= CS_MAX_CALLS) return CS_BAIL; /* (the id check below and cs_open_call look through them all) */
    int rc = cs_open(b);
    if (rc != CS_OK) return rc;
    PyObject *call_id = id != NULL ? Py_NewRef(id) : mint(b);
    if (call_id == NULL) return CS_ERR;
    for (Py_ssize_t i = 0; i < b->ncalls; i++) { /* an earlier call's id: the Python builder renames it */
        int eq = PyUnicode_Compare(b->calls[i].id, call_id);
        if (eq == 0 || (eq == -1 && PyErr_Occurred())) {
            Py_DECREF(call_id);
            return eq == 0 ? CS_BAIL : CS_ERR;
        }
    }
    for (int i = 0; i < b->nblocks;) { /* reasoning is over once the model calls a tool */
        if (b->blocks[i].kind == CS_THINKING) {
            if (end_at(b, i, NULL) < 0) {
                Py_DECREF(call_id);
                return CS_ERR;
            }
        } else {
            i++;
        }
    }
    if (b->ncalls == b->cap) {
        Py_ssize_t cap = b->cap ? b->cap * 2 : 4;
        CSCall *calls = PyMem_Realloc(b->calls, sizeof(CSCall) * (size_t)cap);
        if (calls == NULL) {
            Py_DECREF(call_id);
            PyErr_NoMemory();
            return CS_ERR;
        }
        b->calls = calls;
        b->cap = cap;
    }
    CSCall *c = &b->calls[b->ncalls++];
    memset(c, 0, sizeof(*c));
    c->key = Py_NewRef(key);
    c->id = call_id;
    c->name = Py_NewRef(name);
    c->open = 1;
    c->minted = id == NULL;
    if ((c->text = PyList_New(0)) == NULL) return CS_ERR;
    if (reply_event(b, CS_S(TOOL_CALL_START), CS_S(toolCallId), c->id, CS_S(toolCallName), c->name,
                    CS_S(thoughtSignature), nonempty(sig) ? sig : NULL, NULL) == NULL)
        return CS_ERR;
    if (nonempty(pending)) {
        if (PyList_Append(c->text, pending) < 0) return CS_ERR;
        if (reply_event(b, CS_S(TOOL_CALL_DELTA), CS_S(toolCallId), c->id, CS_S(delta), pending, NULL) == NULL)
            return CS_ERR;
    }
    return CS_OK;
}

int cs_call_args(CS *b, CSCall *call, PyObject *text) {
    if (text == NULL || text == Py_None) return CS_OK;
    if (!PyUnicode_CheckExact(text)) return CS_BAIL;
    if (PyUnicode_GET_LENGTH(text) == 0) return CS_OK;
    if (PyList_Append(call->text, text) < 0) return CS_ERR;
    return reply_event(b, CS_S(TOOL_CALL_DELTA), CS_S(toolCallId), call->id, CS_S(delta), text, NULL) == NULL ? CS_ERR
                                                                                                               : CS_OK;
}

int cs_call_end(CS *b, CSCall *call) {
    if (!call->open) return CS_OK;
    call->open = 0;
    PyObject *meta = NULL;
    if (nonempty(call->late_sig) || call->minted) {
        if ((meta = PyDict_New()) == NULL) return CS_ERR;
        if (nonempty(call->late_sig) && PyDict_SetItem(meta, CS_S(thoughtSignature), call->late_sig) < 0) goto fail;
        if (call->minted && PyDict_SetItem(meta, CS_S(minted_id), call->id) < 0) goto fail;
    }
    PyObject *e = reply_event(b, CS_S(TOOL_CALL_END), CS_S(toolCallId), call->id, CS_S(toolCallName), call->name,
                              CS_S(metadata), meta, CS_S(input), call->input, NULL);
    Py_XDECREF(meta);
    return e == NULL ? CS_ERR : CS_OK;
fail:
    Py_DECREF(meta);
    return CS_ERR;
}

/* ---- the end ---------------------------------------------------------------------------------------- */

int cs_usage(CS *b, PyObject *usage) {
    if (usage == NULL || !PyDict_Check(usage) || PyDict_GET_SIZE(usage) == 0) return CS_OK;
    if (b->usage == NULL) {
        b->usage = Py_NewRef(usage);
        return CS_OK;
    }
    PyObject *merged = PyDict_Copy(b->usage);
    if (merged == NULL || PyDict_Update(merged, usage) < 0) {
        Py_XDECREF(merged);
        return CS_ERR;
    }
    Py_SETREF(b->usage, merged);
    return CS_OK;
}

int cs_finish(CS *b, PyObject *reason, int tool_calls, int normal) {
    int rc = cs_open(b);
    if (rc != CS_OK) return rc;
    Py_XSETREF(b->finish, Py_NewRef(reason != NULL && PyUnicode_Check(reason) ? reason : CS_S(empty)));
    if (reason == NULL || !PyUnicode_Check(reason)) { /* the Python builder says "stop" */
        PyObject *stop = PyUnicode_FromString("stop");
        if (stop == NULL) return CS_ERR;
        Py_SETREF(b->finish, stop);
    }
    b->normal = normal;
    if (tool_calls) b->tool_calls = 1;
    return CS_OK;
}

void cs_refused(CS *b) { b->refusal = 1; }

int cs_close(CS *b, int ended) {
    if (b->closed) return CS_OK;
    b->closed = 1;
    int rc = cs_open(b);
    if (rc != CS_OK) return rc;
    int interrupted = 0;
    if (b->finish == NULL) {
        if (ended) {
            b->normal = 1;
        } else { /* StreamBuilder.error("the stream ended before ...", kind="incomplete_stream") */
            PyObject *v = Py_BuildValue("{s:O,s:O,s:O}", "type", CS_S(incomplete_stream), "message",
                                        CS_S(incomplete_message), "provider", b->provider);
            if (v == NULL) return CS_ERR;
            rc = custom(b, CS_S(error_event), v);
            Py_DECREF(v);
            if (rc != CS_OK) return rc;
            interrupted = 1;
        }
    }
    while (b->nblocks > 0)
        if (end_at(b, 0, NULL) < 0) return CS_ERR;
    for (Py_ssize_t i = 0; i < b->ncalls; i++)
        if (b->calls[i].open && cs_call_end(b, &b->calls[i]) < 0) return CS_ERR;
    if (!interrupted) { /* StreamBuilder._check_arguments */
        for (Py_ssize_t i = 0; i < b->ncalls; i++) {
            CSCall *c = &b->calls[i];
            if (c->said || PyList_GET_SIZE(c->text) == 0) continue;
            PyObject *text = PyUnicode_Join(CS_S(empty), c->text);
            if (text == NULL) return CS_ERR;
            PyObject *said = PyObject_CallFunctionObjArgs(b->arguments_problem, c->name, text,
                                                          b->finish != NULL ? b->finish : Py_None, NULL);
            Py_DECREF(text);
            if (said == NULL) return CS_ERR;
            if (said != Py_None) {
                c->said = 1;
                if (!PyTuple_Check(said) || PyTuple_GET_SIZE(said) != 2) {
                    Py_DECREF(said);
                    return CS_BAIL;
                }
                rc = cs_problem_at(b, PyTuple_GET_ITEM(said, 0), PyTuple_GET_ITEM(said, 1), c);
            }
            Py_DECREF(said);
            if (rc != CS_OK) return rc;
        }
    }
    PyObject *reason = NULL;
    if (interrupted) reason = CS_S(INTERRUPTED);
    else if (b->tool_calls || (b->normal && b->ncalls > 0)) reason = CS_S(TOOL_CALLS);
    if (reason != NULL) {
        PyObject *e = cs_event(b, CS_S(REQUEST_STOP));
        PyObject *why = interrupted ? CS_S(incomplete_message) : (b->finish != NULL ? b->finish : CS_S(empty));
        if (e == NULL || PyDict_SetItem(e, CS_S(reason), why) < 0 || PyDict_SetItem(e, CS_S(generateReason), reason) < 0)
            return CS_ERR;
    }
    PyObject *usage = b->usage != NULL ? PyDict_Copy(b->usage) : NULL;
    if (b->usage != NULL && usage == NULL) return CS_ERR;
    PyObject *meta = PyDict_New();
    if (meta == NULL) {
        Py_XDECREF(usage);
        return CS_ERR;
    }
    if ((b->finish != NULL && !interrupted && PyDict_SetItem(meta, CS_S(finishReason), b->finish) < 0) ||
        (b->model != NULL && PyDict_SetItem(meta, CS_S(model), b->model) < 0) ||
        (b->refusal && PyDict_SetItem(meta, CS_S(refusal), Py_True) < 0)) {
        Py_XDECREF(usage);
        Py_DECREF(meta);
        return CS_ERR;
    }
    PyObject *e = reply_event(b, CS_S(MODEL_CALL_END), CS_S(usage), usage, CS_S(metadata),
                              PyDict_GET_SIZE(meta) ? meta : NULL, NULL);
    Py_XDECREF(usage);
    Py_DECREF(meta);
    if (e == NULL) return CS_ERR;
    return reply_event(b, CS_S(AGENT_END), NULL) == NULL ? CS_ERR : CS_OK;
}

/* ---- SSE -------------------------------------------------------------------------------------------- */

int cs_sse_begin(CSSse *s, PyObject *body) {
    if (!PyBytes_CheckExact(body)) return CS_BAIL;
    s->p = PyBytes_AS_STRING(body);
    s->end = s->p + PyBytes_GET_SIZE(body);
    const char *nl = memchr(s->p, '\n', (size_t)(s->end - s->p));
    if (nl == NULL) return CS_BAIL;
    s->crlf = nl > s->p && nl[-1] == '\r';
    /* the body starts with a field or a comment (not a byte order mark, an HTTP head, JSON) */
    Py_ssize_t n = s->end - s->p;
    if (!((n >= 5 && memcmp(s->p, "data:", 5) == 0) || (n >= 6 && memcmp(s->p, "event:", 6) == 0) ||
          (n >= 3 && memcmp(s->p, "id:", 3) == 0) || s->p[0] == ':'))
        return CS_BAIL;
    return CS_OK;
}

static int ascii(const char *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if ((unsigned char)p[i] >= 0x80) return 0;
    return 1;
}

/* The value of a field line's rest [p, e) after its colon: one leading space dropped. */
static inline const char *field_value(const char *p, const char *e) { return p < e && *p == ' ' ? p + 1 : p; }

int cs_sse_next(CSSse *s, const char **ev, Py_ssize_t *evlen, const char **data, Py_ssize_t *dlen) {
    const char *name = "message";
    Py_ssize_t namelen = 7;
    const char *d = NULL;
    Py_ssize_t dn = 0;
    int fields = 0;
    while (s->p < s->end) {
        const char *nl = memchr(s->p, '\n', (size_t)(s->end - s->p));
        const char *e = nl != NULL ? nl : s->end; /* (none: a last line without its end, which Framer.close ends) */
        if (s->crlf && nl != NULL) {
            if (e == s->p || e[-1] != '\r') return CS_BAIL;
            e--;
        }
        const char *line = s->p;
        Py_ssize_t n = e - line;
        if (memchr(line, '\r', (size_t)n) != NULL) return CS_BAIL;
        s->p = nl != NULL ? nl + 1 : s->end;
        if (n == 0) {
            if (!fields) continue; /* a blank line that ends no event: nothing, as the SSE decoder reads it */
            if (d == NULL) return CS_BAIL;
            *ev = name;
            *evlen = namelen;
            *data = d;
            *dlen = dn;
            return CS_EVENT;
        }
        fields = 1;
        if (line[0] == ':') continue;
        if (n >= 5 && memcmp(line, "data:", 5) == 0) {
            if (d != NULL) return CS_BAIL; /* data on two lines: joined by the Python decoder */
            d = field_value(line + 5, e);
            dn = e - d;
        } else if (n >= 6 && memcmp(line, "event:", 6) == 0) {
            name = field_value(line + 6, e);
            namelen = e - name;
            if (!ascii(name, namelen)) return CS_BAIL; /* (invalid UTF-8 in it is said by the SSE decoder) */
        } else if (n >= 3 && memcmp(line, "id:", 3) == 0) {
            if (memchr(line, '\0', (size_t)n) != NULL || !ascii(line, n)) return CS_BAIL;
        } else {
            return CS_BAIL;
        }
    }
    if (!fields) return 0;
    /* A last event without its blank line: dispatched, as Framer.close dispatches it (it feeds the decoder "\n\n";
     * its TRAILING problem is said only of data that is not JSON, which gives up) */
    if (d == NULL) return CS_BAIL;
    *ev = name;
    *evlen = namelen;
    *data = d;
    *dlen = dn;
    return CS_EVENT;
}

PyObject *cs_loads(PyObject *loads, const char *data, Py_ssize_t n, int *rc) {
    if (n == 0 || data[0] != '{') {
        *rc = CS_BAIL;
        return NULL;
    }
    PyObject *raw = PyBytes_FromStringAndSize(data, n);
    if (raw == NULL) {
        *rc = CS_ERR;
        return NULL;
    }
    PyObject *obj = PyObject_CallOneArg(loads, raw);
    Py_DECREF(raw);
    if (obj == NULL) {
        if (PyErr_ExceptionMatches(PyExc_ValueError)) { /* orjson.JSONDecodeError: the Python parser says why */
            PyErr_Clear();
            *rc = CS_BAIL;
        } else {
            *rc = CS_ERR;
        }
        return NULL;
    }
    if (!PyDict_CheckExact(obj)) {
        Py_DECREF(obj);
        *rc = CS_BAIL;
        return NULL;
    }
    *rc = CS_OK;
    return obj;
}

/* ---- BaseStreamParser.feed and close over a whole SSE body ------------------------------------------ */

static int blank(const char *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (!(p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r' || p[i] == '\f' || p[i] == '\v')) return 0;
    return 1;
}

int cs_run_sse(CSRun *r, PyObject *body, PyObject *loads) {
    CSSse s;
    int rc = cs_sse_begin(&s, body);
    if (rc != CS_OK) return rc;
    const char *ev, *data;
    Py_ssize_t evlen, dlen;
    int got;
    while ((got = cs_sse_next(&s, &ev, &evlen, &data, &dlen)) == CS_EVENT) {
        if (r->done) { /* BaseStreamParser._past_end: no news, or a payload after the end (said: give up) */
            if (cs_is(ev, evlen, "ping") || blank(data, dlen) || (dlen >= 6 && memcmp(data, "[DONE]", 6) == 0))
                continue;
            return CS_BAIL;
        }
        if (dlen >= 6 && memcmp(data, "[DONE]", 6) == 0) {
            r->done = 1;
            if (r->end_payloads != NULL && (rc = r->end_payloads(r)) != CS_OK) return rc;
            if ((rc = cs_close(r->b, 1)) != CS_OK) return rc;
            continue;
        }
        if (blank(data, dlen)) {
            if (cs_is(ev, evlen, "error")) return CS_BAIL;
            continue;
        }
        if (r->raw != NULL && (rc = r->raw(r, ev, evlen, data, dlen)) != CS_PASS) {
            if (rc != CS_OK) return rc;
            continue;
        }
        PyObject *obj = cs_loads(loads, data, dlen, &rc);
        if (obj == NULL) return rc;
        rc = r->payload(r, ev, evlen, obj);
        Py_DECREF(obj);
        if (rc != CS_OK) return rc;
    }
    if (got != 0) return CS_BAIL;
    if (!r->b->closed) {
        if (r->end_payloads != NULL && (rc = r->end_payloads(r)) != CS_OK) return rc;
        if ((rc = cs_close(r->b, 0)) != CS_OK) return rc;
    }
    return CS_OK;
}

/* ---- event ids and createdAt, made here (an entry point given None for them) -------------------------- */

#if defined(__unix__) || defined(__APPLE__)
#include <time.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <sys/random.h>
#endif

/* os.urandom(11).hex(), as StreamBuilder's id prefix: 22 hex digits of fresh random bytes. */
static PyObject *new_prefix(void) {
    unsigned char raw[11];
    if (getentropy(raw, sizeof(raw)) != 0) return PyErr_SetFromErrno(PyExc_OSError);
    PyObject *out = PyUnicode_New(22, 127);
    if (out == NULL) return NULL;
    Py_UCS1 *p = PyUnicode_1BYTE_DATA(out);
    for (int i = 0; i < 11; i++) {
        p[2 * i] = (Py_UCS1)HEXD[raw[i] >> 4];
        p[2 * i + 1] = (Py_UCS1)HEXD[raw[i] & 15];
    }
    return out;
}

/* providers._builder._now(): the time now, RFC 3339 UTC with microseconds ("2026-11-27T20:19:13.780123Z"). */
static PyObject *new_stamp(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return PyErr_SetFromErrno(PyExc_OSError);
    long long us = (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
    time_t secs = (time_t)(us / 1000000LL);
    long micros = (long)(us % 1000000LL);
    if (micros < 0) { /* (before 1970: floor, as divmod) */
        micros += 1000000;
        secs -= 1;
    }
    struct tm tm;
    if (gmtime_r(&secs, &tm) == NULL) return PyErr_SetFromErrno(PyExc_OSError);
    char out[64];
    size_t n = strftime(out, sizeof(out), "%Y-%m-%dT%H:%M:%S", &tm);
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "the time now cannot be written");
        return NULL;
    }
    snprintf(out + n, sizeof(out) - n, ".%06ldZ", micros);
    return PyUnicode_FromString(out);
}
#else
static PyObject *new_prefix(void) {
    PyErr_SetString(PyExc_TypeError, "prefix is a str here");
    return NULL;
}
static PyObject *new_stamp(void) {
    PyErr_SetString(PyExc_TypeError, "stamp is a str here");
    return NULL;
}
#endif

PyObject *cs_entry(PyObject *const *args, Py_ssize_t nargs, const char *provider, CSRun *r) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "expected (body, prefix, stamp, loads, arguments_problem)");
        return NULL;
    }
    PyObject *name = PyUnicode_FromString(provider);
    if (name == NULL) return NULL;
    PyObject *prefix = args[1] == Py_None ? new_prefix() : Py_NewRef(args[1]);
    PyObject *stamp = args[2] == Py_None ? new_stamp() : Py_NewRef(args[2]);
    CS b;
    int rc = prefix == NULL || stamp == NULL ? CS_ERR : cs_begin(&b, name, prefix, stamp, args[4]);
    Py_DECREF(name);
    Py_XDECREF(prefix);
    Py_XDECREF(stamp);
    if (rc == CS_ERR && (prefix == NULL || stamp == NULL)) return NULL;
    if (rc == CS_OK) {
        r->b = &b;
        r->done = 0;
        rc = cs_run_sse(r, args[0], args[3]);
    }
    PyObject *out = NULL;
    if (rc == CS_OK) out = Py_NewRef(b.events);
    else if (rc == CS_BAIL) out = Py_NewRef(Py_None);
    cs_clear(&b);
    return out;
}
