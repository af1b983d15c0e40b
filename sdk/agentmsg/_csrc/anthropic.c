/* agentmsg._speedups: the whole-body fast path of providers/anthropic.py's stream parser (see cstream.h).
 *
 * StreamParser.payload and its helpers (_message_start, _add_usage, _block for a block as content_block_start
 * gives it, _finish, _ending_not_kept, _request_not_kept, end_payloads) for the clean cases: blocks by an index that
 * is an int; text, thinking (signature_delta: a whole signature), redacted_thinking and tool_use blocks (a
 * tool_use's start input {} or none); usage counts that are counts. It gives up (CS_BAIL) on what the Python parser
 * says a problem of or reads another way: a delta of another block's type or of a block that never started or
 * stopped (StreamParser._misplaced), unknown block or delta types, citations, server tools' and not-kept blocks, a
 * message that comes whole, an error event, a second message_start of another message, a tool_use block that
 * restarts an open call, ids or names that are no text, counts that are no counts, a value too deep to show. */
#include "cstream.h"
#include <stddef.h>

#define A_STRINGS(X)                                                                                           \
    X(type, "type") X(index, "index") X(delta, "delta") X(content_block, "content_block") X(message, "message") \
    X(usage, "usage") X(text, "text") X(thinking, "thinking") X(signature, "signature") X(data, "data")        \
    X(partial_json, "partial_json") X(id, "id") X(name, "name") X(input, "input") X(model, "model")            \
    X(content, "content") X(stop_reason, "stop_reason") X(error, "error") X(caller, "caller")                  \
    X(toolset_name, "toolset_name") X(citations, "citations") X(input_tokens, "input_tokens")                 \
    X(cache_creation_input_tokens, "cache_creation_input_tokens")                                              \
    X(cache_read_input_tokens, "cache_read_input_tokens") X(output_tokens, "output_tokens")                    \
    X(inputTokens, "inputTokens") X(outputTokens, "outputTokens") X(cachedTokens, "cachedTokens")              \
    X(totalTokens, "totalTokens") X(empty_object, "{}") X(stop_sequence, "stop_sequence")                      \
    X(stop_details, "stop_details") X(container, "container") X(context_management, "context_management")      \
    X(input_transformations, "input_transformations") X(diagnostics, "diagnostics")

#define CS_PREFIX a_s_
A_STRINGS(CS_STRING_VAR)
#define A_S(var) (a_s_##var)

static int a_strings(void) {
    if (a_s_type != NULL) return 0;
    if (cs_strings() < 0) return -1;
    A_STRINGS(CS_STRING_INTERN)
    return 0;
}

/* d.get(key) for an interned key: borrowed, NULL when absent */
static inline PyObject *get(PyObject *d, PyObject *key) { return PyDict_GetItemWithError(d, key); }

/* Whether s is the str lit (ASCII) */
static inline int str_is(PyObject *s, const char *lit, Py_ssize_t n) {
    return s != NULL && PyUnicode_CheckExact(s) && PyUnicode_IS_ASCII(s) && PyUnicode_GET_LENGTH(s) == n &&
           memcmp(PyUnicode_1BYTE_DATA(s), lit, (size_t)n) == 0;
}
#define STR_IS(s, lit) str_is((s), lit, (Py_ssize_t)(sizeof(lit) - 1))

/* Python's truth of a JSON value (None, false, 0, 0.0, "", [], {} are false); -1 with an exception */
static inline int truthy(PyObject *v) {
    if (v == NULL || v == Py_None) return 0;
    return PyObject_IsTrue(v);
}

/* ---- the parser's state ------------------------------------------------------------------------------ */

enum { K_NONE = 0, K_TEXT, K_THINKING, K_REDACTED, K_TOOL, K_ENDED }; /* StreamParser._kinds[slot] */

typedef struct {
    long long index;
    PyObject *key; /* the index (an int) as first given: the builder's slot of the block, owned */
    int kind;      /* K_*: its block's type (K_NONE: not in _kinds) */
    int input;     /* _inputs[slot] is held: the call's start input "{}" */
} ASlot;

#define A_MAX_SLOTS 256 /* blocks of a reply (looked up one by one): more gives up */
#define N_COUNTS 4      /* _COUNTS: input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens */

typedef struct {
    int nslots;
    ASlot slots[A_MAX_SLOTS];
    PyObject *counts[N_COUNTS]; /* StreamParser._usage: each count's last value, owned or NULL */
    PyObject *held[N_COUNTS];   /* StreamBuilder._later's raw usage (a copy of _usage), owned or NULL */
    int has_held;
    int started; /* a message_start came */
    long foreign; /* payloads of no Anthropic event type */
} AState;

