/* agentmsg._speedups: the whole-body fast path of providers/gemini.py's stream parser (see cstream.h).
 *
 * StreamParser.payload -> _payload -> _candidate -> _function_call / _partial for candidate 0 of chunks of the
 * usual shape (keys among candidates, usageMetadata, modelVersion, responseId, createTime), with usage_later's
 * usage, text, thought, signature and function-call parts, not-kept candidate data and server parts. Streamed
 * arguments (partialArgs) are written as json_fragment_writer writes them for updates of top-level keys that
 * each come once (a string value in pieces). Anything else gives up: an error, another candidate, proto (snake
 * case) names, media, a call cut short, a writer's note, a problem the Python parser would say.
 */
#include "cstream.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* ---- strings ---------------------------------------------------------------------------------------- */
#define G_STRINGS(X)                                                                                           \
    X(candidates, "candidates") X(usageMetadata, "usageMetadata") X(modelVersion, "modelVersion")              \
    X(responseId, "responseId") X(content, "content") X(index, "index") X(finishReason, "finishReason")         \
    X(parts, "parts") X(text, "text") X(thought, "thought") X(thoughtSignature, "thoughtSignature")            \
    X(functionCall, "functionCall") X(inlineData, "inlineData") X(fileData, "fileData") X(args, "args")        \
    X(name, "name") X(id, "id") X(willContinue, "willContinue") X(partialArgs, "partialArgs")                  \
    X(jsonPath, "jsonPath") X(stringValue, "stringValue") X(numberValue, "numberValue")                        \
    X(boolValue, "boolValue") X(nullValue, "nullValue") X(promptTokenCount, "promptTokenCount")                \
    X(candidatesTokenCount, "candidatesTokenCount") X(thoughtsTokenCount, "thoughtsTokenCount")                \
    X(toolUsePromptTokenCount, "toolUsePromptTokenCount")                                                      \
    X(cachedContentTokenCount, "cachedContentTokenCount") X(totalTokenCount, "totalTokenCount")                \
    X(inputTokens, "inputTokens") X(outputTokens, "outputTokens") X(cachedTokens, "cachedTokens")              \
    X(totalTokens, "totalTokens") X(emptyTextPart, "emptyTextPart") X(thinking, "thinking")                    \
    X(signature, "signature") X(finishMessage, "finishMessage") X(STOP, "STOP") X(dollar, "$")                 \
    X(braces, "{}") X(close_brace, "}") X(quote_close_brace, "\"}")

#define CS_PREFIX g_s_
G_STRINGS(CS_STRING_VAR)
#define G_S(var) (g_s_##var)

/* _NOT_KEPT: (key, what), in its order */
static const char *const NOT_KEPT[][2] = {
    {"groundingMetadata", "grounding (search sources)"},
    {"citationMetadata", "citation data"},
    {"urlContextMetadata", "URL context data"},
    {"logprobsResult", "log probabilities"},
    {"safetyRatings", "safety rating data (harm categories, probabilities, whether it blocked)"},
    {"avgLogprobs", "the average log probability"},
    {"continuationToken", "the continuation token"},
};
#define N_NOT_KEPT (sizeof(NOT_KEPT) / sizeof(NOT_KEPT[0]))
static PyObject *g_not_kept_keys[N_NOT_KEPT];

/* _SERVER_PARTS */
static const char *const SERVER_PARTS[][2] = {
    {"executableCode", "code the provider runs itself"},
    {"codeExecutionResult", "code the provider runs itself"},
    {"toolCall", "a built-in tool the provider runs itself"},
    {"toolResponse", "a built-in tool the provider runs itself"},
};
#define N_SERVER_PARTS (sizeof(SERVER_PARTS) / sizeof(SERVER_PARTS[0]))

static PyObject *g_limits = NULL; /* agentmsg._limits.limits */

static int g_strings(void) {
    if (g_s_candidates != NULL) return 0;
    if (cs_strings() < 0) return -1;
    G_STRINGS(CS_STRING_INTERN)
    for (size_t i = 0; i < N_NOT_KEPT; i++)
        if ((g_not_kept_keys[i] = PyUnicode_InternFromString(NOT_KEPT[i][0])) == NULL) return -1;
    PyObject *lim = PyImport_ImportModule("agentmsg._limits");
    if (lim == NULL) return -1;
    g_limits = PyObject_GetAttrString(lim, "limits");
    Py_DECREF(lim);
    return g_limits == NULL ? -1 : 0;
}

/* ---- helpers ---------------------------------------------------------------------------------------- */

/* d[key] with a null given as absent (a field given as null is absent: gemini.py filters them); borrowed. */
static inline PyObject *get(PyObject *d, PyObject *key) {
    PyObject *v = PyDict_GetItemWithError(d, key);
    return v == Py_None ? NULL : v;
}

static inline int key_is(PyObject *k, const char *lit, Py_ssize_t n) {
    return PyUnicode_CheckExact(k) && PyUnicode_IS_COMPACT_ASCII(k) && PyUnicode_GET_LENGTH(k) == n &&
           memcmp(PyUnicode_DATA(k), lit, (size_t)n) == 0;
}
#define KEY_IS(k, lit) key_is((k), lit, (Py_ssize_t)(sizeof(lit) - 1))

