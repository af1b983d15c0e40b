/* agentmsg._speedups: the whole-body fast path of providers/openai.py's stream parser (see cstream.h).
 *
 * Chat Completions SSE (and the compatible family's: DashScope's compatible mode, DeepSeek, ...) for the default
 * variant, choice 0 only: text (delta.content), reasoning (reasoning_content / reasoning), refusal, tool calls,
 * usage (usage_dict of _usage), the finish reason, and the not-kept note of logprobs. Anything else gives up
 * (CS_BAIL): another choice, an error, content parts, images, audio, annotations, the legacy function_call, custom
 * tools, thought signatures, a value of a type the Python parser says a problem of, counts that are no plain
 * non-negative ints, payloads of no chunk shape, and every tool call fragment but the clean ones (below).
 *
 * Tool calls. In the OpenAI family the builder waits for a call's id and first argument text before its
 * TOOL_CALL_START (StreamBuilder.ids_expected, tool_call, _ready, _start_ready, _moved_on, _end_call). The clean case
 * reproduced here: a call's first fragment has its index (an int), a non-empty id, a non-empty name and its
 * arguments (a str, possibly empty); its later fragments have the same index, no name, no id or the same one
 * (DashScope sends ""), and arguments (a str or none). A call whose first fragment has no argument text waits:
 * it starts when its own text comes, when a later call's text comes (StreamBuilder's settled), when a text or
 * thinking block opens (_moved_on), or when the reply ends; calls start in the order they appeared. Anything
 * else (a name in a later fragment, a fragment without an index, an id that changes, a second call at an index,
 * a fragment at an index without a call) gives up. */
#include "cstream.h"

/* ---- interned strings ------------------------------------------------------------------------------- */
#define OA_STRINGS(X)                                                                                          \
    X(error, "error") X(id, "id") X(model, "model") X(usage, "usage") X(x_groq, "x_groq") X(choices, "choices") \
    X(index, "index") X(refusal, "refusal") X(function, "function") X(custom, "custom") X(name, "name")        \
    X(arguments, "arguments") X(thought_signature, "thought_signature") X(extra_content, "extra_content")      \
    X(prompt_tokens_details, "prompt_tokens_details") X(cached_tokens, "cached_tokens")                        \
    X(prompt_cache_hit_tokens, "prompt_cache_hit_tokens") X(prompt_tokens, "prompt_tokens")                    \
    X(completion_tokens, "completion_tokens") X(total_tokens, "total_tokens")                                  \
    X(completion_tokens_details, "completion_tokens_details") X(reasoning_tokens, "reasoning_tokens")          \
    X(prompt_filter_results, "prompt_filter_results") X(moderation, "moderation") X(citations, "citations")    \
    X(search_results, "search_results") X(inputTokens, "inputTokens") X(outputTokens, "outputTokens")          \
    X(cachedTokens, "cachedTokens") X(totalTokens, "totalTokens") X(slot_text, "text")                         \
    X(slot_thinking, "thinking") X(logprobs_key, "logprobs/0")                                                 \
    X(logprobs_note, "log probabilities (logprobs) are not kept (the message has no place for them)")

#define CS_PREFIX oa_s_
OA_STRINGS(CS_STRING_VAR)
#define OA(var) (oa_s_##var)

static int oa_strings(void) {
    if (oa_s_error != NULL) return 0;
    OA_STRINGS(CS_STRING_INTERN)
    return 0;
}

/* d[key] (an interned str): borrowed, NULL when absent. A payload's dicts have str keys only (orjson), whose
 * comparison raises nothing. */
static inline PyObject *get(PyObject *d, PyObject *key) { return PyDict_GetItemWithError(d, key); }

/* Python's truth of a JSON value (which raises nothing); an absent value is false. */
static inline int truthy(PyObject *v) { return v != NULL && v != Py_None && PyObject_IsTrue(v) == 1; }

/* _has_data: not empty, and not an object of nulls ({"content": null}). */
static int has_data(PyObject *v) {
    if (v == NULL) return 0;
    if (PyDict_CheckExact(v)) {
        Py_ssize_t pos = 0;
        PyObject *k, *x;
        while (PyDict_Next(v, &pos, &k, &x))
            if (truthy(x)) return 1;
        return 0;
    }
    return truthy(v);
}

/* A str field that may be absent: *out the str when it is a non-empty one, else NULL; CS_BAIL when it is no str
 * and not null (StreamBuilder.string says a problem of it). */
