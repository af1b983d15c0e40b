/* agentmsg._speedups: the reducer's fast path for a whole list of trusted events (see events/reducer.py).
 *
 * reduce_reply(events: list, max_open: int, call_states: frozenset, parse_arguments) -> dict | None
 *
 * For reduce_events(events, trusted=True) with no source, no name and not strict: the events of one reply,
 * AGENT_START first, AGENT_END last (or no AGENT_END: the reply was cut, INTERRUPTED), as agentmsg's provider
 * parsers emit them. Returns the `data` dict agentmsg.events._build.build makes for that reply (key for key, in
 * the same order, the values equal), which Python then writes with orjson and decodes through the codec's fast
 * path exactly as build does for a trusted reply; or None (gave up: the Python reducer reduces the list) on
 * anything but the clean cases below. The Python reducer defines the results; tests/test_cstream_reduce.py runs
 * both over the recorded streams, the conformance vectors and mutated lists.
 *
 * Taken: exact dict events without `source`; an event whose id (a str) came before is ignored, as the
 * reducer's duplicate window ignores it (a list of more than 4,096 events with a duplicate gives up: the window
 * may have forgotten the first); types AGENT_START (the first event only), MODEL_CALL_START, MODEL_CALL_END (usage,
 * metadata finishReason / model / refusal), TEXT_BLOCK_*, THINKING_BLOCK_* (provider, model, signature,
 * redactedData, END metadata), TOOL_CALL_* (a call started once; its deltas and END while it is open),
 * REQUEST_STOP, CUSTOM, AGENT_END (then only duplicates may follow). Given up: any other event type, an event before
 * AGENT_START or after AGENT_END, a delta or END for what is not open (or is open as another kind), a START for
 * what is open (a tool call id started before), a value of a type the handler would fail on or report, more
 * open blocks than max_open, more than R_MAX_BLOCKS blocks. parse_arguments(raw) -> (raw, input, error) is
 * agentmsg.events._build.parse_arguments: the arguments of a tool call, parsed as build parses them. */
#include "cstream.h"

#include <math.h>

#define R_STRINGS(X)                                                                                           \
    X(type, "type") X(id, "id") X(createdAt, "createdAt") X(replyId, "replyId") X(name, "name")               \
    X(blockId, "blockId") X(delta, "delta") X(signature, "signature") X(redactedData, "redactedData")          \
    X(provider, "provider") X(model, "model") X(toolCallId, "toolCallId") X(toolCallName, "toolCallName")      \
    X(thoughtSignature, "thoughtSignature") X(metadata, "metadata") X(input, "input") X(state, "state")         \
    X(usage, "usage") X(finishReason, "finishReason") X(refusal, "refusal") X(generateReason, "generateReason") \
    X(reason, "reason") X(value, "value") X(source, "source") X(text, "text") X(thinking, "thinking")           \
    X(tool_use, "tool_use") X(content, "content") X(role, "role") X(ASSISTANT, "ASSISTANT")                    \
    X(timestamp, "timestamp") X(pending, "pending") X(argumentsError, "argumentsError")                        \
    X(redacted, "redacted") X(m_finish, "agentmsg_finish_reason") X(m_model, "agentmsg_model")                 \
    X(m_stop, "agentmsg_stop_reason") X(m_refusal, "agentmsg_refusal") X(m_errors, "agentmsg_errors")          \
    X(m_reason, "agentscope_generate_reason") X(INTERRUPTED, "INTERRUPTED")                                    \
    X(MIDDLEWARE, "MIDDLEWARE_STOP_REQUESTED") X(error_event, "agentmsg.error") X(empty, "")                   \
    X(inputTokens, "inputTokens") X(outputTokens, "outputTokens") X(cachedTokens, "cachedTokens")             \
    X(time, "time") X(totalTokens, "totalTokens") X(modelName, "modelName")

#define CS_PREFIX r_
R_STRINGS(CS_STRING_VAR)
static PyObject *r_zero, *r_int_min, *r_int_max, *r_max_long;
/* the dicts build makes, keys in its order (values None, the block type set): copied, then filled in */
static PyObject *r_tpl_data, *r_tpl_text, *r_tpl_thinking, *r_tpl_tool;

/* A dict of the keys (NULL-terminated), each None but key0 = value0 when value0 is not NULL. */
static PyObject *r_template(PyObject *value0, PyObject **keys) {
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
    for (int i = 0; keys[i] != NULL; i++)
        if (PyDict_SetItem(d, keys[i], i == 0 && value0 != NULL ? value0 : Py_None) < 0) {
            Py_DECREF(d);
            return NULL;
        }
    return d;
}

/* the event types, in the order of r_types */
enum {
    T_AGENT_START,
    T_AGENT_END,
    T_MODEL_CALL_START,
    T_MODEL_CALL_END,
    T_TEXT_BLOCK_START,
    T_TEXT_BLOCK_DELTA,
    T_TEXT_BLOCK_END,
    T_THINKING_BLOCK_START,
    T_THINKING_BLOCK_DELTA,
    T_THINKING_BLOCK_END,
    T_TOOL_CALL_START,
    T_TOOL_CALL_DELTA,
    T_TOOL_CALL_END,
    T_REQUEST_STOP,
    T_CUSTOM,
    T_COUNT
};
static const char *const r_type_names[T_COUNT] = {
    "AGENT_START",         "AGENT_END",        "MODEL_CALL_START",     "MODEL_CALL_END",  "TEXT_BLOCK_START",
    "TEXT_BLOCK_DELTA",    "TEXT_BLOCK_END",   "THINKING_BLOCK_START", "THINKING_BLOCK_DELTA",
    "THINKING_BLOCK_END",  "TOOL_CALL_START",  "TOOL_CALL_DELTA",      "TOOL_CALL_END",   "REQUEST_STOP",
    "CUSTOM"};