/* Whether a str key holds an underscore (a proto name, or may be one): such payloads give up. */
static inline int underscored(PyObject *k) {
    if (!PyUnicode_CheckExact(k)) return 1;
    if (PyUnicode_IS_COMPACT_ASCII(k))
        return memchr(PyUnicode_DATA(k), '_', (size_t)PyUnicode_GET_LENGTH(k)) != NULL;
    return PyUnicode_FindChar(k, '_', 0, PyUnicode_GET_LENGTH(k), 1) != -1;
}

/* One pass over an object's fields: vals[j] the value of the field named lits[j] (borrowed, NULL when absent; a
 * null stays a null), *given the fields that are not null, *other whether one not among lits is, and whether a
 * key holds an underscore (a proto name: gives up). Returns 1 for an underscore, else 0. (One pass of memcmp
 * costs less than a lookup per field, most of them missing.) */
typedef struct {
    const char *lit;
    Py_ssize_t n;
} Lit;
#define LIT(s) {s, (Py_ssize_t)(sizeof(s) - 1)}

static int scan(PyObject *d, const Lit *lits, int nl, PyObject **vals, int *given, int *other) {
    for (int j = 0; j < nl; j++) vals[j] = NULL;
    int g = 0, o = 0;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(d, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k)) return 1;
        int known = 0;
        if (PyUnicode_IS_COMPACT_ASCII(k)) {
            Py_ssize_t n = PyUnicode_GET_LENGTH(k);
            const char *c = (const char *)PyUnicode_DATA(k);
            if (memchr(c, '_', (size_t)n) != NULL) return 1;
            for (int j = 0; j < nl; j++)
                if (lits[j].n == n && memcmp(lits[j].lit, c, (size_t)n) == 0) {
                    vals[j] = v;
                    known = 1;
                    break;
                }
        } else if (underscored(k)) {
            return 1;
        }
        if (v != Py_None) {
            g++;
            if (!known) o = 1;
        }
    }
    if (given != NULL) *given = g;
    if (other != NULL) *other = o;
    return 0;
}

/* a value read by scan() with a null as absent (a field given as null is absent: gemini.py filters them) */
static inline PyObject *nn(PyObject *v) { return v == Py_None ? NULL : v; }

static inline int nonempty_str(PyObject *v) {
    return v != NULL && PyUnicode_CheckExact(v) && PyUnicode_GET_LENGTH(v) > 0;
}

/* a growable UTF-8 buffer */
typedef struct {
    char *p;
    Py_ssize_t n, cap;
} Buf;

static int buf_put(Buf *b, const char *s, Py_ssize_t n) {
    if (b->n + n > b->cap) {
        Py_ssize_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n) cap *= 2;
        char *p = PyMem_Realloc(b->p, (size_t)cap);
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, (size_t)n);
    b->n += n;
    return 0;
}
#define BUF_LIT(b, lit) buf_put((b), lit, (Py_ssize_t)(sizeof(lit) - 1))

/* A str's JSON string body as orjson.dumps writes it (", \ and control characters escaped; the rest as is). */
static int buf_escaped(Buf *b, PyObject *s) {
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (u == NULL) return -1;
    Py_ssize_t run = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)u[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        if (buf_put(b, u + run, i - run) < 0) return -1;
        run = i + 1;
        char esc[7] = {'\\', 0, 0, 0, 0, 0, 0};
        Py_ssize_t len = 2;
        switch (c) {
            case '"': esc[1] = '"'; break;
            case '\\': esc[1] = '\\'; break;
            case '\b': esc[1] = 'b'; break;
            case '\t': esc[1] = 't'; break;
            case '\n': esc[1] = 'n'; break;
            case '\f': esc[1] = 'f'; break;
            case '\r': esc[1] = 'r'; break;
            default:
                esc[1] = 'u';
                esc[2] = '0';
                esc[3] = '0';
                esc[4] = "0123456789abcdef"[c >> 4];
                esc[5] = "0123456789abcdef"[c & 15];
                len = 6;
        }
        if (buf_put(b, esc, len) < 0) return -1;
    }
    return buf_put(b, u + run, n - run);
}

/* orjson.dumps(value) appended; CS_BAIL when orjson cannot write it (the Python parser says a problem). */
static int buf_dumps(Buf *b, PyObject *value) {
    PyObject *raw = PyObject_CallOneArg(cs_dumps, value);
    if (raw == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) { /* orjson.JSONEncodeError */
            PyErr_Clear();
            return CS_BAIL;
        }
        return CS_ERR;
    }
    int rc = buf_put(b, PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw)) < 0 ? CS_ERR : CS_OK;
    Py_DECREF(raw);
    return rc;
}

static PyObject *buf_str(Buf *b) { return PyUnicode_DecodeUTF8(b->p ? b->p : "", b->n, NULL); }

/* ---- state ------------------------------------------------------------------------------------------ */

typedef struct {
    /* _Calls of candidate 0 */
    int count;
    Py_ssize_t open; /* b->calls index of the call whose arguments stream (calls.open), -1: none */
    /* its json_fragment_writer (calls.writer: on while open), for updates of top-level keys each given once */
    int writer, w_started;
    PyObject *w_keys; /* set: the top-level keys written (its root's keys), or NULL */
    PyObject *w_open; /* the key of the string still open (_open_string), or NULL; owned */
    PyObject *sig;    /* the open call's first thought signature (_Call.signature), owned or NULL */
    PyObject *later;  /* StreamBuilder._later's raw usage (usage_later), owned or NULL */
    /* The open call's text is one JSON object the message holds once it closes (arguments_problem would say
     * nothing: the check is left out, cs_close's said): its arguments object written by orjson, or its writer's
     * updates alone; and the UTF-8 bytes of it so far. */
    int text_ok;
    Py_ssize_t text_bytes;
    int limits_read;           /* agentmsg.limits read (once a body, when first needed) */
    long max_depth;            /* limits.max_depth */
    long long max_bytes;       /* limits.max_bytes */
} G;