static inline int text_field(PyObject *v, PyObject **out) {
    *out = NULL;
    if (v == NULL || v == Py_None) return CS_OK;
    if (!PyUnicode_CheckExact(v)) return CS_BAIL;
    if (PyUnicode_GET_LENGTH(v) > 0) *out = v;
    return CS_OK;
}

/* ---- the parser's state: the calls (StreamBuilder's _Call, for the clean case) ------------------------ */
typedef struct {
    long long index;    /* its tool_calls index */
    PyObject *key;      /* the index (int), owned */
    PyObject *id;       /* owned */
    PyObject *name;     /* owned */
    PyObject *pending;  /* its first argument text while it waits: owned or NULL (it has no text yet) */
    Py_ssize_t seq;     /* its place among the calls, from 1 (_Call.seq) */
    Py_ssize_t started; /* its place in b->calls once started, -1 while it waits */
} OACall;

typedef struct {
    OACall *calls; /* every call, in the order they appeared; they start in that order, so the waiting ones are */
    Py_ssize_t n, cap, waiting; /* calls[waiting:] */
    Py_ssize_t settled;         /* _Choice.settled: the calls before this seq have their whole name */
} OAState;

static void oa_clear(OAState *st) {
    for (Py_ssize_t i = 0; i < st->n; i++) {
        Py_CLEAR(st->calls[i].key);
        Py_CLEAR(st->calls[i].id);
        Py_CLEAR(st->calls[i].name);
        Py_CLEAR(st->calls[i].pending);
    }
    PyMem_Free(st->calls);
    st->calls = NULL;
    st->n = st->cap = st->waiting = 0;
}

/* StreamBuilder._start_ready (moved_on: _moved_on): the waiting calls that are ready start, in order, up to the
 * first that is not. Each waiting call has its id and name (the clean case), so it is ready once it has argument
 * text, a later call's text came (settled), or the reply moved on. */
static int start_ready(CS *b, OAState *st, int moved_on) {
    while (st->waiting < st->n) {
        OACall *w = &st->calls[st->waiting];
        if (!(moved_on || w->pending != NULL || w->seq < st->settled)) break;
        int rc = cs_call_start(b, w->key, w->id, w->name, NULL, w->pending);
        if (rc != CS_OK) return rc;
        w->started = b->ncalls - 1;
        Py_CLEAR(w->pending);
        st->waiting++;
    }
    return CS_OK;
}

/* StreamBuilder._open's _moved_on: a block of kind opens in slot (no such block is open there) while calls wait. */
static int before_block(CS *b, OAState *st, PyObject *slot, int kind) {
    if (st->waiting == st->n) return CS_OK;
    int k = cs_block_kind(b, slot);
    if (k < 0) return CS_ERR;
    return k == kind ? CS_OK : start_ready(b, st, 1);
}