static void a_clear(AState *s) {
    for (int i = 0; i < s->nslots; i++) Py_CLEAR(s->slots[i].key);
    s->nslots = 0;
    for (int i = 0; i < N_COUNTS; i++) {
        Py_CLEAR(s->counts[i]);
        Py_CLEAR(s->held[i]);
    }
}

/* StreamParser._slot(index): the block of an index that is an int (anything else, whose slot is f"b{index}",
 * gives up); NULL with *rc set (CS_BAIL) */
static ASlot *slot_of(AState *s, PyObject *index, int *rc) {
    *rc = CS_BAIL;
    if (index == NULL || !PyLong_CheckExact(index)) return NULL;
    int overflow;
    long long n = PyLong_AsLongLongAndOverflow(index, &overflow);
    if (overflow || (n == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return NULL;
    }
    for (int i = 0; i < s->nslots; i++)
        if (s->slots[i].index == n) return &s->slots[i];
    if (s->nslots == A_MAX_SLOTS) return NULL;
    ASlot *sl = &s->slots[s->nslots++];
    sl->index = n;
    sl->key = Py_NewRef(index);
    sl->kind = K_NONE;
    sl->input = 0;
    return sl;
}

/* ---- usage (StreamParser._add_usage, _usage, usage_dict, StreamBuilder.usage_later / set_usage) ------- */

#define LONG_MAX_ 9223372036854775807LL

/* safe_int(value) with no problem said: 1 and *out for a count, 0 for None (absent), CS_BAIL (2) when the
 * Python parser says it is no count */
static int count_of(PyObject *v, long long *out) {
    if (v == NULL || v == Py_None) return 0;
    if (PyLong_CheckExact(v)) {
        int overflow;
        long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow > 0) n = LONG_MAX_; /* beyond 64 bits: saturates */
        else if (overflow < 0 || n < 0) return 2;
        *out = n;
        return 1;
    }
    if (PyFloat_CheckExact(v)) {
        double d = PyFloat_AS_DOUBLE(v); /* value >= 0 and value.is_integer(): min(int(value), LONG_MAX) */
        if (!(d >= 0) || d == Py_HUGE_VAL) return 2;
        if (d >= 9223372036854775808.0) {
            *out = LONG_MAX_;
            return 1;
        }
        long long n = (long long)d;
        if ((double)n != d) return 2;
        *out = n;
        return 1;
    }
    return 2;
}

static long long sat_add(long long a, long long b) { return a > LONG_MAX_ - b ? LONG_MAX_ : a + b; }

static int put_count(PyObject *d, PyObject *key, long long n) {
    PyObject *v = PyLong_FromLongLong(n);
    if (v == NULL) return -1;
    int rc = PyDict_SetItem(d, key, v);
    Py_DECREF(v);
    return rc;
}

/* _usage(raw, b): the usage dict of raw's counts (a new reference), or NULL with *rc: CS_OK (an empty usage:
 * None), CS_BAIL (a count that is no count: said by the Python builder) or CS_ERR */
static PyObject *convert(PyObject *const raw[N_COUNTS], int *rc) {
    long long v[N_COUNTS] = {0, 0, 0, 0};
    int has[N_COUNTS];
    for (int i = 0; i < N_COUNTS; i++) {
        has[i] = count_of(raw[i], &v[i]);
        if (has[i] == 2) {
            *rc = CS_BAIL;
            return NULL;
        }
    }
    *rc = CS_OK;
    int has_in = has[0], has_out = has[3], has_read = has[2];
    long long total_in = has_in ? sat_add(sat_add(v[0], has[1] ? v[1] : 0), has_read ? v[2] : 0) : 0;
    if (!has_in && !has_out && !has_read) return NULL;
    PyObject *d = PyDict_New();
    if (d == NULL) goto fail;
    if (has_in && put_count(d, A_S(inputTokens), total_in) < 0) goto fail;
    if (has_out && put_count(d, A_S(outputTokens), v[3]) < 0) goto fail;
    if (has_read && put_count(d, A_S(cachedTokens), v[2]) < 0) goto fail;
    if (has_in && has_out && put_count(d, A_S(totalTokens), sat_add(total_in, v[3])) < 0) goto fail;
    return d;
fail:
    Py_XDECREF(d);
    *rc = CS_ERR;
    return NULL;
}