static PyObject *r_types[T_COUNT];

static int r_init(void) {
    if (r_max_long != NULL) return 0;
    R_STRINGS(CS_STRING_INTERN)
    for (int t = 0; t < T_COUNT; t++)
        if ((r_types[t] = PyUnicode_InternFromString(r_type_names[t])) == NULL) return -1;
    /* _handlers: INT_MIN, INT_MAX (agentmsg._json) and _MAX_INT (Java's Long.MAX_VALUE) */
    if ((r_zero = PyLong_FromLong(0)) == NULL) return -1;
    if ((r_int_min = PyLong_FromLongLong(LLONG_MIN)) == NULL) return -1;
    if ((r_int_max = PyLong_FromUnsignedLongLong(ULLONG_MAX)) == NULL) return -1;
    PyObject *data[] = {r_id, r_name, r_role, r_content, r_metadata, r_timestamp, r_usage, NULL};
    PyObject *text[] = {r_type, r_text, NULL};
    PyObject *thinking[] = {r_type, r_thinking, r_metadata, NULL};
    PyObject *tool[] = {r_type, r_id, r_name, r_input, r_content, r_metadata, r_state, NULL};
    if ((r_tpl_data = r_template(NULL, data)) == NULL || (r_tpl_text = r_template(r_text, text)) == NULL ||
        (r_tpl_thinking = r_template(r_thinking, thinking)) == NULL ||
        (r_tpl_tool = r_template(r_tool_use, tool)) == NULL)
        return -1;
    if ((r_max_long = PyLong_FromLongLong(LLONG_MAX)) == NULL) return -1; /* last: r_init is done */
    return 0;
}

/* Equal str objects (both exact str). */
static inline int r_str_eq(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    Py_ssize_t n = PyUnicode_GET_LENGTH(a);
    if (n != PyUnicode_GET_LENGTH(b) || PyUnicode_KIND(a) != PyUnicode_KIND(b)) return 0;
    return memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n * PyUnicode_KIND(a)) == 0;
}

/* The event type (T_*), or -1: not one this path takes. */
static int r_type_of(PyObject *t) {
    for (int i = 0; i < T_COUNT; i++)
        if (t == r_types[i]) return i;
    if (!PyUnicode_CheckExact(t)) return -1;
    for (int i = 0; i < T_COUNT; i++)
        if (r_str_eq(t, r_types[i])) return i;
    return -1;
}

/* ---- the blocks ------------------------------------------------------------------------------------ */
enum { K_TEXT = 1, K_THINKING = 2, K_CALL = 3 };
#define R_MAX_BLOCKS 256

typedef struct {
    int kind, open, received, has_meta;
    PyObject *key;    /* blockId / toolCallId: exact str, owned */
    PyObject *parts;  /* the text's fragments: list or NULL, owned */
    PyObject *meta;   /* the END's metadata (has_meta), owned */
    PyObject *extra1; /* thinking: provider; call: name (str or NULL), owned or NULL */
    PyObject *extra2; /* thinking: model; call: thoughtSignature, owned or NULL */
    PyObject *sig;    /* thinking: signature fragments (list); call: input (dict), owned or NULL */
    PyObject *red;    /* thinking: redactedData fragments (list); call: state (str), owned or NULL */
} RBlock;

typedef struct {
    RBlock *blocks;
    int nblocks, nopen;
    PyObject *reply_name;  /* AGENT_START name when a str, owned or NULL */
    PyObject *msg_id;      /* the message id, owned */
    PyObject *timestamp;   /* owned (None when none) */
    PyObject *model;       /* str, owned or NULL */
    PyObject *finish;      /* str, owned or NULL */
    PyObject *stop_reason; /* str, owned or NULL */
    PyObject *reason;      /* generate reason, owned or NULL */
    PyObject *usage;       /* dict, owned or NULL */
    PyObject *errors;      /* list, owned or NULL */
    int refusal;
} R;

static void r_clear(R *r) {
    for (int i = 0; i < r->nblocks; i++) {
        RBlock *b = &r->blocks[i];
        Py_XDECREF(b->key);
        Py_XDECREF(b->parts);
        Py_XDECREF(b->meta);
        Py_XDECREF(b->extra1);
        Py_XDECREF(b->extra2);
        Py_XDECREF(b->sig);
        Py_XDECREF(b->red);
    }
    Py_XDECREF(r->reply_name);
    Py_XDECREF(r->msg_id);
    Py_XDECREF(r->timestamp);
    Py_XDECREF(r->model);
    Py_XDECREF(r->finish);
    Py_XDECREF(r->stop_reason);
    Py_XDECREF(r->reason);
    Py_XDECREF(r->usage);
    Py_XDECREF(r->errors);
}

/* The open block of kind with key (exact str), or NULL. The last opened comes first. */
static RBlock *r_open(R *r, int kind, PyObject *key) {
    for (int i = r->nblocks - 1; i >= 0; i--) {
        RBlock *b = &r->blocks[i];
        if (b->open && b->kind == kind && r_str_eq(b->key, key)) return b;
    }
    return NULL;
}