/* One fragment of delta.tool_calls (_tool_calls, StreamBuilder.tool_call), clean cases only. */
static int tool_call(CS *b, OAState *st, PyObject *tc) {
    PyObject *index = get(tc, OA(index));
    if (index == NULL || !PyLong_CheckExact(index)) return CS_BAIL; /* ("position", n) keys; bools */
    int overflow;
    long long k = PyLong_AsLongLongAndOverflow(index, &overflow);
    if (overflow || (k == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return CS_BAIL;
    }
    PyObject *fn = get(tc, OA(function));
    if (fn == NULL || fn == Py_None) {
        PyObject *cu = get(tc, OA(custom));
        if (cu != NULL && PyDict_CheckExact(cu)) return CS_BAIL; /* a custom tool's call */
        fn = NULL;
    } else if (!PyDict_CheckExact(fn)) {
        fn = NULL; /* as_object: {} */
    }
    PyObject *id, *name, *args = NULL;
    if (text_field(get(tc, OA(id)), &id) != CS_OK) return CS_BAIL;
    if (id != NULL && PyUnicode_READ_CHAR(id, 0) == 0) return CS_BAIL; /* "\x00...": the builder's mark of no id */
    if (fn != NULL) {
        if (text_field(get(fn, OA(name)), &name) != CS_OK) return CS_BAIL;
        args = get(fn, OA(arguments));
        if (args == Py_None) args = NULL;
        if (args != NULL && !PyUnicode_CheckExact(args)) return CS_BAIL; /* JSON arguments, or said */
        PyObject *fsig = get(fn, OA(thought_signature));
        if (fsig != NULL && fsig != Py_None) return CS_BAIL;
    } else {
        name = NULL;
    }
    PyObject *sig = get(tc, OA(thought_signature)), *extra = get(tc, OA(extra_content));
    if ((sig != NULL && sig != Py_None) || (extra != NULL && extra != Py_None)) return CS_BAIL;
    int rc = cs_open(b); /* (StreamBuilder.tool_call opens the choice) */
    if (rc != CS_OK) return rc;
    int has_text = args != NULL && PyUnicode_GET_LENGTH(args) > 0;

    OACall *call = NULL;
    for (Py_ssize_t i = 0; i < st->n; i++)
        if (st->calls[i].index == k) {
            call = &st->calls[i];
            break;
        }
    if (call != NULL) { /* a later fragment: no name, and no id or the call's own */
        if (name != NULL) return CS_BAIL;
        if (id != NULL && id != call->id) {
            int eq = PyObject_RichCompareBool(id, call->id, Py_EQ);
            if (eq < 0) return CS_ERR;
            if (!eq) return CS_BAIL; /* another call at the index: the open one ends (_end_call) */
        }
        if (!has_text) return CS_OK;
        if (call->started >= 0) return cs_call_args(b, &b->calls[call->started], args);
        /* it waits (so it has no text yet): its first text, which settles the calls before it */
        Py_XSETREF(call->pending, Py_NewRef(args));
        if (call->seq > st->settled) st->settled = call->seq;
        return start_ready(b, st, 0);
    }
    /* a new call: its id and name come with its first fragment */
    if (id == NULL || name == NULL) return CS_BAIL;
    if (st->n == st->cap) {
        Py_ssize_t cap = st->cap ? st->cap * 2 : 4;
        OACall *calls = PyMem_Realloc(st->calls, sizeof(OACall) * (size_t)cap);
        if (calls == NULL) {
            PyErr_NoMemory();
            return CS_ERR;
        }
        st->calls = calls;
        st->cap = cap;
    }
    call = &st->calls[st->n++];
    call->index = k;
    call->key = Py_NewRef(index);
    call->id = Py_NewRef(id);
    call->name = Py_NewRef(name);
    call->pending = has_text ? Py_NewRef(args) : NULL;
    call->seq = st->n;
    call->started = -1;
    if (has_text) st->settled = call->seq;
    return start_ready(b, st, 0);
}

/* The fields of a choice and of its delta the parser reads, found in one pass over the dict (a delta has a key or
 * two, a choice four or five: one pass costs less than a lookup of each field the parser may read). */
enum {
    D_REASONING_CONTENT, D_REASONING, D_CONTENT, D_IMAGES, D_REFUSAL, D_ANNOTATIONS, D_AUDIO, D_REASONING_DETAILS,
    D_TOOL_CALLS, D_FUNCTION_CALL, D_N
};
enum {
    C_INDEX, C_DELTA, C_MESSAGES, C_MESSAGE, C_LOGPROBS, C_CONTENT_FILTER_RESULTS, C_FINISH_REASON, C_USAGE,
    C_STOP_REASON, C_MATCHED_STOP, C_N
};

static inline int is(const char *s, Py_ssize_t n, const char *lit, Py_ssize_t litn) {
    return n == litn && memcmp(s, lit, (size_t)n) == 0;
}
#define IS(lit) is(s, n, lit, (Py_ssize_t)sizeof(lit) - 1)

/* The D_ field a delta's key names, -1 for another key. */
static int delta_key(PyObject *k) {
    if (!PyUnicode_CheckExact(k) || !PyUnicode_IS_COMPACT_ASCII(k)) return -1;
    const char *s = (const char *)PyUnicode_1BYTE_DATA(k);
    Py_ssize_t n = PyUnicode_GET_LENGTH(k);
    switch (n) {
    case 5: return IS("audio") ? D_AUDIO : -1;
    case 6: return IS("images") ? D_IMAGES : -1;
    case 7: return IS("content") ? D_CONTENT : IS("refusal") ? D_REFUSAL : -1;
    case 9: return IS("reasoning") ? D_REASONING : -1;
    case 10: return IS("tool_calls") ? D_TOOL_CALLS : -1;
    case 11: return IS("annotations") ? D_ANNOTATIONS : -1;
    case 13: return IS("function_call") ? D_FUNCTION_CALL : -1;
    case 17: return IS("reasoning_content") ? D_REASONING_CONTENT : IS("reasoning_details") ? D_REASONING_DETAILS : -1;
    default: return -1;
    }
}

/* The C_ field a choice's key names, -1 for another key. */
static int choice_key(PyObject *k) {
    if (!PyUnicode_CheckExact(k) || !PyUnicode_IS_COMPACT_ASCII(k)) return -1;
    const char *s = (const char *)PyUnicode_1BYTE_DATA(k);
    Py_ssize_t n = PyUnicode_GET_LENGTH(k);
    switch (n) {
    case 5: return IS("index") ? C_INDEX : IS("delta") ? C_DELTA : IS("usage") ? C_USAGE : -1;
    case 7: return IS("message") ? C_MESSAGE : -1;
    case 8: return IS("messages") ? C_MESSAGES : IS("logprobs") ? C_LOGPROBS : -1;
    case 11: return IS("stop_reason") ? C_STOP_REASON : -1;
    case 12: return IS("matched_stop") ? C_MATCHED_STOP : -1;
    case 13: return IS("finish_reason") ? C_FINISH_REASON : -1;
    case 22: return IS("content_filter_results") ? C_CONTENT_FILTER_RESULTS : -1;
    default: return -1;
    }
}
#undef IS

/* v[f] = d[<the key of field f>] (borrowed, NULL when absent) for each field the dict has. */
static void fields_of(PyObject *d, int (*key_of)(PyObject *), PyObject **v, int nv) {
    memset(v, 0, sizeof(PyObject *) * (size_t)nv);
    Py_ssize_t pos = 0;
    PyObject *k, *x;
    while (PyDict_Next(d, &pos, &k, &x)) {
        int f = key_of(k);
        if (f >= 0) v[f] = x;
    }
}

/* _message then _tool_calls for a choice's delta. */
static int delta_of(CS *b, OAState *st, PyObject *m) {
    PyObject *v[D_N], *th, *text, *refusal;
    int rc;
    fields_of(m, delta_key, v, D_N);
    /* _reasoning: reasoning_content, else reasoning */
    if (text_field(v[D_REASONING_CONTENT], &th) != CS_OK) return CS_BAIL;
    if (th == NULL && text_field(v[D_REASONING], &th) != CS_OK) return CS_BAIL;
    if (th != NULL) {
        if ((rc = before_block(b, st, OA(slot_thinking), CS_THINKING)) != CS_OK) return rc;
        if ((rc = cs_thinking(b, OA(slot_thinking), th, NULL, NULL)) != CS_OK) return rc;
    }
    PyObject *content = v[D_CONTENT];
    if (content != NULL && PyList_CheckExact(content)) return CS_BAIL; /* content parts */
    if (text_field(content, &text) != CS_OK) return CS_BAIL;
    if (text != NULL) {
        if ((rc = cs_open(b)) != CS_OK || (rc = before_block(b, st, OA(slot_text), CS_TEXT)) != CS_OK) return rc;
        if ((rc = cs_text(b, OA(slot_text), text, NULL)) != CS_OK) return rc;
    }
    if (truthy(v[D_IMAGES])) return CS_BAIL;
    if (text_field(v[D_REFUSAL], &refusal) != CS_OK) return CS_BAIL;
    if (refusal != NULL) { /* a text block of its own (slot "refusal"), and the reply says it declined */
        if ((rc = cs_open(b)) != CS_OK || (rc = before_block(b, st, OA(refusal), CS_TEXT)) != CS_OK) return rc;
        if ((rc = cs_text(b, OA(refusal), refusal, NULL)) != CS_OK) return rc;
        cs_refused(b);
    }
    if (truthy(v[D_ANNOTATIONS]) || truthy(v[D_AUDIO]) || truthy(v[D_REASONING_DETAILS])) return CS_BAIL;
    PyObject *calls = v[D_TOOL_CALLS];
    if (calls != NULL && calls != Py_None) {
        if (!PyList_CheckExact(calls)) return CS_BAIL;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(calls); i++) {
            PyObject *tc = PyList_GET_ITEM(calls, i);
            if (!PyDict_CheckExact(tc)) continue; /* skipped by _tool_calls */
            if ((rc = tool_call(b, st, tc)) != CS_OK) return rc;
        }
    }
    if (v[D_FUNCTION_CALL] != NULL && v[D_FUNCTION_CALL] != Py_None) return CS_BAIL; /* the legacy call */
    return CS_OK;
}