/* StreamBuilder.set_usage(usage) for a usage (a dict, not empty): the one held for later taken first */
static int set_usage(CS *b, AState *s, PyObject *usage) {
    if (s->has_held) {
        s->has_held = 0;
        int rc;
        PyObject *earlier = convert(s->held, &rc);
        for (int i = 0; i < N_COUNTS; i++) Py_CLEAR(s->held[i]);
        if (rc != CS_OK) return rc;
        if (earlier != NULL) Py_XSETREF(b->usage, earlier); /* self.usage = earlier */
    }
    return cs_usage(b, usage);
}

/* StreamBuilder._settle_usage: the usage held for later, converted when the reply ends */
static int settle_usage(CS *b, AState *s) {
    if (!s->has_held) return CS_OK;
    s->has_held = 0;
    int rc;
    PyObject *usage = convert(s->held, &rc);
    for (int i = 0; i < N_COUNTS; i++) Py_CLEAR(s->held[i]);
    if (usage == NULL) return rc;
    rc = cs_usage(b, usage);
    Py_DECREF(usage);
    return rc;
}

/* StreamParser._add_usage(u) */
static int add_usage(CS *b, AState *s, PyObject *u) {
    if (u == NULL || u == Py_None) return CS_OK;
    if (!PyDict_CheckExact(u)) return CS_BAIL; /* no_usage: said */
    PyObject *keys[N_COUNTS] = {A_S(input_tokens), A_S(cache_creation_input_tokens), A_S(cache_read_input_tokens),
                                A_S(output_tokens)};
    for (int i = 0; i < N_COUNTS; i++) {
        PyObject *v = get(u, keys[i]);
        if (v == NULL && PyErr_Occurred()) return CS_ERR;
        if (v != NULL && v != Py_None) Py_XSETREF(s->counts[i], Py_NewRef(v));
    }
    /* usage_later(_usage, dict(self._usage), "input_tokens"): held when its input count is an int >= 0 */
    PyObject *n = s->counts[0];
    int held = 0;
    if (n != NULL && PyLong_CheckExact(n)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(n, &overflow);
        if (v == -1 && PyErr_Occurred()) return CS_ERR;
        held = overflow > 0 || (overflow == 0 && v >= 0);
    }
    if (held) {
        s->has_held = 1;
        for (int i = 0; i < N_COUNTS; i++) Py_XSETREF(s->held[i], Py_XNewRef(s->counts[i]));
        return CS_OK;
    }
    int rc;
    PyObject *usage = convert(s->counts, &rc);
    if (usage == NULL) return rc;
    rc = set_usage(b, s, usage);
    Py_DECREF(usage);
    return rc;
}

/* ---- notes ---------------------------------------------------------------------------------------------- */

/* StreamBuilder.not_kept(key, f"{what} ({key}: {_shown(value)}) is not kept (the message has no place for it)") */
static int note(CS *b, PyObject *key, const char *what, PyObject *value) {
    PyObject *raw = PyObject_CallOneArg(cs_dumps, value);
    if (raw == NULL) { /* nested too deep to write: said another way */
        PyErr_Clear();
        return CS_BAIL;
    }
    PyObject *shown = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw), NULL);
    Py_DECREF(raw);
    if (shown == NULL) return CS_ERR;
    if (PyUnicode_GET_LENGTH(shown) > 200) { /* text[:200] + "..." */
        PyObject *cut = PyUnicode_Substring(shown, 0, 200);
        Py_DECREF(shown);
        if (cut == NULL) return CS_ERR;
        shown = PyUnicode_FromFormat("%U...", cut);
        Py_DECREF(cut);
        if (shown == NULL) return CS_ERR;
    }
    PyObject *message =
        PyUnicode_FromFormat("%s (%U: %U) is not kept (the message has no place for it)", what, key, shown);
    Py_DECREF(shown);
    if (message == NULL) return CS_ERR;
    int rc = cs_not_kept(b, key, message);
    Py_DECREF(message);
    return rc;
}

/* _ending_not_kept(b, holder) */
static int ending_not_kept(CS *b, PyObject *holder) {
    struct {
        PyObject *key;
        const char *what;
    } items[3] = {{A_S(stop_sequence), "the stop sequence that ended the reply"},
                  {A_S(stop_details), "stop_details (why the reply stopped)"},
                  {A_S(container), "the code execution container"}};
    for (int i = 0; i < 3; i++) {
        PyObject *v = get(holder, items[i].key);
        if (v == NULL && PyErr_Occurred()) return CS_ERR;
        int t = truthy(v);
        if (t < 0) return CS_ERR;
        if (t) {
            int rc = note(b, items[i].key, items[i].what, v);
            if (rc != CS_OK) return rc;
        }
    }
    return CS_OK;
}