/* Any block (open or not) with key: kinds in [lo, hi]; open_only: only open ones. */
static RBlock *r_find(R *r, int lo, int hi, int open_only, PyObject *key) {
    for (int i = r->nblocks - 1; i >= 0; i--) {
        RBlock *b = &r->blocks[i];
        if (b->kind >= lo && b->kind <= hi && (b->open || !open_only) && r_str_eq(b->key, key)) return b;
    }
    return NULL;
}

/* Append str to *list (created on first use): 0, -1 with an exception. */
static int r_add(PyObject **list, PyObject *s) {
    if (*list == NULL) {
        *list = PyList_New(1);
        if (*list == NULL) return -1;
        PyList_SET_ITEM(*list, 0, Py_NewRef(s));
        return 0;
    }
    return PyList_Append(*list, s);
}

/* The joined fragments: a new reference ("" for none). */
static PyObject *r_join(PyObject *list) {
    if (list == NULL) return Py_NewRef(r_empty);
    if (PyList_GET_SIZE(list) == 1) return Py_NewRef(PyList_GET_ITEM(list, 0));
    return PyUnicode_Join(r_empty, list);
}

#define BAIL 1
#define ERR (-1)

/* e[key]: borrowed, NULL when absent; *rc = BAIL when the lookup failed (a key of the event's whose == raised:
 * Python's handlers report that as a problem, so the error is cleared and Python decides). */
static inline PyObject *r_get(PyObject *e, PyObject *key, int *rc) {
    PyObject *v = PyDict_GetItemWithError(e, key);
    if (v == NULL && PyErr_Occurred()) {
        PyErr_Clear();
        *rc = BAIL;
    }
    return v;
}

/* java_form_of_instant(created_at) (agentmsg._time): a new reference, None when it is not a UTC instant. */
static PyObject *r_java_time(PyObject *c) {
    if (c == NULL || !PyUnicode_Check(c) || !PyUnicode_IS_ASCII(c)) Py_RETURN_NONE;
    const char *s = (const char *)PyUnicode_DATA(c);
    Py_ssize_t n = PyUnicode_GET_LENGTH(c);
    if (n < 20 || (s[n - 1] != 'Z' && s[n - 1] != 'z')) Py_RETURN_NONE;
    static const char shape[] = "dddd-dd-ddTdd:dd:dd";
    for (int i = 0; i < 19; i++) {
        char want = shape[i], got = s[i];
        if (want == 'd' ? (got < '0' || got > '9') : want == 'T' ? (got != 'T' && got != 't') : got != want)
            Py_RETURN_NONE;
    }
    char frac[3] = {'0', '0', '0'};
    if (n > 20) {
        Py_ssize_t digits = n - 21; /* s[19] == '.', then 1 to 9 digits, then the Z */
        if (s[19] != '.' || digits < 1 || digits > 9) Py_RETURN_NONE;
        for (Py_ssize_t i = 20; i < n - 1; i++)
            if (s[i] < '0' || s[i] > '9') Py_RETURN_NONE;
        for (Py_ssize_t i = 0; i < 3 && i < digits; i++) frac[i] = s[20 + i];
    }
    char out[23];
    memcpy(out, s, 10);
    out[10] = ' ';
    memcpy(out + 11, s + 11, 8);
    out[19] = '.';
    memcpy(out + 20, frac, 3);
    return PyUnicode_FromStringAndSize(out, 23);
}

/* Set *slot to a new reference of v. */
static inline void r_set(PyObject **slot, PyObject *v) { Py_XSETREF(*slot, Py_NewRef(v)); }

/* The END of an open block or call b (its event e): the metadata it carries kept, the block closed; rc passed on
 * (a lookup of e's that failed). */
static int r_end(R *r, RBlock *b, PyObject *e, int rc) {
    PyObject *v = r_get(e, r_metadata, &rc);
    if (v != NULL) {
        r_set(&b->meta, v);
        b->has_meta = 1;
    }
    b->open = 0;
    r->nopen--;
    return rc;
}

/* A new block (open): NULL when there are too many (gives up). */
static RBlock *r_new_block(R *r, int kind, PyObject *key, Py_ssize_t max_open) {
    if (r->nblocks >= R_MAX_BLOCKS || r->nopen >= max_open) return NULL;
    RBlock *b = &r->blocks[r->nblocks++];
    memset(b, 0, sizeof(*b));
    b->kind = kind;
    b->open = 1;
    b->key = Py_NewRef(key);
    r->nopen++;
    return b;
}