/* ---- usage (_usage, safe_int, usage_dict) ------------------------------------------------------------ */
#define OA_COUNT_MAX (1LL << 60) /* larger counts give up (the Python sums saturate at Java's long maximum) */

/* safe_int for a plain count: 1 with *n, 0 when absent or null, CS_BAIL for anything else (said, or a float). */
static int count(PyObject *v, long long *n) {
    if (v == NULL || v == Py_None) return 0;
    if (!PyLong_CheckExact(v)) return -1;
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || x < 0 || x >= OA_COUNT_MAX) {
        PyErr_Clear();
        return -1;
    }
    *n = x;
    return 1;
}

static int set_count(PyObject *d, PyObject *key, long long n) {
    PyObject *v = PyLong_FromLongLong(n);
    if (v == NULL) return -1;
    int rc = PyDict_SetItem(d, key, v);
    Py_DECREF(v);
    return rc;
}

static int read_usage(CS *b, PyObject *u) {
    if (!PyDict_CheckExact(u)) return CS_BAIL; /* no_usage */
    PyObject *details = get(u, OA(prompt_tokens_details));
    PyObject *cached = details != NULL && PyDict_CheckExact(details) ? get(details, OA(cached_tokens)) : NULL;
    if (cached == NULL || cached == Py_None) {
        cached = get(u, OA(prompt_cache_hit_tokens)); /* DeepSeek */
        if (cached == NULL || cached == Py_None) cached = get(u, OA(cached_tokens)); /* Moonshot / Kimi */
    }
    long long p = 0, c = 0, t = 0, r = 0, ca = 0;
    int hp = count(get(u, OA(prompt_tokens)), &p), hc = count(get(u, OA(completion_tokens)), &c),
        ht = count(get(u, OA(total_tokens)), &t);
    if (hp < 0 || hc < 0 || ht < 0) return CS_BAIL;
    PyObject *out_details = get(u, OA(completion_tokens_details));
    if (out_details != NULL && PyDict_CheckExact(out_details)) {
        PyObject *rt = get(out_details, OA(reasoning_tokens));
        if (truthy(rt)) {
            int hr = count(rt, &r);
            if (hr < 0) return CS_BAIL;
            if (hp && hc && hr && ht && p + c != t && t == p + c + r) c += r; /* xAI */
        }
    }
    int hca = count(cached, &ca);
    if (hca < 0) return CS_BAIL;
    if (!(hp || hc || hca || ht)) return CS_OK; /* usage_dict: None */
    PyObject *d = PyDict_New();
    if (d == NULL) return CS_ERR;
    if ((hp && set_count(d, OA(inputTokens), p) < 0) || (hc && set_count(d, OA(outputTokens), c) < 0) ||
        (hca && set_count(d, OA(cachedTokens), ca) < 0) ||
        ((hp && hc) ? set_count(d, OA(totalTokens), p + c) < 0 : (ht && set_count(d, OA(totalTokens), t) < 0))) {
        Py_DECREF(d);
        return CS_ERR;
    }
    int rc = cs_usage(b, d);
    Py_DECREF(d);
    return rc;
}