/* _request_not_kept(b, holder): said when it says something (an object of nulls or empties: nothing) */
static int request_not_kept(CS *b, PyObject *holder) {
    struct {
        PyObject *key;
        const char *what;
    } items[3] = {
        {A_S(context_management), "the context edits the API applied to the request"},
        {A_S(input_transformations),
         "the changes the API made to the request's input (blocks dropped or let through)"},
        {A_S(diagnostics), "the request's diagnostics (why the prompt cache missed)"}};
    for (int i = 0; i < 3; i++) {
        PyObject *v = get(holder, items[i].key);
        if (v == NULL && PyErr_Occurred()) return CS_ERR;
        int t = 0;
        if (v != NULL && PyDict_CheckExact(v)) { /* any(value.values()) */
            Py_ssize_t pos = 0;
            PyObject *k, *x;
            while (!t && PyDict_Next(v, &pos, &k, &x))
                if ((t = truthy(x)) < 0) return CS_ERR;
        } else if ((t = truthy(v)) < 0) {
            return CS_ERR;
        }
        if (t) {
            int rc = note(b, items[i].key, items[i].what, v);
            if (rc != CS_OK) return rc;
        }
    }
    return CS_OK;
}

/* ---- the payloads ------------------------------------------------------------------------------------ */

/* _finish(b, reason) */
static int finish(CS *b, PyObject *reason) {
    if (reason == NULL || !PyUnicode_Check(reason) || PyUnicode_GET_LENGTH(reason) == 0) return CS_OK;
    int rc = cs_finish(b, reason, STR_IS(reason, "tool_use"), STR_IS(reason, "end_turn") ||
                                                                   STR_IS(reason, "stop_sequence"));
    if (rc == CS_OK && STR_IS(reason, "refusal")) cs_refused(b);
    return rc;
}

/* `value or ""` of a text field: value when it is true, else "" (borrowed); NULL with an exception */
static PyObject *or_empty(PyObject *v) {
    int t = truthy(v);
    if (t < 0) return NULL;
    return t ? v : CS_S(empty);
}

/* StreamParser._message_start(m) */
static int message_start(CS *b, AState *s, PyObject *m) {
    PyObject *id, *v;
    int rc;
    s->started = 1;
    id = get(m, A_S(id));
    if (id == NULL && PyErr_Occurred()) return CS_ERR;
    if (b->opened) { /* a second message_start of another message: said (problem order) */
        int t = truthy(id);
        if (t < 0) return CS_ERR;
        if (t) {
            int ne = PyObject_RichCompareBool(id, b->response_id, Py_NE);
            if (ne < 0) return CS_ERR;
            if (ne) return CS_BAIL;
        }
    }
    v = get(m, A_S(model));
    if (v == NULL && PyErr_Occurred()) return CS_ERR;
    cs_identify(b, id, v);
    v = get(m, A_S(usage));
    if (v == NULL && PyErr_Occurred()) return CS_ERR;
    if ((rc = add_usage(b, s, v)) != CS_OK) return rc;
    if ((rc = cs_open(b)) != CS_OK) return rc;
    v = get(m, A_S(content));
    if (v == NULL && PyErr_Occurred()) return CS_ERR;
    if (v != NULL && PyList_CheckExact(v) && PyList_GET_SIZE(v) > 0) return CS_BAIL; /* a message that comes whole */
    v = get(m, A_S(stop_reason));
    if (v == NULL && PyErr_Occurred()) return CS_ERR;
    int t = truthy(v);
    if (t < 0) return CS_ERR;
    if (t && (rc = finish(b, v)) != CS_OK) return rc;
    if ((rc = ending_not_kept(b, m)) != CS_OK) return rc;
    return request_not_kept(b, m);
}