/* MODEL_CALL_END (_handlers._model_end), with its reply open: BAIL, ERR or 0. */
static int r_model_end(R *r, PyObject *e) {
    int rc = 0;
    for (int i = 0; i < r->nblocks; i++) /* a model call's tool calls end with it */
        if (r->blocks[i].kind == K_CALL && r->blocks[i].open) {
            r->blocks[i].open = 0;
            r->nopen--;
        }
    PyObject *meta = r_get(e, r_metadata, &rc);
    if (rc) return rc;
    if (meta != NULL && PyDict_CheckExact(meta)) {
        PyObject *v = r_get(meta, r_finishReason, &rc);
        if (rc) return rc;
        if (v != NULL && PyUnicode_CheckExact(v)) r_set(&r->finish, v); /* another value is not taken */
        v = r_get(meta, r_model, &rc);
        if (rc) return rc;
        if (v != NULL && PyUnicode_CheckExact(v)) r_set(&r->model, v);
        v = r_get(meta, r_refusal, &rc);
        if (rc) return rc;
        if (v == Py_True) r->refusal = 1;
    }
    PyObject *usage = r_get(e, r_usage, &rc);
    if (rc) return rc;
    if (usage == NULL || usage == Py_None) return 0;
    if (!PyDict_CheckExact(usage)) return BAIL; /* falsy values are nothing, others fail in Python */
    if (PyDict_GET_SIZE(usage) == 0) return 0;
    PyObject *total = r->usage != NULL ? Py_NewRef(r->usage) : PyDict_New();
    if (total == NULL) return ERR;
    PyObject *keys[5] = {r_inputTokens, r_outputTokens, r_cachedTokens, r_time, r_totalTokens};
    for (int k = 0; k < 5 && rc == 0; k++) {
        PyObject *v = r_get(usage, keys[k], &rc);
        if (rc || v == NULL || v == Py_None) continue;
        int neg;
        if (PyLong_CheckExact(v)) { /* the common case in C: a count within 63 bits, summed to one */
            int vo = 0, oo = 0;
            long long x = PyLong_AsLongLongAndOverflow(v, &vo), y = 0;
            PyObject *old = r_get(total, keys[k], &rc);
            if (rc) break;
            if (old != NULL) y = PyLong_CheckExact(old) ? PyLong_AsLongLongAndOverflow(old, &oo) : (oo = 1, 0);
            if (vo == 0 && oo == 0 && x != -1 && y != -1) {
                if (x < 0) continue; /* negative: ignored (and within INT_MIN) */
                long long sum;
                PyObject *s = __builtin_add_overflow(x, y, &sum) ? Py_NewRef(r_max_long) : PyLong_FromLongLong(sum);
                if (s == NULL || PyDict_SetItem(total, keys[k], s) < 0) rc = ERR;
                Py_XDECREF(s);
                continue;
            }
            if (PyErr_Occurred()) {
                rc = ERR;
                break;
            }
        }
        if (keys[k] != r_time) {
            if (!PyLong_CheckExact(v)) continue; /* not a 64-bit integer: ignored */
            int lo = PyObject_RichCompareBool(v, r_int_min, Py_GE), hi = PyObject_RichCompareBool(v, r_int_max, Py_LE);
            if (lo < 0 || hi < 0) {
                rc = ERR;
                break;
            }
            if (!lo || !hi) continue;
        } else if (!PyLong_CheckExact(v) && !PyFloat_CheckExact(v)) {
            rc = BAIL; /* compared with 0 in Python: a str would fail there */
            break;
        }
        neg = PyObject_RichCompareBool(v, r_zero, Py_LT);
        if (neg < 0) {
            rc = ERR;
            break;
        }
        if (neg) continue;
        PyObject *old = r_get(total, keys[k], &rc);
        if (rc) break;
        PyObject *s = PyNumber_Add(old != NULL ? old : r_zero, v);
        if (s == NULL) {
            rc = ERR;
            break;
        }
        int over = PyObject_RichCompareBool(s, r_max_long, Py_GT);
        if (over < 0) {
            Py_DECREF(s);
            rc = ERR;
            break;
        }
        if (over) Py_SETREF(s, Py_NewRef(r_max_long));
        if (PyDict_SetItem(total, keys[k], s) < 0) rc = ERR;
        Py_DECREF(s);
    }
    if (rc == 0 && PyDict_GET_SIZE(total) > 0) r_set(&r->usage, total);
    Py_DECREF(total);
    return rc;
}

/* ---- the message (_build.build) ------------------------------------------------------------------------ */

/* _block_dict for a thinking block: a new reference. */
static PyObject *r_thinking_dict(RBlock *b) {
    PyObject *text = r_join(b->parts), *meta = NULL, *out = NULL;
    if (text == NULL) return NULL;
    if (b->has_meta && PyDict_Check(b->meta)) {
        if ((meta = PyDict_Copy(b->meta)) == NULL) goto done;
    }
    if (b->extra1 != NULL || b->extra2 != NULL || b->sig != NULL || b->red != NULL) {
        if (meta == NULL && (meta = PyDict_New()) == NULL) goto done;
        if (b->extra1 != NULL && PyDict_SetDefault(meta, r_provider, b->extra1) == NULL) goto done;
        if (b->extra2 != NULL && PyDict_SetDefault(meta, r_model, b->extra2) == NULL) goto done;
        if (b->sig != NULL) {
            PyObject *sig = r_join(b->sig);
            if (sig == NULL || PyDict_SetDefault(meta, r_signature, sig) == NULL) {
                Py_XDECREF(sig);
                goto done;
            }
            Py_DECREF(sig);
        }
        if (b->red != NULL) {
            PyObject *red = r_join(b->red);
            if (red == NULL || PyDict_SetDefault(meta, r_redacted, Py_True) == NULL ||
                PyDict_SetDefault(meta, r_redactedData, red) == NULL) {
                Py_XDECREF(red);
                goto done;
            }
            Py_DECREF(red);
        }
    }
    out = PyDict_Copy(r_tpl_thinking);
    if (out == NULL || PyDict_SetItem(out, r_thinking, text) < 0 ||
        (meta != NULL && PyDict_SetItem(out, r_metadata, meta) < 0))
        Py_CLEAR(out);
done:
    Py_DECREF(text);
    Py_XDECREF(meta);
    return out;
}