/* ---- StreamParser.payload ----------------------------------------------------------------------------- */

static int payload(CSRun *r, const char *ev, Py_ssize_t evlen, PyObject *obj) {
    CS *b = r->b;
    OAState *st = (OAState *)r->state;
    int rc;
    if (cs_is(ev, evlen, "error")) return CS_BAIL;  /* _provider_error */
    if (truthy(get(obj, OA(error)))) return CS_BAIL; /* an error, with or beside choices */
    if (b->model == NULL || b->response_id == NULL) cs_identify(b, get(obj, OA(id)), get(obj, OA(model)));
    PyObject *usage = get(obj, OA(usage));
    int has_usage = truthy(usage);
    if (!has_usage && PyDict_Contains(obj, OA(x_groq))) return CS_BAIL; /* Groq's usage */
    if (usage != NULL && usage != Py_None && (rc = read_usage(b, usage)) != CS_OK) return rc;
    PyObject *choices = get(obj, OA(choices));
    int ended = !truthy(choices);
    if (ended) {
        if (choices == NULL && !has_usage && !PyDict_Contains(obj, OA(prompt_filter_results)) &&
            !PyDict_Contains(obj, OA(moderation)) && !PyDict_Contains(obj, OA(citations)) &&
            !PyDict_Contains(obj, OA(search_results)))
            return CS_BAIL; /* no chunk: a foreign payload (say_foreign) */
    } else {
        if (!PyList_CheckExact(choices)) return CS_BAIL;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(choices); i++) {
            PyObject *ch = PyList_GET_ITEM(choices, i);
            if (!PyDict_CheckExact(ch)) return CS_BAIL; /* said (type) */
            PyObject *v[C_N];
            fields_of(ch, choice_key, v, C_N);
            PyObject *index = v[C_INDEX];
            if (index != NULL && PyLong_CheckExact(index)) { /* (another type is choice 0) */
                int overflow;
                long long n = PyLong_AsLongLongAndOverflow(index, &overflow);
                if (overflow || n != 0) return CS_BAIL; /* another choice */
            }
            PyObject *delta = v[C_DELTA];
            if (delta == NULL || !PyDict_CheckExact(delta)) {
                if (delta != NULL && delta != Py_None) return CS_BAIL; /* said */
                PyObject *message = v[C_MESSAGE];
                if (v[C_MESSAGES] != NULL || (message != NULL && PyDict_CheckExact(message)))
                    return CS_BAIL; /* Azure's legacy messages; a whole message read as the delta */
                delta = NULL;
            }
            if (delta != NULL && (rc = delta_of(b, st, delta)) != CS_OK) return rc;
            if (truthy(v[C_CONTENT_FILTER_RESULTS])) return CS_BAIL;
            if (has_data(v[C_LOGPROBS]) && (rc = cs_not_kept(b, OA(logprobs_key), OA(logprobs_note))) != CS_OK)
                return rc;
            PyObject *reason = v[C_FINISH_REASON];
            if (truthy(reason)) {
                if (!has_usage && truthy(v[C_USAGE])) return CS_BAIL;        /* Moonshot's usage in the choice */
                if (!PyUnicode_CheckExact(reason)) return CS_BAIL;            /* said */
                if (PyUnicode_CompareWithASCIIString(reason, "null") != 0) {  /* _finish */
                    if (PyUnicode_CompareWithASCIIString(reason, "insufficient_system_resource") == 0) return CS_BAIL;
                    int tools = PyUnicode_CompareWithASCIIString(reason, "tool_calls") == 0 ||
                                PyUnicode_CompareWithASCIIString(reason, "function_call") == 0;
                    int normal = PyUnicode_CompareWithASCIIString(reason, "stop") == 0;
                    if ((rc = cs_finish(b, reason, tools, normal)) != CS_OK) return rc;
                }
                PyObject *stops[2] = {v[C_STOP_REASON], v[C_MATCHED_STOP]}; /* _stop_not_kept */
                for (int s = 0; s < 2; s++)
                    if (stops[s] != NULL && stops[s] != Py_None &&
                        !(PyUnicode_CheckExact(stops[s]) && PyUnicode_GET_LENGTH(stops[s]) == 0))
                        return CS_BAIL;
                ended = 1;
            }
        }
    }
    if (ended && (has_data(get(obj, OA(prompt_filter_results))) || has_data(get(obj, OA(moderation))) ||
                  has_data(get(obj, OA(citations))) || has_data(get(obj, OA(search_results)))))
        return CS_BAIL; /* _not_kept_response */
    return CS_OK;
}