/* _block(b, index, block, whole=False): a block as content_block_start gives it */
static int block_start(CS *b, AState *s, PyObject *obj) {
    PyObject *block = get(obj, A_S(content_block));
    if (block == NULL) return PyErr_Occurred() ? CS_ERR : CS_BAIL; /* KeyError: said */
    if (!PyDict_CheckExact(block)) return CS_BAIL;
    PyObject *index = get(obj, A_S(index));
    if (index == NULL && PyErr_Occurred()) return CS_ERR;
    int rc;
    ASlot *sl = slot_of(s, index, &rc);
    if (sl == NULL) return rc;
    PyObject *kind = get(block, A_S(type));
    if (kind == NULL && PyErr_Occurred()) return CS_ERR;
    PyObject *v;
    if (STR_IS(kind, "text")) {
        sl->kind = K_TEXT;
        v = get(block, A_S(text));
        if (v == NULL && PyErr_Occurred()) return CS_ERR;
        if ((v = or_empty(v)) == NULL) return CS_ERR;
        if ((rc = cs_text(b, sl->key, v, NULL)) != CS_OK) return rc;
        v = get(block, A_S(citations));
        if (v == NULL && PyErr_Occurred()) return CS_ERR;
        int t = truthy(v);
        return t < 0 ? CS_ERR : t ? CS_BAIL : CS_OK; /* citations: not kept (said) */
    }
    if (STR_IS(kind, "thinking")) {
        sl->kind = K_THINKING;
        v = get(block, A_S(thinking));
        if (v == NULL && PyErr_Occurred()) return CS_ERR;
        if ((v = or_empty(v)) == NULL) return CS_ERR;
        if ((rc = cs_thinking(b, sl->key, v, NULL, NULL)) != CS_OK) return rc;
        v = get(block, A_S(signature));
        if (v == NULL && PyErr_Occurred()) return CS_ERR;
        if (v != NULL && PyUnicode_Check(v)) return cs_signature(b, sl->key, v);
        return CS_OK;
    }
    if (STR_IS(kind, "redacted_thinking")) {
        sl->kind = K_REDACTED;
        v = get(block, A_S(data));
        if (v == NULL && PyErr_Occurred()) return CS_ERR;
        if ((v = or_empty(v)) == NULL) return CS_ERR;
        if (!PyUnicode_CheckExact(v)) return CS_BAIL; /* str(data) of another type */
        return cs_thinking(b, sl->key, CS_S(empty), NULL, v);
    }
    if (STR_IS(kind, "tool_use")) {
        v = get(block, A_S(input)); /* _inputs[slot] = json_text(input if not None else {}): "{}" taken only */
        if (v == NULL && PyErr_Occurred()) return CS_ERR;
        if (v != NULL && v != Py_None && !(PyDict_CheckExact(v) && PyDict_GET_SIZE(v) == 0)) return CS_BAIL;
        sl->input = 1;
        sl->kind = K_TOOL;
        PyObject *id = get(block, A_S(id)), *name = get(block, A_S(name));
        if ((id == NULL || name == NULL) && PyErr_Occurred()) return CS_ERR;
        int t = truthy(id);
        if (t < 0) return CS_ERR;
        if (!t) id = NULL; /* none (or a false value): minted */
        if (cs_open_call(b, sl->key) != NULL) return CS_BAIL; /* a call open at its index: ended or renamed */
        if (PyDict_GET_SIZE(block) > 4) { /* _call_not_kept: a caller that is not "direct", a toolset */
            PyObject *caller = get(block, A_S(caller));
            if (caller == NULL && PyErr_Occurred()) return CS_ERR;
            if ((t = truthy(caller)) < 0) return CS_ERR;
            if (t) {
                PyObject *ck = caller;
                if (PyDict_CheckExact(caller)) {
                    ck = get(caller, A_S(type));
                    if (ck == NULL && PyErr_Occurred()) return CS_ERR;
                }
                if (!STR_IS(ck, "direct")) return CS_BAIL;
            }
            v = get(block, A_S(toolset_name));
            if (v == NULL && PyErr_Occurred()) return CS_ERR;
            if ((t = truthy(v)) < 0) return CS_ERR;
            if (t) return CS_BAIL;
        }
        if (name == NULL) return CS_BAIL; /* a call of no name waits for it */
        return cs_call_start(b, sl->key, id, name, NULL, NULL); /* (a name that is no text or empty: gives up) */
    }
    return CS_BAIL; /* a server tool's block, a block not kept, a type not supported */
}

enum { D_TEXT = 1, D_JSON, D_THINKING, D_SIGNATURE }; /* the delta types read */

/* The delta of type dk for the block sl (the payload's delta.get(<its field>) in v, borrowed; NULL: none) */
static int apply_delta(CS *b, ASlot *sl, int dk, PyObject *v) {
    /* a delta of a type its block is not (StreamParser._misplaced): said */
    static const int block_of[] = {0, K_TEXT, K_TOOL, K_THINKING, K_THINKING};
    if (sl->kind != block_of[dk]) return CS_BAIL;
    if ((v = or_empty(v)) == NULL) return CS_ERR;
    switch (dk) {
    case D_TEXT: return cs_text(b, sl->key, v, NULL);
    case D_THINKING: return cs_thinking(b, sl->key, v, NULL, NULL);
    case D_SIGNATURE: return cs_signature(b, sl->key, v); /* the whole signature: the last one wins */
    default: {
        if (!PyUnicode_CheckExact(v)) return CS_BAIL;
        CSCall *call = cs_open_call(b, sl->key);
        if (call == NULL) return CS_BAIL; /* (no call started there: one of no name would wait for it) */
        return cs_call_args(b, call, v);
    }
    }
}