/* _tool_use_dict(b, closing=True): a new reference. */
static PyObject *r_tool_use_dict(RBlock *b, PyObject *parse_arguments) {
    PyObject *raw = NULL, *meta = NULL, *args = NULL, *out = NULL, *parsed = NULL;
    if (b->received) {
        if ((raw = r_join(b->parts)) == NULL) return NULL;
    } else {
        raw = Py_NewRef(Py_None);
    }
    meta = b->has_meta && PyDict_Check(b->meta) ? PyDict_Copy(b->meta) : PyDict_New();
    if (meta == NULL) goto done;
    if (b->extra2 != NULL && PyDict_SetDefault(meta, r_thoughtSignature, b->extra2) == NULL) goto done;
    if (b->sig != NULL) {
        args = Py_NewRef(b->sig);
    } else if (raw == Py_None || PyUnicode_GET_LENGTH(raw) == 0) {
        if ((args = PyDict_New()) == NULL) goto done;
    } else {
        parsed = PyObject_CallOneArg(parse_arguments, raw); /* (raw, input, error or None) */
        if (parsed == NULL) goto done;
        if (!PyTuple_CheckExact(parsed) || PyTuple_GET_SIZE(parsed) != 3) {
            PyErr_SetString(PyExc_TypeError, "parse_arguments returns (raw, input, error)");
            goto done;
        }
        Py_SETREF(raw, Py_NewRef(PyTuple_GET_ITEM(parsed, 0)));
        args = Py_NewRef(PyTuple_GET_ITEM(parsed, 1));
        PyObject *err = PyTuple_GET_ITEM(parsed, 2);
        if (err != Py_None && PyDict_SetItem(meta, r_argumentsError, err) < 0) goto done;
    }
    out = PyDict_Copy(r_tpl_tool);
    if (out == NULL || PyDict_SetItem(out, r_id, b->key) < 0 ||
        PyDict_SetItem(out, r_name,
                       b->extra1 != NULL && PyUnicode_GET_LENGTH(b->extra1) > 0 ? b->extra1 : r_empty) < 0 ||
        PyDict_SetItem(out, r_input, args) < 0 || PyDict_SetItem(out, r_content, raw) < 0 ||
        PyDict_SetItem(out, r_metadata, meta) < 0 ||
        PyDict_SetItem(out, r_state, b->red != NULL ? b->red : r_pending) < 0)
        Py_CLEAR(out);
done:
    Py_XDECREF(raw);
    Py_XDECREF(meta);
    Py_XDECREF(args);
    Py_XDECREF(parsed);
    return out;
}

static PyObject *r_build(R *r, int interrupted, PyObject *parse_arguments) {
    PyObject *content = PyList_New(r->nblocks), *metadata = NULL, *usage = NULL, *data = NULL;
    if (content == NULL) return NULL;
    for (int i = 0; i < r->nblocks; i++) {
        RBlock *b = &r->blocks[i];
        PyObject *d;
        if (b->kind == K_TEXT) {
            PyObject *text = r_join(b->parts);
            if (text == NULL) goto done;
            d = PyDict_Copy(r_tpl_text);
            if (d != NULL && PyDict_SetItem(d, r_text, text) < 0)
                Py_CLEAR(d);
            Py_DECREF(text);
        } else if (b->kind == K_THINKING) {
            d = r_thinking_dict(b);
        } else {
            d = r_tool_use_dict(b, parse_arguments);
        }
        if (d == NULL) goto done;
        PyList_SET_ITEM(content, i, d);
    }
    if ((metadata = PyDict_New()) == NULL) goto done;
    if (r->finish != NULL && PyDict_SetItem(metadata, r_m_finish, r->finish) < 0) goto done;
    if (r->model != NULL && PyDict_SetItem(metadata, r_m_model, r->model) < 0) goto done;
    if (r->stop_reason != NULL && PyDict_SetItem(metadata, r_m_stop, r->stop_reason) < 0) goto done;
    if (r->refusal && PyDict_SetItem(metadata, r_m_refusal, Py_True) < 0) goto done;
    if (r->errors != NULL) {
        PyObject *errors = PyList_GetSlice(r->errors, 0, PyList_GET_SIZE(r->errors));
        if (errors == NULL) goto done;
        int rc = PyDict_SetItem(metadata, r_m_errors, errors);
        Py_DECREF(errors);
        if (rc < 0) goto done;
    }
    PyObject *reason = interrupted ? r_INTERRUPTED : r->reason;
    if (reason != NULL && PyDict_SetItem(metadata, r_m_reason, reason) < 0) goto done;
    if (r->usage != NULL) {
        if ((usage = PyDict_Copy(r->usage)) == NULL) goto done;
    } else {
        usage = Py_NewRef(Py_None);
    }
    data = PyDict_Copy(r_tpl_data);
    if (data == NULL || PyDict_SetItem(data, r_id, r->msg_id) < 0 ||
        (r->reply_name != NULL && PyDict_SetItem(data, r_name, r->reply_name) < 0) ||
        PyDict_SetItem(data, r_role, r_ASSISTANT) < 0 || PyDict_SetItem(data, r_content, content) < 0 ||
        PyDict_SetItem(data, r_metadata, metadata) < 0 || PyDict_SetItem(data, r_timestamp, r->timestamp) < 0 ||
        PyDict_SetItem(data, r_usage, usage) < 0)
        Py_CLEAR(data);
done:
    Py_DECREF(content);
    Py_XDECREF(metadata);
    Py_XDECREF(usage);
    return data;
}