/* The reply ends with calls waiting (StreamBuilder.close, _close_choice): the open blocks end, then each call in
 * the order they appeared, a waiting one starting as it is (_end_call). cs_close then finds nothing open. */
static int end_payloads(CSRun *r) {
    CS *b = r->b;
    OAState *st = (OAState *)r->state;
    if (st->waiting == st->n) return CS_OK;
    if (!r->done && b->finish == NULL) return CS_BAIL; /* a cut reply: its error event comes first */
    int rc;
    while (b->nblocks > 0) {
        PyObject *slot = Py_NewRef(b->blocks[0].slot);
        rc = cs_end_block(b, slot, NULL);
        Py_DECREF(slot);
        if (rc != CS_OK) return rc;
    }
    for (Py_ssize_t i = 0; i < b->ncalls; i++)
        if ((rc = cs_call_end(b, &b->calls[i])) != CS_OK) return rc;
    while (st->waiting < st->n) {
        OACall *w = &st->calls[st->waiting++];
        if ((rc = cs_call_start(b, w->key, w->id, w->name, NULL, NULL)) != CS_OK) return rc;
        w->started = b->ncalls - 1;
        if ((rc = cs_call_end(b, &b->calls[w->started])) != CS_OK) return rc;
    }
    return CS_OK;
}

PyObject *cs_openai_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (oa_strings() < 0) return NULL;
    OAState st;
    memset(&st, 0, sizeof(st));
    CSRun r;
    memset(&r, 0, sizeof(r));
    r.payload = payload;
    r.end_payloads = end_payloads;
    r.state = &st;
    PyObject *out = cs_entry(args, nargs, "openai", &r);
    oa_clear(&st);
    return out;
}