/* limits.max_depth and limits.max_bytes, read once a body. */
static int read_limits(G *g) {
    if (g->limits_read) return CS_OK;
    PyObject *md = PyObject_GetAttrString(g_limits, "max_depth");
    PyObject *mb = md == NULL ? NULL : PyObject_GetAttrString(g_limits, "max_bytes");
    if (mb == NULL) {
        Py_XDECREF(md);
        return CS_ERR;
    }
    g->max_depth = PyLong_Check(md) ? PyLong_AsLong(md) : 0;
    g->max_bytes = PyLong_Check(mb) ? PyLong_AsLongLong(mb) : 0;
    Py_DECREF(md);
    Py_DECREF(mb);
    if (PyErr_Occurred()) { /* (a limit beyond a C long: the checks are left to the Python parser) */
        PyErr_Clear();
        g->max_depth = 0;
        g->max_bytes = 0;
    }
    g->limits_read = 1;
    return CS_OK;
}

static void g_clear(G *g) {
    Py_CLEAR(g->w_keys);
    Py_CLEAR(g->w_open);
    Py_CLEAR(g->sig);
    Py_CLEAR(g->later);
}

/* ---- usage: _usage and usage_dict; set_usage / usage_later of StreamBuilder ---------------------- */

#define LONG_MAX_ 9223372036854775807ULL

#define NO_COUNT 2
/* safe_int(u.get(key)): 1 with the count in *out, 0 when absent (None), NO_COUNT for a value that is no count
 * (said by the Python parser: gives up), -1 with an exception. */
static int count_of(PyObject *u, PyObject *key, unsigned long long *out) {
    PyObject *v = PyDict_GetItemWithError(u, key);
    if (v == NULL) return PyErr_Occurred() ? -1 : 0;
    if (v == Py_None) return 0;
    if (PyLong_CheckExact(v)) {
        int of;
        long long x = PyLong_AsLongLongAndOverflow(v, &of);
        if (x == -1 && PyErr_Occurred()) return -1;
        if (of > 0) {
            *out = LONG_MAX_;
            return 1;
        }
        if (of < 0 || x < 0) return NO_COUNT;
        *out = (unsigned long long)x;
        return 1;
    }
    if (PyFloat_CheckExact(v)) {
        double d = PyFloat_AS_DOUBLE(v);
        if (!(d >= 0) || d != floor(d)) return NO_COUNT;
        *out = d >= 9223372036854775808.0 ? LONG_MAX_ : (unsigned long long)d;
        return 1;
    }
    return NO_COUNT;
}

static int put_count(PyObject *d, PyObject *key, unsigned long long n) {
    PyObject *v = PyLong_FromUnsignedLongLong(n > LONG_MAX_ ? LONG_MAX_ : n);
    if (v == NULL) return -1;
    int rc = PyDict_SetItem(d, key, v);
    Py_DECREF(v);
    return rc;
}

/* gemini._usage(u, b) for a dict u: *out a new dict or NULL (None); CS_OK, CS_BAIL (a count said), CS_ERR. */
static int convert_usage(PyObject *u, PyObject **out) {
    *out = NULL;
    unsigned long long cand = 0, thoughts = 0, prompt = 0, tool = 0, cached = 0, total = 0;
    int has_cand, has_thoughts, has_prompt, has_tool, has_cached, has_total;
    if ((has_cand = count_of(u, G_S(candidatesTokenCount), &cand)) < 0 ||
        (has_thoughts = count_of(u, G_S(thoughtsTokenCount), &thoughts)) < 0 ||
        (has_prompt = count_of(u, G_S(promptTokenCount), &prompt)) < 0 ||
        (has_tool = count_of(u, G_S(toolUsePromptTokenCount), &tool)) < 0 ||
        (has_cached = count_of(u, G_S(cachedContentTokenCount), &cached)) < 0 ||
        (has_total = count_of(u, G_S(totalTokenCount), &total)) < 0)
        return CS_ERR;
    if (has_cand == NO_COUNT || has_thoughts == NO_COUNT || has_prompt == NO_COUNT || has_tool == NO_COUNT ||
        has_cached == NO_COUNT || has_total == NO_COUNT)
        return CS_BAIL;
    if (!has_cand && has_prompt && prompt > 0) has_cand = 1; /* (cand = 0: proto3 leaves out a count of 0) */
    int has_out = has_cand || has_thoughts;
    unsigned long long o = (has_cand ? cand : 0) + (has_thoughts ? thoughts : 0);
    int has_in = has_prompt;
    unsigned long long i = has_tool && has_prompt ? prompt + tool : prompt;
    if (!has_in && !has_out && !has_cached && !has_total) return CS_OK;
    PyObject *d = PyDict_New();
    if (d == NULL) return CS_ERR;
    if (has_in) i = i > LONG_MAX_ ? LONG_MAX_ : i;
    if (has_out) o = o > LONG_MAX_ ? LONG_MAX_ : o;
    if ((has_in && put_count(d, G_S(inputTokens), i) < 0) || (has_out && put_count(d, G_S(outputTokens), o) < 0) ||
        (has_cached && put_count(d, G_S(cachedTokens), cached) < 0) ||
        (has_in && has_out && put_count(d, G_S(totalTokens), i + o) < 0) ||
        (!(has_in && has_out) && has_total && put_count(d, G_S(totalTokens), total) < 0)) {
        Py_DECREF(d);
        return CS_ERR;
    }
    *out = d;
    return CS_OK;
}