/* content_block_delta */
static int block_delta(CS *b, AState *s, PyObject *obj) {
    PyObject *delta = get(obj, A_S(delta));
    if (delta == NULL) return PyErr_Occurred() ? CS_ERR : CS_BAIL;
    if (!PyDict_CheckExact(delta)) return CS_BAIL;
    PyObject *dkind = get(delta, A_S(type));
    if (dkind == NULL && PyErr_Occurred()) return CS_ERR;
    PyObject *index = get(obj, A_S(index));
    if (index == NULL && PyErr_Occurred()) return CS_ERR;
    int rc;
    ASlot *sl = slot_of(s, index, &rc);
    if (sl == NULL) return rc;
    int dk;
    PyObject *field;
    if (STR_IS(dkind, "text_delta")) dk = D_TEXT, field = A_S(text);
    else if (STR_IS(dkind, "input_json_delta")) dk = D_JSON, field = A_S(partial_json);
    else if (STR_IS(dkind, "thinking_delta")) dk = D_THINKING, field = A_S(thinking);
    else if (STR_IS(dkind, "signature_delta")) dk = D_SIGNATURE, field = A_S(signature);
    else return CS_BAIL; /* citations_delta (not kept), or a type not supported: said */
    PyObject *v = get(delta, field);
    if (v == NULL && PyErr_Occurred()) return CS_ERR;
    return apply_delta(b, sl, dk, v);
}

/* ---- content_block_delta's bytes, read with no dict ------------------------------------------------------
 * The API's deltas are {"type":"content_block_delta","index":N,"delta":{"type":T,F:S}} (JSON whitespace between
 * the tokens or not) with T one of the delta types read and F its field: such a payload is read here, the string S
 * by orjson's rules (cs_json_string), as orjson.loads and payload() would read it; any other goes to orjson. */