/* ---- distinct event ids ------------------------------------------------------------------------------ */
typedef struct {
    PyObject **slots; /* owned references */
    size_t mask;
} RIds;

static size_t r_id_hash(PyObject *s) {
    /* cheap: the length and the last 16 bytes (ids differ at the end: a prefix and a counter) */
    size_t n = (size_t)PyUnicode_GET_LENGTH(s) * (size_t)PyUnicode_KIND(s);
    const unsigned char *p = (const unsigned char *)PyUnicode_DATA(s);
    uint64_t a = 0, b = 0;
    if (n >= 16) {
        memcpy(&a, p + n - 8, 8);
        memcpy(&b, p + n - 16, 8);
    } else if (n >= 8) {
        memcpy(&a, p + n - 8, 8);
        memcpy(&b, p, 8);
    } else {
        memcpy(&a, p, n);
    }
    uint64_t h = a ^ (b * 0xC2B2AE3D27D4EB4FULL) ^ (uint64_t)n;
    h ^= h >> 33; /* MurmurHash3's finalizer: every input bit reaches the low bits the table uses */
    h *= 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 33;
    return (size_t)h;
}

/* 0: new (remembered), BAIL: seen before. */
static int r_id_add(RIds *t, PyObject *id) {
    size_t i = r_id_hash(id) & t->mask;
    while (t->slots[i] != NULL) {
        if (r_str_eq(t->slots[i], id)) return BAIL;
        i = (i + 1) & t->mask;
    }
    t->slots[i] = Py_NewRef(id);
    return 0;
}

/* ---- the loop ---------------------------------------------------------------------------------------- */

/* e[key] that must be an exact str: borrowed; NULL with *rc = BAIL (absent or another value) or ERR. */
static inline PyObject *r_str(PyObject *e, PyObject *key, int *rc) {
    PyObject *v = PyDict_GetItemWithError(e, key);
    if (v == NULL) {
        PyErr_Clear(); /* absent, or the lookup failed (see r_get) */
        *rc = BAIL;
        return NULL;
    }
    if (!PyUnicode_CheckExact(v)) {
        *rc = BAIL;
        return NULL;
    }
    return v;
}

/* _placeholder(name): a str starting with "__" */
static int r_placeholder(PyObject *name) {
    return PyUnicode_GET_LENGTH(name) >= 2 && PyUnicode_READ_CHAR(name, 0) == '_' && PyUnicode_READ_CHAR(name, 1) == '_';
}

/* One event of the open reply (not AGENT_START / AGENT_END): 0, BAIL or ERR. */
static int r_event(R *r, PyObject *e, int t, Py_ssize_t max_open, PyObject *call_states) {
    int rc = 0;
    PyObject *key, *v, *delta;
    RBlock *b;
    switch (t) {
    case T_MODEL_CALL_START:
        v = r_get(e, r_modelName, &rc);
        if (v != NULL && PyUnicode_CheckExact(v)) r_set(&r->model, v);
        return rc;
    case T_MODEL_CALL_END:
        return r_model_end(r, e);
    case T_TEXT_BLOCK_START:
    case T_THINKING_BLOCK_START:
        if ((key = r_str(e, r_blockId, &rc)) == NULL) return rc;
        if (r_find(r, K_TEXT, K_THINKING, 1, key) != NULL) return BAIL; /* started twice */
        b = r_new_block(r, t == T_TEXT_BLOCK_START ? K_TEXT : K_THINKING, key, max_open);
        if (b == NULL) return BAIL;
        if (t == T_THINKING_BLOCK_START) {
            v = r_get(e, r_provider, &rc);
            if (v != NULL && PyUnicode_Check(v)) b->extra1 = Py_NewRef(v);
            v = r_get(e, r_model, &rc);
            if (v != NULL && PyUnicode_Check(v)) b->extra2 = Py_NewRef(v);
        }
        return rc;
    case T_TEXT_BLOCK_DELTA:
    case T_THINKING_BLOCK_DELTA:
    case T_TOOL_CALL_DELTA: {
        int kind = t == T_TEXT_BLOCK_DELTA ? K_TEXT : t == T_THINKING_BLOCK_DELTA ? K_THINKING : K_CALL;
        if ((key = r_str(e, kind == K_CALL ? r_toolCallId : r_blockId, &rc)) == NULL) return rc;
        if ((delta = r_str(e, r_delta, &rc)) == NULL) return rc;
        if ((b = r_open(r, kind, key)) == NULL) return BAIL;
        if (r_add(&b->parts, delta) < 0) return ERR;
        b->received = 1;
        if (kind == K_THINKING) {
            if ((v = r_get(e, r_signature, &rc)) != NULL && PyUnicode_CheckExact(v) && r_add(&b->sig, v) < 0)
                return ERR;
            if ((v = r_get(e, r_redactedData, &rc)) != NULL && PyUnicode_CheckExact(v) && r_add(&b->red, v) < 0)
                return ERR;
        }
        return rc;
    }
    case T_TEXT_BLOCK_END:
    case T_THINKING_BLOCK_END:
        if ((key = r_str(e, r_blockId, &rc)) == NULL) return rc;
        if ((b = r_open(r, t == T_TEXT_BLOCK_END ? K_TEXT : K_THINKING, key)) == NULL) return BAIL;
        return r_end(r, b, e, rc);
    case T_TOOL_CALL_START:
        if ((key = r_str(e, r_toolCallId, &rc)) == NULL) return rc;
        if (r_find(r, K_CALL, K_CALL, 0, key) != NULL) return BAIL; /* started before */
        if ((b = r_new_block(r, K_CALL, key, max_open)) == NULL) return BAIL;
        v = r_get(e, r_toolCallName, &rc);
        if (v != NULL && PyUnicode_Check(v)) b->extra1 = Py_NewRef(v);
        v = r_get(e, r_thoughtSignature, &rc);
        if (v != NULL && PyUnicode_Check(v)) b->extra2 = Py_NewRef(v);
        return rc;
    case T_TOOL_CALL_END:
        if ((key = r_str(e, r_toolCallId, &rc)) == NULL) return rc;
        if ((b = r_open(r, K_CALL, key)) == NULL) return BAIL;
        v = r_get(e, r_toolCallName, &rc);
        if (v != NULL && PyUnicode_Check(v) && PyUnicode_GET_LENGTH(v) > 0 &&
            (b->extra1 == NULL || (r_placeholder(b->extra1) && !r_placeholder(v))))
            r_set(&b->extra1, v); /* _adopt_name */
        if ((v = r_get(e, r_input, &rc)) != NULL && PyDict_Check(v)) r_set(&b->sig, v);
        if ((v = r_get(e, r_state, &rc)) != NULL && v != Py_None) {
            if (!PyUnicode_CheckExact(v)) return BAIL;
            int known = PySet_Contains(call_states, v);
            if (known < 0) return ERR;
            if (known) r_set(&b->red, v);
        }
        return r_end(r, b, e, rc);
    case T_REQUEST_STOP:
        v = r_get(e, r_generateReason, &rc);
        if (v == NULL || v == Py_None || (PyUnicode_CheckExact(v) && PyUnicode_GET_LENGTH(v) == 0))
            v = r_MIDDLEWARE;
        else if (!PyUnicode_CheckExact(v))
            return BAIL;
        r_set(&r->reason, v);
        v = r_get(e, r_reason, &rc);
        if (v != NULL && PyUnicode_CheckExact(v) && PyUnicode_GET_LENGTH(v) > 0) r_set(&r->stop_reason, v);
        return rc;
    case T_CUSTOM:
        v = r_get(e, r_name, &rc);
        if (v == NULL || !PyUnicode_Check(v)) return rc; /* == with a str is False for JSON's other values */
        if (!PyUnicode_CheckExact(v)) return BAIL;
        if (!r_str_eq(v, r_error_event)) return rc;
        v = r_get(e, r_value, &rc);
        if (v == NULL || !PyDict_CheckExact(v)) return rc;
        if (r->errors == NULL && (r->errors = PyList_New(0)) == NULL) return ERR;
        return PyList_Append(r->errors, v) < 0 ? ERR : 0;
    default:
        return BAIL;
    }
}