/* StreamBuilder.set_usage(usage) (usage a new reference or NULL: taken) */
static int set_usage(CS *b, G *g, PyObject *usage) {
    int rc = CS_OK;
    if (usage != NULL && PyDict_GET_SIZE(usage) > 0) {
        if (g->later != NULL) {
            PyObject *later = g->later, *earlier;
            g->later = NULL;
            rc = convert_usage(later, &earlier);
            Py_DECREF(later);
            if (rc != CS_OK) goto done;
            if (earlier != NULL && PyDict_GET_SIZE(earlier) > 0) Py_XSETREF(b->usage, earlier);
            else Py_XDECREF(earlier);
        }
        rc = cs_usage(b, usage);
    }
done:
    Py_XDECREF(usage);
    return rc;
}

/* StreamBuilder.usage_later(_usage, u, "promptTokenCount") */
static int usage_later(CS *b, G *g, PyObject *u) {
    if (!PyDict_CheckExact(u)) return CS_BAIL; /* no_usage: said */
    PyObject *n = PyDict_GetItemWithError(u, G_S(promptTokenCount));
    if (n == NULL && PyErr_Occurred()) return CS_ERR;
    if (n != NULL && PyLong_CheckExact(n)) {
        int of;
        long long x = PyLong_AsLongLongAndOverflow(n, &of);
        if (x == -1 && PyErr_Occurred()) return CS_ERR;
        if (of > 0 || (of == 0 && x >= 0)) {
            Py_XSETREF(g->later, Py_NewRef(u));
            return CS_OK;
        }
    }
    PyObject *usage;
    int rc = convert_usage(u, &usage);
    if (rc != CS_OK) return rc;
    return set_usage(b, g, usage);
}

/* ---- function calls: _function_call, _partial and json_fragment_writer ---------------------------- */

/* json_fragment_writer.add(path, value, is_string, more) for a top-level key: the text appended to out. */
static int writer_add(G *g, Buf *out, PyObject *key, PyObject *value, int is_string, int more) {
    if (!g->w_started) {
        g->w_started = 1;
        if (BUF_LIT(out, "{") < 0) return CS_ERR;
    }
    if (g->w_open != NULL) {
        int same = 0;
        if (is_string) {
            same = PyUnicode_Compare(g->w_open, key) == 0;
            if (!same && PyErr_Occurred()) return CS_ERR;
        }
        if (same) { /* the next piece of the open string */
            if (buf_escaped(out, value) < 0) return CS_ERR;
            if (!more) {
                if (BUF_LIT(out, "\"") < 0) return CS_ERR;
                Py_CLEAR(g->w_open);
            }
            return CS_OK;
        }
        if (BUF_LIT(out, "\"") < 0) return CS_ERR;
        Py_CLEAR(g->w_open);
    }
    if (g->w_keys == NULL && (g->w_keys = PySet_New(NULL)) == NULL) return CS_ERR;
    int in = PySet_Contains(g->w_keys, key);
    if (in < 0) return CS_ERR;
    if (in) return CS_BAIL; /* _not_appendable: a path given again (a writer's note, said) */
    if (PySet_GET_SIZE(g->w_keys) > 0 && BUF_LIT(out, ",") < 0) return CS_ERR;
    if (PySet_Add(g->w_keys, key) < 0) return CS_ERR;
    if (BUF_LIT(out, "\"") < 0 || buf_escaped(out, key) < 0 || BUF_LIT(out, "\":") < 0) return CS_ERR;
    if (is_string) {
        if (BUF_LIT(out, "\"") < 0 || buf_escaped(out, value) < 0) return CS_ERR;
        if (!more) return BUF_LIT(out, "\"") < 0 ? CS_ERR : CS_OK;
        g->w_open = Py_NewRef(key);
        return CS_OK;
    }
    if (value == Py_None) return BUF_LIT(out, "null") < 0 ? CS_ERR : CS_OK;
    if (value == Py_True) return BUF_LIT(out, "true") < 0 ? CS_ERR : CS_OK;
    if (value == Py_False) return BUF_LIT(out, "false") < 0 ? CS_ERR : CS_OK;
    return buf_dumps(out, value);
}

/* json_fragment_writer.close() or "{}" */
static PyObject *writer_close(G *g) {
    if (!g->w_started) return Py_NewRef(G_S(braces)); /* ("" or "{}") */
    int open = g->w_open != NULL;
    Py_CLEAR(g->w_open);
    return Py_NewRef(open ? G_S(quote_close_brace) : G_S(close_brace));
}

static void writer_reset(G *g) {
    g->writer = g->w_started = 0;
    Py_CLEAR(g->w_keys);
    Py_CLEAR(g->w_open);
}

/* The top-level key of a partial argument's path (_path_parts of str(jsonPath or "$")), or NULL with CS_BAIL in
 * *rc for a path of more than one part (or one the fast path does not read). A new reference. */