static inline const char *skip_ws(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* Past the token lit after whitespace at p, or NULL */
static inline const char *token(const char *p, const char *e, const char *lit, size_t n) {
    if (p == NULL) return NULL;
    p = skip_ws(p, e);
    return (size_t)(e - p) >= n && memcmp(p, lit, n) == 0 ? p + n : NULL;
}
#define TOKEN(p, e, lit) token((p), (e), lit, sizeof(lit) - 1)

/* Past the JSON string after whitespace at p, its body (between the quotes) in [*body, *bend); or NULL */
static const char *string_at(const char *p, const char *e, const char **body, const char **bend) {
    if (p == NULL) return NULL;
    p = skip_ws(p, e);
    if (p == e || *p != '"') return NULL;
    *body = ++p;
    for (const char *q; (q = memchr(p, '"', (size_t)(e - p))) != NULL; p = q + 1) {
        const char *k = q; /* the quote ends the string unless an odd run of backslashes escapes it */
        while (k > *body && k[-1] == '\\') k--;
        if ((q - k) % 2 == 0) {
            *bend = q;
            return q + 1;
        }
    }
    return NULL;
}

static int body_is(const char *p, const char *e, const char *lit) {
    return cs_is(p, e - p, lit);
}

/* Past the JSON int of at most 18 digits after whitespace at p (its value in *out), or NULL */
static const char *int_at(const char *p, const char *e, long long *out) {
    if (p == NULL) return NULL;
    p = skip_ws(p, e);
    long long v = 0;
    const char *digits = p;
    while (p < e && *p >= '0' && *p <= '9' && p - digits < 18) v = v * 10 + (*p++ - '0');
    if (p == digits || (p - digits > 1 && *digits == '0')) return NULL;
    *out = v;
    return p;
}

static ASlot *slot_at(AState *s, long long index) {
    for (int i = 0; i < s->nslots; i++)
        if (s->slots[i].index == index) return &s->slots[i];
    return NULL;
}

static int stop_slot(CS *b, ASlot *sl);
static int message_stop(CSRun *r);

/* Also {"type":"content_block_stop","index":N}, {"type":"message_stop"} and {"type":"ping"}, read so. */
static int raw_payload(CSRun *r, const char *ev, Py_ssize_t evlen, const char *data, Py_ssize_t n) {
    (void)ev;
    (void)evlen;
    const char *e = data + n, *p = data, *kb = NULL, *ke = NULL, *tb = NULL, *te = NULL, *fb = NULL, *fe = NULL,
               *vb = NULL, *ve = NULL;
    long long index = 0;
    p = TOKEN(p, e, "{");
    p = TOKEN(p, e, "\"type\"");
    p = TOKEN(p, e, ":");
    p = string_at(p, e, &kb, &ke);
    if (p == NULL) return CS_PASS;
    AState *s = r->state;
    if (body_is(kb, ke, "content_block_stop")) {
        p = TOKEN(p, e, ",");
        p = TOKEN(p, e, "\"index\"");
        p = TOKEN(p, e, ":");
        p = int_at(p, e, &index);
        p = TOKEN(p, e, "}");
        if (p == NULL || skip_ws(p, e) != e) return CS_PASS;
        ASlot *sl = slot_at(s, index);
        return sl == NULL ? CS_OK : stop_slot(r->b, sl); /* (no block started at it: nothing ends) */
    }
    if (body_is(kb, ke, "message_stop") || body_is(kb, ke, "ping")) {
        p = TOKEN(p, e, "}");
        if (p == NULL || skip_ws(p, e) != e) return CS_PASS;
        return *kb == 'p' ? CS_OK : message_stop(r);
    }
    if (!body_is(kb, ke, "content_block_delta")) return CS_PASS;
    p = TOKEN(p, e, ",");
    p = TOKEN(p, e, "\"index\"");
    p = TOKEN(p, e, ":");
    p = int_at(p, e, &index);
    p = TOKEN(p, e, ",");
    p = TOKEN(p, e, "\"delta\"");
    p = TOKEN(p, e, ":");
    p = TOKEN(p, e, "{");
    p = TOKEN(p, e, "\"type\"");
    p = TOKEN(p, e, ":");
    p = string_at(p, e, &tb, &te);
    p = TOKEN(p, e, ",");
    p = string_at(p, e, &fb, &fe);
    p = TOKEN(p, e, ":");
    p = string_at(p, e, &vb, &ve);
    p = TOKEN(p, e, "}");
    p = TOKEN(p, e, "}");
    if (p == NULL || skip_ws(p, e) != e) return CS_PASS;
    int dk;
    if (body_is(tb, te, "text_delta") && body_is(fb, fe, "text")) dk = D_TEXT;
    else if (body_is(tb, te, "input_json_delta") && body_is(fb, fe, "partial_json")) dk = D_JSON;
    else if (body_is(tb, te, "thinking_delta") && body_is(fb, fe, "thinking")) dk = D_THINKING;
    else if (body_is(tb, te, "signature_delta") && body_is(fb, fe, "signature")) dk = D_SIGNATURE;
    else return CS_PASS;
    ASlot *sl = slot_at(s, index);
    if (sl == NULL) return CS_BAIL; /* a block that did not start: said */
    PyObject *v = cs_json_string(vb, ve);
    if (v == NULL) return CS_ERR;
    int rc = v == Py_None ? CS_PASS : apply_delta(r->b, sl, dk, v);
    Py_DECREF(v);
    return rc;
}

/* content_block_stop */
static int block_stop(CS *b, AState *s, PyObject *obj) {
    PyObject *index = get(obj, A_S(index));
    if (index == NULL && PyErr_Occurred()) return CS_ERR;
    int rc;
    ASlot *sl = slot_of(s, index, &rc);
    if (sl == NULL) {
        /* an index of another type (none, null, a bool, a float, an object...) but str, or an int beyond 64 bits:
         * its slot f"b{index}" is none a block that started here has (they are ints of 64 bits): nothing ends */
        if (index == NULL || !PyUnicode_Check(index)) return CS_OK;
        /* a str: f"b{index}" is an int's slot when it is an int's text */
        Py_ssize_t n = PyUnicode_GET_LENGTH(index);
        if (!PyUnicode_IS_ASCII(index) || n == 0) return CS_OK;
        const char *t = (const char *)PyUnicode_1BYTE_DATA(index), *d = t + (t[0] == '-');
        if (d == t + n || (d[0] == '0' && t + n - d > 1)) return CS_OK;
        for (const char *p = d; p < t + n; p++)
            if (*p < '0' || *p > '9') return CS_OK;
        return CS_BAIL;
    }
    return stop_slot(b, sl);
}

/* content_block_stop of the block sl */
static int stop_slot(CS *b, ASlot *sl) {
    int rc;
    if (sl->kind != K_NONE) sl->kind = K_ENDED;
    CSCall *call = cs_open_call(b, sl->key);
    if (call == NULL) return cs_end_block(b, sl->key, NULL);
    /* end_tool_call(slot, default_arguments=self._inputs.pop(slot, None)): the start input when no delta came */
    int input = sl->input;
    sl->input = 0;
    if (input && PyList_GET_SIZE(call->text) == 0 && (rc = cs_call_args(b, call, A_S(empty_object))) != CS_OK)
        return rc;
    return cs_call_end(b, call);
}

/* message_stop: the end signal (self.done = True; b.close(ended=True)) */
static int message_stop(CSRun *r) {
    r->done = 1;
    int rc = settle_usage(r->b, r->state);
    return rc != CS_OK ? rc : cs_close(r->b, 1);
}

/* StreamParser.payload(event, obj) */
static int payload(CSRun *r, const char *ev, Py_ssize_t evlen, PyObject *obj) {
    CS *b = r->b;
    AState *s = r->state;
    PyObject *t = get(obj, A_S(type));
    if (t == NULL && PyErr_Occurred()) return CS_ERR;
    const char *k = ev; /* kind = obj.get("type", event) */
    Py_ssize_t kn = evlen;
    if (t != NULL) {
        if (PyUnicode_CheckExact(t) && PyUnicode_IS_ASCII(t)) {
            k = (const char *)PyUnicode_1BYTE_DATA(t);
            kn = PyUnicode_GET_LENGTH(t);
        } else {
            k = "";
            kn = 0; /* (no kind known) */
        }
    }
    if (cs_is(k, kn, "content_block_delta")) return block_delta(b, s, obj);
    if (cs_is(k, kn, "content_block_start")) return block_start(b, s, obj);
    if (cs_is(k, kn, "content_block_stop")) return block_stop(b, s, obj);
    PyObject *v;
    int rc;
    if (cs_is(k, kn, "message_start")) {
        v = get(obj, A_S(message));
        if (v == NULL && PyErr_Occurred()) return CS_ERR;
        int tr = truthy(v);
        if (tr < 0) return CS_ERR;
        if (!tr) { /* obj.get("message") or {} */
            PyObject *m = PyDict_New();
            if (m == NULL) return CS_ERR;
            rc = message_start(b, s, m);
            Py_DECREF(m);
            return rc;
        }
        if (!PyDict_CheckExact(v)) return CS_BAIL;
        return message_start(b, s, v);
    }
    if (cs_is(k, kn, "message_delta")) {
        v = get(obj, A_S(usage));
        if (v == NULL && PyErr_Occurred()) return CS_ERR;
        if ((rc = add_usage(b, s, v)) != CS_OK) return rc;
        v = get(obj, A_S(delta));
        if (v == NULL && PyErr_Occurred()) return CS_ERR;
        int tr = truthy(v);
        if (tr < 0) return CS_ERR;
        if (tr) { /* (obj.get("delta") or {}): an empty one says nothing */
            if (!PyDict_CheckExact(v)) return CS_BAIL;
            PyObject *reason = get(v, A_S(stop_reason));
            if (reason == NULL && PyErr_Occurred()) return CS_ERR;
            if ((rc = finish(b, reason)) != CS_OK || (rc = ending_not_kept(b, v)) != CS_OK) return rc;
        }
        return request_not_kept(b, obj);
    }
    if (cs_is(k, kn, "message_stop")) return message_stop(r);
    if (cs_is(k, kn, "message")) {
        v = get(obj, A_S(content));
        if (v == NULL && PyErr_Occurred()) return CS_ERR;
        if (!s->started && v != NULL && PyList_Check(v)) return CS_BAIL; /* a whole message where a stream was asked */
    }
    if (cs_is(k, kn, "error")) return CS_BAIL;
    if (t == NULL) { /* an error without its type */
        v = get(obj, A_S(error));
        if (v == NULL && PyErr_Occurred()) return CS_ERR;
        if (v != NULL && PyDict_Check(v)) return CS_BAIL;
    }
    if (!cs_is(k, kn, "ping")) s->foreign++; /* an event type not known: skipped */
    return CS_OK;
}

/* StreamParser.end_payloads, and the usage held for later (StreamBuilder.close settles it) */
static int end_payloads(CSRun *r) {
    AState *s = r->state;
    if (!s->started && s->foreign) return CS_BAIL; /* not an Anthropic stream? said */
    return settle_usage(r->b, s);
}

PyObject *cs_anthropic_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (a_strings() < 0) return NULL;
    AState s; /* (its slots are set as they are taken) */
    s.nslots = 0;
    memset(s.counts, 0, sizeof(AState) - offsetof(AState, counts));
    CSRun r = {.payload = payload, .end_payloads = end_payloads, .state = &s, .raw = raw_payload};
    PyObject *out = cs_entry(args, nargs, "anthropic", &r);
    a_clear(&s);
    return out;
}