/* AGENT_START (the first event): the reply's name, id and timestamp. */
static int r_start(R *r, PyObject *e) {
    int rc = 0;
    PyObject *v = r_get(e, r_name, &rc);
    if (v != NULL && PyUnicode_Check(v)) r->reply_name = Py_NewRef(v);
    v = r_get(e, r_replyId, &rc);
    if (rc) return rc;
    if (v != NULL && PyUnicode_Check(v) && PyUnicode_GET_LENGTH(v) > 0) {
        r->msg_id = Py_NewRef(v);
    } else {
        PyObject *id = r_get(e, r_id, &rc);
        if (rc) return rc;
        if (id != NULL && PyUnicode_Check(id) && !PyUnicode_CheckExact(id)) return BAIL;
        r->msg_id = id != NULL && PyUnicode_CheckExact(id) && PyUnicode_GET_LENGTH(id) > 0
                        ? PyUnicode_FromFormat("msg-%U", id)
                        : PyUnicode_FromString("msg-0");
        if (r->msg_id == NULL) return ERR;
    }
    v = r_get(e, r_createdAt, &rc);
    if (rc) return rc;
    r->timestamp = r_java_time(v);
    return r->timestamp == NULL ? ERR : 0;
}

#define R_SMALL_IDS 256
#define R_WINDOW 4096 /* the reducer's dedupe_window (DEFAULT_DEDUPE_WINDOW): a list of no more events than
                       * that remembers every id, so a duplicate is always ignored */