static PyObject *path_key(PyObject *jp, int *rc) {
    *rc = CS_OK;
    if (jp == NULL) return Py_NewRef(G_S(dollar));
    int truth = PyObject_IsTrue(jp);
    if (truth < 0) {
        *rc = CS_ERR;
        return NULL;
    }
    if (!truth) return Py_NewRef(G_S(dollar)); /* (jsonPath or "$") */
    if (!PyUnicode_CheckExact(jp)) {
        *rc = CS_BAIL;
        return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(jp);
    int kind = PyUnicode_KIND(jp);
    const void *data = PyUnicode_DATA(jp);
    Py_ssize_t i = PyUnicode_READ(kind, data, 0) == '$' ? 1 : 0;
    if (i == n) return Py_NewRef(jp); /* "$": no parts, the path itself */
    Py_ssize_t from = PyUnicode_READ(kind, data, i) == '.' ? i + 1 : i;
    for (Py_ssize_t j = from; j < n; j++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, j);
        if (c == '.' || c == '[') {
            *rc = CS_BAIL;
            return NULL;
        }
    }
    if (from == i && PyUnicode_READ(kind, data, i) == '[') {
        *rc = CS_BAIL;
        return NULL;
    }
    return PyUnicode_Substring(jp, from, n);
}

/* _partial(b, writer, partial): the text of a part's partialArgs appended to out. */
static int partial_args(G *g, Buf *out, PyObject *partial) {
    if (!PyList_CheckExact(partial)) return CS_OK;
    static const Lit P_KEYS[6] = {LIT("stringValue"), LIT("numberValue"), LIT("boolValue"),
                                  LIT("nullValue"),   LIT("jsonPath"),    LIT("willContinue")};
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(partial); k++) {
        PyObject *p = PyList_GET_ITEM(partial, k);
        if (!PyDict_CheckExact(p)) continue;
        PyObject *pv[6];
        int given;
        if (scan(p, P_KEYS, 6, pv, &given, NULL)) return CS_BAIL; /* (a proto name) */
        /* null fields beside a value are absent; a null with no other value is its own (nullValue: null) */
        int filtered = given < PyDict_GET_SIZE(p) && (nn(pv[0]) || nn(pv[1]) || nn(pv[2]) || nn(pv[3]));
        for (int j = 0; j < 4; j++) {
            PyObject *v = pv[j];
            if (v == NULL || (v == Py_None && filtered)) continue;
            PyObject *value = j == 3 ? Py_None : v;
            if ((j == 0 && !PyUnicode_CheckExact(value)) ||
                (j == 1 && !PyLong_CheckExact(value) && !PyFloat_CheckExact(value)) || (j == 2 && !PyBool_Check(value)))
                return CS_BAIL; /* a value of a type its field never holds: said */
            PyObject *jp = pv[4];
            if (jp == Py_None && filtered) jp = NULL;
            PyObject *wc = pv[5];
            int more = wc != NULL && !(wc == Py_None && filtered) ? PyObject_IsTrue(wc) : 0;
            if (more < 0) return CS_ERR;
            int rc;
            PyObject *key = path_key(jp, &rc);
            if (key == NULL) return rc;
            if (read_limits(g) != CS_OK) { /* len(parts) >= limits.max_depth - 1: said */
                Py_DECREF(key);
                return CS_ERR;
            }
            rc = g->max_depth > 2 ? writer_add(g, out, key, value, j == 0, more) : CS_BAIL;
            Py_DECREF(key);
            if (rc != CS_OK) return rc;
            break;
        }
    }
    return CS_OK;
}

/* Whether a value holds a float orjson may have read from an integer beyond 64 bits (_numbers.overflowed):
 * 1, 0, or -1 when nested beyond what this walks (gives up); *deepest: the levels of containers it holds. */
static int overflowed(PyObject *v, int depth, int *deepest) {
    if (depth > 200) return -1;
    if (PyFloat_CheckExact(v)) {
        double d = PyFloat_AS_DOUBLE(v);
        return (d >= 9223372036854775808.0 || d <= -9223372036854775808.0) && d == floor(d);
    }
    if ((PyDict_CheckExact(v) || PyList_CheckExact(v)) && depth + 1 > *deepest) *deepest = depth + 1;
    if (PyDict_CheckExact(v)) {
        Py_ssize_t pos = 0;
        PyObject *k, *x;
        while (PyDict_Next(v, &pos, &k, &x)) {
            int r = overflowed(x, depth + 1, deepest);
            if (r) return r;
        }
    } else if (PyList_CheckExact(v)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
            int r = overflowed(PyList_GET_ITEM(v, i), depth + 1, deepest);
            if (r) return r;
        }
    }
    return 0;
}

/* cs_call_args with the text in a buffer (emptied) */
static int args_from(CS *b, G *g, Buf *buf) {
    if (buf->n == 0) return CS_OK;
    g->text_bytes += buf->n;
    PyObject *text = buf_str(buf);
    buf->n = 0;
    if (text == NULL) return CS_ERR;
    int rc = cs_call_args(b, &b->calls[g->open], text);
    Py_DECREF(text);
    return rc;
}

/* _function_call(b, 0, calls, part): fc the part's functionCall (a dict), sig its signature (or NULL). */
static int function_call(CS *b, G *g, PyObject *fc, PyObject *sig) {
    static const Lit FC_KEYS[5] = {LIT("willContinue"), LIT("name"), LIT("partialArgs"), LIT("args"), LIT("id")};
    PyObject *fv[5];
    int other;
    if (scan(fc, FC_KEYS, 5, fv, NULL, &other)) return CS_BAIL; /* (a proto name) */
    /* (fields given as null are absent) */
    PyObject *wc = nn(fv[0]), *name = nn(fv[1]), *partial = nn(fv[2]), *args = nn(fv[3]), *fid = nn(fv[4]);
    int more = wc != NULL ? PyObject_IsTrue(wc) : 0;
    if (more < 0) return CS_ERR;
    int rc;
    Buf buf = {NULL, 0, 0};
    if (g->open >= 0 && nonempty_str(name)) return CS_BAIL; /* _cut_call: a new call while one streams */
    if (g->open < 0) {
        if (sig == NULL && !other && !name && !partial && !args && !fid)
            return CS_OK; /* fc.keys() <= {"willContinue"}: nothing */
        if (!nonempty_str(name)) return CS_BAIL; /* a call without its name waits for it (or is said) */
        g->count++;
        if (nonempty_str(fid)) {
            if ((rc = cs_call_start(b, Py_None, fid, name, sig, NULL)) != CS_OK) return rc;
        } else { /* no id: one minted as _start_call mints it */
            if ((rc = cs_call_start(b, Py_None, NULL, name, sig, NULL)) != CS_OK) return rc;
        }
        g->open = b->ncalls - 1; /* (the call's place while this part is read; kept below only when more) */
        Py_XSETREF(g->sig, Py_XNewRef(sig));
        g->text_ok = 1;
        g->text_bytes = 0;
        int dumped = 0;
        if (args != NULL && !(more && PyDict_CheckExact(args) && PyDict_GET_SIZE(args) == 0)) {
            int deepest = 0;
            int over = overflowed(args, 0, &deepest); /* json_text: digits from the payload's text (not here) */
            if (over) return CS_BAIL;
            if ((rc = read_limits(g)) != CS_OK) return rc;
            /* (a JSON object orjson wrote, nested within the depth the codec reads) */
            g->text_ok = PyDict_CheckExact(args) && deepest <= 64 && deepest <= g->max_depth;
            dumped = 1;
            if ((rc = buf_dumps(&buf, args)) != CS_OK || (rc = args_from(b, g, &buf)) != CS_OK) goto out;
        }
        if (more || partial != NULL) {
            writer_reset(g);
            g->writer = 1;
            if (dumped) g->text_ok = 0; /* (the object, then the writer's text: not one object) */
        }
    } else if (sig != NULL) { /* a later part's signature: kept for the call's END, or the same one again */
        if (g->sig == NULL) {
            g->sig = Py_NewRef(sig);
            Py_XSETREF(b->calls[g->open].late_sig, Py_NewRef(sig));
        } else {
            int eq = PyUnicode_Compare(g->sig, sig);
            if (eq != 0) return eq == -1 && PyErr_Occurred() ? CS_ERR : CS_BAIL; /* another one: said */
        }
    }
    if (partial != NULL && g->writer) {
        if ((rc = partial_args(g, &buf, partial)) != CS_OK || (rc = args_from(b, g, &buf)) != CS_OK) goto out;
    }
    rc = CS_OK;
    if (!more) {
        CSCall *call = &b->calls[g->open];
        if (g->writer) {
            PyObject *rest = writer_close(g);
            g->text_bytes += PyUnicode_GET_LENGTH(rest);
            rc = cs_call_args(b, call, rest);
            Py_DECREF(rest);
        } else if (args == NULL) {
            g->text_bytes += 2;
            rc = cs_call_args(b, call, G_S(braces));
        }
        if (rc == CS_OK && g->text_ok && (rc = read_limits(g)) == CS_OK && g->max_depth >= 1 &&
            g->text_bytes <= g->max_bytes)
            call->said = 1; /* _check_arguments: nothing to say of a whole object the message holds */
        if (rc == CS_OK) rc = cs_call_end(b, call);
        g->open = -1;
        writer_reset(g);
        Py_CLEAR(g->sig);
    }
out:
    PyMem_Free(buf.p);
    return rc;
}

/* ---- parts and candidates: _candidate --------------------------------------------------------------- */

static int not_kept(CS *b, PyObject *key, PyObject *message) {
    int rc = key != NULL && message != NULL ? cs_not_kept(b, key, message) : CS_ERR;
    Py_XDECREF(key);
    Py_XDECREF(message);
    return rc;
}