PyObject *cs_reduce_reply(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4 || !PyList_Check(args[0]) || !PyAnySet_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "reduce_reply(events: list, max_open: int, call_states: frozenset, "
                                         "parse_arguments)");
        return NULL;
    }
    if (r_init() < 0) return NULL;
    Py_ssize_t max_open = PyLong_AsSsize_t(args[1]);
    if (max_open == -1 && PyErr_Occurred()) return NULL;
    PyObject *events = args[0], *call_states = args[2], *parse_arguments = args[3], *out = NULL;
    Py_ssize_t n = PyList_GET_SIZE(events);
    if (n == 0) Py_RETURN_NONE;
    R r;
    memset(&r, 0, sizeof(r));
    RBlock blocks[R_MAX_BLOCKS];
    r.blocks = blocks;
    PyObject *small[R_SMALL_IDS];
    RIds ids;
    size_t size = 16;
    while (size < 2 * (size_t)n) size <<= 1;
    ids.mask = size - 1;
    if (size <= R_SMALL_IDS) {
        ids.slots = small;
        memset(small, 0, size * sizeof(PyObject *));
    } else if ((ids.slots = PyMem_Calloc(size, sizeof(PyObject *))) == NULL) {
        return PyErr_NoMemory();
    }
    int rc = 0, ended = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events) && rc == 0; i++) {
        PyObject *e = PyList_GET_ITEM(events, i);
        if (!PyDict_CheckExact(e)) {
            rc = BAIL;
            break;
        }
        Py_INCREF(e);
        PyObject *v = r_get(e, r_source, &rc);
        if (v != NULL) rc = BAIL; /* a subagent's event, or a source of None: Python decides */
        if (rc == 0 && (v = r_get(e, r_id, &rc)) != NULL && PyUnicode_CheckExact(v) && r_id_add(&ids, v)) {
            /* a duplicate: ignored, as the reducer's window of the last 4,096 ids or more ignores it */
            if (n > R_WINDOW) rc = BAIL;
            Py_DECREF(e);
            continue;
        }
        if (rc == 0 && ended) rc = BAIL; /* an event after AGENT_END */
        int t = -1;
        if (rc == 0) {
            v = r_get(e, r_type, &rc);
            t = v != NULL ? r_type_of(v) : -1;
            if (t < 0 && rc == 0) rc = BAIL;
        }
        if (rc == 0) {
            if (i == 0)
                rc = t == T_AGENT_START ? r_start(&r, e) : BAIL;
            else if (t == T_AGENT_START)
                rc = BAIL;
            else if (t == T_AGENT_END)
                ended = 1;
            else
                rc = r_event(&r, e, t, max_open, call_states);
        }
        Py_DECREF(e);
    }
    if (rc == 0) out = r_build(&r, !ended, parse_arguments);
    else if (rc == BAIL) out = Py_NewRef(Py_None);
    r_clear(&r);
    for (size_t i = 0; i < size; i++) Py_XDECREF(ids.slots[i]);
    if (ids.slots != small) PyMem_Free(ids.slots);
    return out;
}

/* ---- plain_json: whether msgspec.convert may stand for orjson.dumps + the JSON decoder ----------------------
 * The reducer's data reaches the codec's fast path as JSON text (orjson.dumps, then msgspec's decoder). For a value
 * of nothing but exact JSON types, that round trip gives back the same values, so msgspec.convert on the value
 * itself makes the same structs with the same checks (events/reducer.py, _fast_reply), without the text. Not so
 * for what orjson writes otherwise or refuses: a float that is not finite (written as null), a str with a lone
 * surrogate, an integer beyond 64 bits, a subclass, other types, nesting orjson refuses; nor for a value whose text
 * may be over the size limit the decoder is given. Any of those: 0 (the round trip decides).
 * msgspec.convert keeps the objects it is given where the type is Any (a map's values): the JSON text made new
 * ones. So that the message shares no list or dict with the events, containers are taken only down to the
 * message's maps: `budget` is how many more levels of containers a value may hold (the message's blocks and their
 * maps, which convert makes anew, as structs or shallow copies). */

static int plain(PyObject *v, int budget, Py_ssize_t *size) {
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyUnicode_Type) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(v);
        int kind = PyUnicode_KIND(v);
        if (kind != PyUnicode_1BYTE_KIND) {
            const void *d = PyUnicode_DATA(v);
            for (Py_ssize_t i = 0; i < n; i++) {
                Py_UCS4 c = PyUnicode_READ(kind, d, i);
                if (c >= 0xD800 && c <= 0xDFFF) return 0;
            }
        }
        *size += 6 * n + 2; /* (at most 6 bytes a character: \u00XX, or 4 of UTF-8) */
        return 1;
    }
    if (t == &PyLong_Type) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow != 0 || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0; /* (beyond 64 signed bits: the round trip decides) */
        }
        *size += 21;
        return 1;
    }
    if (t == &PyFloat_Type) {
        double x = PyFloat_AS_DOUBLE(v);
        if (!isfinite(x)) return 0;
        *size += 32;
        return 1;
    }
    if (v == Py_None || v == Py_True || v == Py_False) {
        *size += 5;
        return 1;
    }
    if (budget <= 0) return 0;
    if (t == &PyDict_Type) {
        Py_ssize_t pos = 0;
        PyObject *k, *x;
        *size += 2;
        while (PyDict_Next(v, &pos, &k, &x)) {
            if (Py_TYPE(k) != &PyUnicode_Type || !plain(k, 0, size) || !plain(x, budget - 1, size)) return 0;
            *size += 2;
        }
        return 1;
    }
    if (t == &PyList_Type) {
        *size += 2;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
            if (!plain(PyList_GET_ITEM(v, i), budget - 1, size)) return 0;
            *size += 1;
        }
        return 1;
    }
    return 0;
}

PyObject *cs_plain_json(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2 || !PyLong_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "plain_json(value, max_bytes)");
        return NULL;
    }
    Py_ssize_t limit = PyLong_AsSsize_t(args[1]);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    /* the message: its content (a list of blocks, each with maps) three levels, its other fields (maps) one */
    PyObject *msg = args[0];
    if (Py_TYPE(msg) != &PyDict_Type) Py_RETURN_FALSE;
    Py_ssize_t pos = 0, size = 2;
    PyObject *k, *x;
    while (PyDict_Next(msg, &pos, &k, &x)) {
        if (Py_TYPE(k) != &PyUnicode_Type || !plain(k, 0, &size)) Py_RETURN_FALSE;
        int content = PyUnicode_CompareWithASCIIString(k, "content") == 0;
        if (!plain(x, content ? 3 : 1, &size)) Py_RETURN_FALSE;
        size += 2;
    }
    return PyBool_FromLong(size <= limit);
}