/* One part of candidate 0's content (the loop body of _candidate). */
static int part_of(CS *b, G *g, PyObject *part) {
    if (!PyDict_CheckExact(part)) return CS_OK;
    PyObject *text;
    if (PyDict_GET_SIZE(part) == 1 && (text = PyDict_GetItemWithError(part, G_S(text))) != NULL &&
        PyUnicode_CheckExact(text))
        return cs_text(b, G_S(text), text, G_S(thinking)); /* the common part, text alone */
    if (PyErr_Occurred()) return CS_ERR;
    static const Lit PART_KEYS[6] = {LIT("text"),       LIT("thought"),    LIT("thoughtSignature"),
                                     LIT("functionCall"), LIT("inlineData"), LIT("fileData")};
    PyObject *pv[6];
    /* (a proto name gives up: _proto_named's keys of the call and its partial arguments are looked at where they
     * are read; media gives up) */
    if (scan(part, PART_KEYS, 6, pv, NULL, NULL)) return CS_BAIL;
    /* (fields given as null are absent) */
    PyObject *sig = nn(pv[2]);
    if (!nonempty_str(sig)) sig = NULL;
    PyObject *fc = nn(pv[3]);
    if (fc != NULL) {
        int rc;
        if (g->open < 0 && (rc = cs_end_block(b, G_S(text), NULL)) != CS_OK) return rc; /* the text before is over */
        return PyDict_CheckExact(fc) ? function_call(b, g, fc, sig) : CS_OK;
    }
    if (nn(pv[4]) != NULL || nn(pv[5]) != NULL) return CS_BAIL; /* media */
    text = nn(pv[0]);
    PyObject *thought = nn(pv[1]);
    int rc;
    if (thought != NULL) {
        int t = PyObject_IsTrue(thought);
        if (t < 0) return CS_ERR;
        if (t) {
            if ((rc = cs_end_block(b, G_S(text), NULL)) != CS_OK) return rc;
            if ((rc = cs_thinking(b, G_S(thinking), text != NULL && PyUnicode_CheckExact(text) ? text : CS_S(empty),
                                  sig, NULL)) != CS_OK)
                return rc;
            return sig != NULL ? cs_end_block(b, G_S(thinking), NULL) : CS_OK; /* its signature is whole */
        }
    }
    if (nonempty_str(text)) {
        if ((rc = cs_text(b, G_S(text), text, G_S(thinking))) != CS_OK) return rc;
    } else if (text == NULL) { /* a part of another kind: a server part is said (not kept), others give up */
        PyObject *kind = NULL;
        int kinds = 0;
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(part, &pos, &k, &v)) {
            if (v == Py_None || KEY_IS(k, "thoughtSignature")) continue;
            kinds++;
            kind = k;
        }
        if (kinds > 1) return CS_BAIL;
        if (kinds == 1) {
            size_t i = 0;
            while (i < N_SERVER_PARTS && PyUnicode_CompareWithASCIIString(kind, SERVER_PARTS[i][0]) != 0) i++;
            if (i == N_SERVER_PARTS) return CS_BAIL; /* part kind ... is not supported: said */
            if ((rc = cs_end_block(b, G_S(text), NULL)) != CS_OK || (rc = cs_end_block(b, G_S(thinking), NULL)) != CS_OK)
                return rc;
            if ((rc = not_kept(b, PyUnicode_FromFormat("part/%s/0", SERVER_PARTS[i][0]),
                               PyUnicode_FromFormat("%s parts (%s) are not kept (the message has no place for them)",
                                                    SERVER_PARTS[i][0], SERVER_PARTS[i][1]))) != CS_OK)
                return rc;
        }
    }
    if (sig != NULL) { /* a signature on an answer part: a signature-only thinking block in its place */
        if ((rc = cs_end_block(b, G_S(thinking), NULL)) != CS_OK ||
            (rc = cs_thinking(b, G_S(signature), CS_S(empty), sig, NULL)) != CS_OK)
            return rc;
        PyObject *meta = NULL;
        if (text != NULL && PyUnicode_CheckExact(text) && PyUnicode_GET_LENGTH(text) == 0) {
            meta = PyDict_New();
            if (meta == NULL || PyDict_SetItem(meta, G_S(emptyTextPart), Py_True) < 0) {
                Py_XDECREF(meta);
                return CS_ERR;
            }
        }
        rc = cs_end_block(b, G_S(signature), meta);
        Py_XDECREF(meta);
        if (rc != CS_OK) return rc;
        return cs_end_block(b, G_S(text), NULL); /* the signed part is over */
    }
    return CS_OK;
}

static int candidate(CS *b, G *g, PyObject *cand) {
    int usual = 1;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(cand, &pos, &k, &v)) {
        if (KEY_IS(k, "content") || KEY_IS(k, "index") || KEY_IS(k, "finishReason")) continue;
        usual = 0;
        if (underscored(k)) return CS_BAIL; /* (a proto name: read under its lowerCamelCase name) */
    }
    PyObject *index = PyDict_GetItemWithError(cand, G_S(index));
    if (index != NULL && PyLong_CheckExact(index)) {
        int of;
        long x = PyLong_AsLongAndOverflow(index, &of);
        if (x != 0 || of != 0) return CS_BAIL; /* another candidate */
    }
    PyObject *content = PyDict_GetItemWithError(cand, G_S(content));
    PyObject *parts = content != NULL && PyDict_CheckExact(content) ? PyDict_GetItemWithError(content, G_S(parts)) : NULL;
    if (PyErr_Occurred()) return CS_ERR;
    int rc;
    if (parts != NULL && parts != Py_None) {
        if (!PyList_CheckExact(parts)) return CS_BAIL;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(parts); i++)
            if ((rc = part_of(b, g, PyList_GET_ITEM(parts, i))) != CS_OK) return rc;
    }
    if (!usual) { /* candidate data the message has no place for: said */
        for (size_t i = 0; i < N_NOT_KEPT; i++) {
            PyObject *x = PyDict_GetItemWithError(cand, g_not_kept_keys[i]);
            if (x == NULL) {
                if (PyErr_Occurred()) return CS_ERR;
                continue;
            }
            int t = PyObject_IsTrue(x);
            if (t < 0) return CS_ERR;
            if (t && (rc = not_kept(b, PyUnicode_FromFormat("%s/0", NOT_KEPT[i][0]),
                                    PyUnicode_FromFormat("%s (%s) is not kept (the message has no place for it)",
                                                         NOT_KEPT[i][1], NOT_KEPT[i][0]))) != CS_OK)
                return rc;
        }
    }
    PyObject *reason = PyDict_GetItemWithError(cand, G_S(finishReason));
    if (reason == NULL && PyErr_Occurred()) return CS_ERR;
    if (reason == NULL || reason == Py_None) return CS_OK;
    if (!PyUnicode_CheckExact(reason)) return CS_BAIL; /* an enum number, or said */
    if (PyUnicode_GET_LENGTH(reason) == 0) return CS_OK;
    if (!usual) {
        PyObject *note = PyDict_GetItemWithError(cand, G_S(finishMessage));
        if (note == NULL && PyErr_Occurred()) return CS_ERR;
        if (nonempty_str(note)) {
            PyObject *shown = PyUnicode_GET_LENGTH(note) <= 500 ? Py_NewRef(note) : NULL;
            if (shown == NULL) {
                PyObject *head = PyUnicode_Substring(note, 0, 500);
                if (head == NULL) return CS_ERR;
                shown = PyUnicode_FromFormat("%U...", head);
                Py_DECREF(head);
                if (shown == NULL) return CS_ERR;
            }
            PyObject *msg = PyUnicode_FromFormat(
                "the finish message is not kept (the message has no place for it): %R", shown);
            Py_DECREF(shown);
            if ((rc = not_kept(b, PyUnicode_FromString("finishMessage/0"), msg)) != CS_OK) return rc;
        }
    }
    if (g->open >= 0) return CS_BAIL; /* _cut_call: the reply finished while a call's arguments streamed */
    int stop = PyUnicode_Compare(reason, G_S(STOP)) == 0;
    return cs_finish(b, reason, 0, stop);
}

/* ---- StreamParser.payload / _payload ---------------------------------------------------------------- */

static int payload(CSRun *r, const char *ev, Py_ssize_t evlen, PyObject *obj) {
    CS *b = r->b;
    G *g = (G *)r->state;
    if (cs_is(ev, evlen, "error")) return CS_BAIL; /* an SSE error event: the provider's error */
    PyObject *cands = NULL, *u = NULL, *model = NULL, *rid = NULL;
    int shaped = 0;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(obj, &pos, &k, &v)) { /* a usual chunk: no error, prompt feedback or proto name */
        if (KEY_IS(k, "candidates")) cands = v, shaped = 1;
        else if (KEY_IS(k, "usageMetadata")) u = v, shaped = 1;
        else if (KEY_IS(k, "modelVersion")) model = v;
        else if (KEY_IS(k, "responseId")) rid = v;
        else if (!KEY_IS(k, "createTime")) return CS_BAIL;
    }
    if (!shaped) return CS_BAIL; /* no response shape: another's payload, an envelope (said) */
    int counted = 0;
    if (u != NULL && u != Py_None) {
        if (!PyDict_CheckExact(u)) return CS_BAIL; /* said */
        static const Lit COUNTS[6] = {LIT("candidatesTokenCount"),    LIT("thoughtsTokenCount"),
                                      LIT("promptTokenCount"),        LIT("toolUsePromptTokenCount"),
                                      LIT("cachedContentTokenCount"), LIT("totalTokenCount")};
        PyObject *cv[6];
        if (scan(u, COUNTS, 6, cv, NULL, NULL)) return CS_BAIL; /* proto names */
        for (int i = 0; i < 6; i++) counted |= cv[i] != NULL; /* (a count's key, even one given as null) */
    }
    int rc = cs_identify(b, rid, model);
    if (rc != CS_OK) return rc;
    if (counted && (rc = usage_later(b, g, u)) != CS_OK) return rc;
    if (cands == NULL || cands == Py_None) return CS_OK;
    if (!PyList_CheckExact(cands)) {
        int t = PyObject_IsTrue(cands);
        return t < 0 ? CS_ERR : t ? CS_BAIL : CS_OK;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(cands); i++) {
        PyObject *cand = PyList_GET_ITEM(cands, i);
        if (PyDict_CheckExact(cand) && (rc = candidate(b, g, cand)) != CS_OK) return rc;
    }
    return CS_OK;
}

/* StreamParser.end_payloads (nothing held: the writer never holds an update here) and the usage held for later,
 * converted as StreamBuilder._settle_usage converts it when the reply closes. */
static int end_payloads(CSRun *r) {
    G *g = (G *)r->state;
    if (g->later == NULL) return CS_OK;
    PyObject *later = g->later, *usage;
    g->later = NULL;
    int rc = convert_usage(later, &usage);
    Py_DECREF(later);
    if (rc != CS_OK) return rc;
    return set_usage(r->b, g, usage);
}

PyObject *cs_gemini_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (g_strings() < 0) return NULL;
    G g;
    memset(&g, 0, sizeof(g));
    g.open = -1;
    CSRun r;
    memset(&r, 0, sizeof(r));
    r.payload = payload;
    r.end_payloads = end_payloads;
    r.state = &g;
    PyObject *out = cs_entry(args, nargs, "gemini", &r);
    g_clear(&g);
    return out;
}
