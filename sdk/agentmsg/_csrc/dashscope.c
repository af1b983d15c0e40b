/* agentmsg._speedups: the whole-body fast path of providers/dashscope.py's stream parser (see cstream.h).
 *
 * StreamParser.payload and _Reader.payload (incremental=None: the mode told from the stream, _Reader._delta) for
 * the clean native SSE replies: choice 0, reasoning_content and content (a string, or a list of {"text"} parts),
 * finish_reason ("null" while streaming), request_id as the reply id, usage held as usage_later holds it (each
 * chunk's, converted once at the end when it is still the last). Given up (CS_BAIL): an error payload or event, a
 * payload of no DashScope shape, a choice other than 0, logprobs, tool calls but those named on their first
 * fragment once the output is known to be incremental (see read_call), media parts, parts with more than
 * their text, an output with more than its choices (search_info, thoughts, ...), the legacy output.text, a usage
 * whose input_tokens is no count or any count of it that is no count, a reasoning_content that is no string.
 */
#include "cstream.h"

#include <math.h>

#define DS_STRINGS(X)                                                                                                 \
    X(output, "output") X(usage, "usage") X(request_id, "request_id") X(requestId, "requestId")                       \
    X(model, "model") X(code, "code") X(message, "message") X(choices, "choices") X(index, "index")                   \
    X(logprobs, "logprobs") X(delta, "delta") X(finish_reason, "finish_reason") X(content, "content")                 \
    X(reasoning_content, "reasoning_content") X(role, "role") X(tool_calls, "tool_calls") X(text, "text")             \
    X(thinking, "thinking") X(input_tokens, "input_tokens") X(output_tokens, "output_tokens")                         \
    X(completion_tokens, "completion_tokens") X(prompt_tokens_details, "prompt_tokens_details")                       \
    X(cached_tokens, "cached_tokens") X(total_tokens, "total_tokens") X(inputTokens, "inputTokens")                   \
    X(outputTokens, "outputTokens") X(cachedTokens, "cachedTokens") X(totalTokens, "totalTokens")                     \
    X(function, "function") X(arguments, "arguments") X(id, "id") X(name, "name") X(position, "position")             \
    X(cumulative, "cumulative") X(empty, "")                                                                          \
    X(restart_reasoning, "a cumulative reasoning does not extend the text so far: taken as new text (and any "        \
                         "later one like it)")                                                                        \
    X(restart_content, "a cumulative content does not extend the text so far: taken as new text (and any "            \
                       "later one like it)")

#define CS_PREFIX ds_
DS_STRINGS(CS_STRING_VAR)

/* dashscope._OUTPUT_KEYS: an output's keys beside its choices that are read or said */
static const char *const OUTPUT_KEYS[] = {"search_info", "tool_info",      "task_metric", "task_metrics",
                                          "audio",       "doc_references", "model_name",  "thoughts"};
#define N_OUTPUT_KEYS ((int)(sizeof(OUTPUT_KEYS) / sizeof(OUTPUT_KEYS[0])))
static PyObject *ds_output_keys[N_OUTPUT_KEYS];

static int ds_strings(void) {
    if (ds_output != NULL) return 0;
    DS_STRINGS(CS_STRING_INTERN)
    for (int k = 0; k < N_OUTPUT_KEYS; k++)
        if ((ds_output_keys[k] = PyUnicode_InternFromString(OUTPUT_KEYS[k])) == NULL) return -1;
    return 0;
}

/* _Reader's fields, for choice 0: the text so far per field (seen), its restarts, the value held while the mode is
 * not known (held), and the usage held for later (StreamBuilder._later). */
enum { F_REASONING = 0, F_CONTENT = 1 };

typedef struct {
    int incremental;         /* _Reader.incremental: -1 None, 0 False, 1 True */
    PyObject *seen[2];       /* owned or NULL (absent) */
    int restarts[2];
    int held;                /* the field of the held value, -1: none */
    PyObject *held_prev;     /* owned while held */
    PyObject *held_value;    /* owned while held */
    PyObject *later;         /* the last usage (a dict) held by usage_later: owned or NULL */
    PyObject *last_key;      /* _Reader.last_key[0]: the key of the last tool call entry, owned or NULL */
} DS;

static void ds_clear(DS *st) {
    Py_CLEAR(st->seen[0]);
    Py_CLEAR(st->seen[1]);
    Py_CLEAR(st->held_prev);
    Py_CLEAR(st->held_value);
    Py_CLEAR(st->later);
    Py_CLEAR(st->last_key);
}

static inline PyObject *get(PyObject *d, PyObject *key) { return PyDict_GetItemWithError(d, key); }

/* Python's truth of a JSON value (orjson's: never fails) */
static inline int truthy(PyObject *v) { return v != NULL && v != Py_None && PyObject_IsTrue(v) == 1; }

static inline int nonempty_str(PyObject *v) {
    return v != NULL && PyUnicode_CheckExact(v) && PyUnicode_GET_LENGTH(v) > 0;
}

/* the field's emitter: partial(b.thinking, choice=0) or partial(b.text, choice=0) */
static int emit(CS *b, int field, PyObject *value) {
    if (field == F_REASONING) return cs_thinking(b, ds_thinking, value, NULL, NULL);
    return cs_text(b, ds_text, value, NULL);
}

/* value.startswith(prev): 1, 0, or -1 with an exception */
static inline int starts(PyObject *value, PyObject *prev) {
    Py_ssize_t n = PyUnicode_Tailmatch(value, prev, 0, PY_SSIZE_T_MAX, -1);
    return n < 0 ? -1 : (int)n;
}

/* _Reader._settle(cumulative) */
static int settle(CS *b, DS *st, int cumulative) {
    if (st->held < 0) return CS_OK;
    int field = st->held;
    PyObject *prev = st->held_prev, *value = st->held_value;
    st->held = -1;
    st->held_prev = st->held_value = NULL;
    st->incremental = !cumulative;
    int rc;
    if (cumulative) {
        PyObject *rest = PyUnicode_Substring(value, PyUnicode_GET_LENGTH(prev), PyUnicode_GET_LENGTH(value));
        rc = rest == NULL ? CS_ERR : emit(b, field, rest);
        Py_XDECREF(rest);
    } else {
        Py_CLEAR(st->seen[0]);
        Py_CLEAR(st->seen[1]);
        rc = emit(b, field, value);
    }
    Py_DECREF(prev);
    Py_DECREF(value);
    return rc;
}

/* _Reader._delta(0, field, value, emit): value a str */
static int delta(CS *b, DS *st, int field, PyObject *value) {
    if (PyUnicode_GET_LENGTH(value) == 0) return CS_OK;
    int rc, sw;
    if (st->incremental < 0) {
        PyObject *prev = st->seen[field];
        if (prev == NULL) { /* a field's first value is new text either way */
            st->seen[field] = Py_NewRef(value);
            return emit(b, field, value);
        }
        if ((sw = starts(value, prev)) < 0) return CS_ERR;
        if (st->held >= 0) {
            if ((rc = settle(b, st, sw)) != CS_OK) return rc;
        } else if (sw) { /* either mode: held until the next value tells */
            st->held = field;
            st->held_prev = prev; /* (seen's reference) */
            st->held_value = Py_NewRef(value);
            st->seen[field] = Py_NewRef(value);
            return CS_OK;
        } else {
            st->incremental = 1;
            Py_CLEAR(st->seen[0]);
            Py_CLEAR(st->seen[1]);
        }
    }
    if (st->incremental) return emit(b, field, value);
    PyObject *prev = st->seen[field] != NULL ? st->seen[field] : ds_empty; /* cumulative */
    Py_INCREF(prev);
    Py_XSETREF(st->seen[field], Py_NewRef(value));
    sw = starts(value, prev);
    if (sw < 0) {
        Py_DECREF(prev);
        return CS_ERR;
    }
    if (sw) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(prev), len = PyUnicode_GET_LENGTH(value);
        Py_DECREF(prev);
        if (len <= n) return CS_OK;
        PyObject *rest = PyUnicode_Substring(value, n, len);
        if (rest == NULL) return CS_ERR;
        rc = emit(b, field, rest);
        Py_DECREF(rest);
        return rc;
    }
    Py_DECREF(prev);
    if (!st->restarts[field]) { /* said once per field */
        st->restarts[field] = 1;
        rc = cs_problem(b, ds_cumulative, field == F_REASONING ? ds_restart_reasoning : ds_restart_content);
        if (rc != CS_OK) return rc;
    }
    return emit(b, field, value);
}

/* _Reader._new_text(0, field, value, method) */
static inline int new_text(CS *b, DS *st, int field, PyObject *value) {
    if (st->incremental == 1) return emit(b, field, value);
    return delta(b, st, field, value);
}

/* _finish(b, 0, reason) */
static int finish(CS *b, PyObject *reason) {
    if (reason == NULL || !PyUnicode_Check(reason) || PyUnicode_GET_LENGTH(reason) == 0 ||
        PyUnicode_CompareWithASCIIString(reason, "null") == 0)
        return CS_OK;
    int tool_calls = PyUnicode_CompareWithASCIIString(reason, "tool_calls") == 0 ||
                     PyUnicode_CompareWithASCIIString(reason, "function_call") == 0;
    int normal = PyUnicode_CompareWithASCIIString(reason, "stop") == 0;
    return cs_finish(b, reason, tool_calls, normal);
}

/* Whether a content part list holds what is given up on: a media part (a dict of no "text": _media_part), or a
 * text part with more keys (_part_extras says them). */
static int parts_bail(PyObject *parts) {
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(parts); k++) {
        PyObject *part = PyList_GET_ITEM(parts, k);
        if (!PyDict_CheckExact(part)) continue;
        PyObject *t = get(part, ds_text);
        if (t == NULL) return PyErr_Occurred() ? CS_ERR : CS_BAIL;
        if (PyDict_GET_SIZE(part) > 1) return CS_BAIL;
    }
    return CS_OK;
}

/* _text_of(content) for a list: its text parts joined (a new reference) */
static PyObject *text_of_parts(PyObject *parts) {
    PyObject *texts = PyList_New(0);
    if (texts == NULL) return NULL;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(parts); k++) {
        PyObject *part = PyList_GET_ITEM(parts, k);
        if (!PyDict_CheckExact(part)) continue;
        PyObject *t = get(part, ds_text);
        if (t != NULL && PyUnicode_CheckExact(t) && PyList_Append(texts, t) < 0) {
            Py_DECREF(texts);
            return NULL;
        }
    }
    PyObject *out = PyUnicode_Join(ds_empty, texts);
    Py_DECREF(texts);
    return out;
}

/* Whether _text_of(content) is not empty */
static int has_text(PyObject *content) {
    if (content == NULL) return 0;
    if (PyUnicode_CheckExact(content)) return PyUnicode_GET_LENGTH(content) > 0;
    if (!PyList_CheckExact(content)) return 0;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(content); k++) {
        PyObject *part = PyList_GET_ITEM(content, k);
        if (PyDict_CheckExact(part) && nonempty_str(get(part, ds_text))) return 1;
    }
    return 0;
}

/* One entry (at position) of _Reader._tool_calls once the output is known to be incremental, then
 * StreamBuilder.tool_call for it: keyed by its index, else its id, else (a continuation: id "" and no index) the
 * last entry's key. Given up: a call waiting for its name (its first fragment names none), arguments given as JSON
 * (b.json_text), a name that is no string or that differs later, an index that is a bool. */
static int read_call(CS *b, DS *st, PyObject *tc, Py_ssize_t position) {
    PyObject *index = get(tc, ds_index);
    PyObject *fn = get(tc, ds_function); /* as_object */
    if (fn != NULL && !PyDict_CheckExact(fn)) fn = NULL;
    PyObject *call_id = get(tc, ds_id); /* the id when it is a str, "" (None) otherwise */
    if (!nonempty_str(call_id)) call_id = NULL;
    PyObject *args = fn != NULL ? get(fn, ds_arguments) : NULL;
    PyObject *name = fn != NULL ? get(fn, ds_name) : NULL;
    if (PyErr_Occurred()) return CS_ERR;
    if (index != NULL && PyBool_Check(index)) return CS_BAIL; /* (isinstance(True, int): a key of its own) */
    if (args != NULL && (PyDict_CheckExact(args) || PyList_CheckExact(args))) return CS_BAIL; /* b.json_text */
    if (args != NULL && !PyUnicode_CheckExact(args)) args = NULL; /* (no text: no arguments) */
    if (name == Py_None) name = NULL;
    if (name != NULL && !PyUnicode_CheckExact(name)) return CS_BAIL; /* said by the builder */
    PyObject *key; /* a new reference */
    if (index != NULL && PyLong_CheckExact(index)) {
        key = PyTuple_Pack(2, ds_index, index);
    } else if (call_id != NULL) {
        key = PyTuple_Pack(2, ds_id, call_id);
    } else if (st->last_key != NULL) {
        key = Py_NewRef(st->last_key);
    } else {
        PyObject *at = PyLong_FromSsize_t(position);
        key = at == NULL ? NULL : PyTuple_Pack(2, ds_position, at);
        Py_XDECREF(at);
    }
    if (key == NULL) return CS_ERR;
    Py_XSETREF(st->last_key, Py_NewRef(key));
    CSCall *call = cs_open_call(b, key);
    int rc = CS_OK;
    if (call != NULL && call_id != NULL && !call->minted) { /* another id at the key: a new call */
        int eq = PyUnicode_Compare(call->id, call_id);
        if (eq == -1 && PyErr_Occurred()) rc = CS_ERR;
        else if (eq != 0) {
            rc = cs_call_end(b, call);
            call = NULL;
        }
    }
    if (rc != CS_OK) {
    } else if (call == NULL) { /* a call starts: whole once it has its name (_start_ready), its arguments pending */
        if (name == NULL || PyUnicode_GET_LENGTH(name) == 0) rc = CS_BAIL; /* it waits for its name */
        else rc = cs_call_start(b, key, call_id, name, NULL, args);
    } else {
        if (name != NULL && PyUnicode_GET_LENGTH(name) > 0) { /* a later name: the same is no news, another said */
            int eq = PyUnicode_Compare(call->name, name);
            if (eq == -1 && PyErr_Occurred()) rc = CS_ERR;
            else if (eq != 0) rc = CS_BAIL;
        }
        if (rc == CS_OK) rc = cs_call_args(b, call, args);
    }
    Py_DECREF(key);
    return rc;
}

/* One choice of _Reader.payload's loop (choice 0): m a dict or NULL ({}), reason borrowed or NULL. */
static int read_choice(CS *b, DS *st, PyObject *m, PyObject *reason) {
    int rc = cs_open(b); /* b.choice(i) */
    if (rc != CS_OK) return rc;
    PyObject *content = NULL, *reasoning = NULL;
    Py_ssize_t plain = 0; /* how many of m's keys are _PLAIN_MESSAGE's */
    if (m != NULL) {
        content = get(m, ds_content);
        reasoning = get(m, ds_reasoning_content);
        plain = (content != NULL) + (reasoning != NULL) + (get(m, ds_role) != NULL);
        if (PyErr_Occurred()) return CS_ERR;
    }
    if (content == Py_None) content = NULL;
    if (reasoning == Py_None) reasoning = NULL;
    if (st->incremental == 1 && st->held < 0 && (m == NULL || PyDict_GET_SIZE(m) == plain) &&
        (reasoning == NULL || PyUnicode_CheckExact(reasoning)) &&
        (content == NULL || PyUnicode_CheckExact(content) ||
         (PyList_CheckExact(content) && PyList_GET_SIZE(content) == 0))) {
        /* the common chunk: incremental reasoning or text (or both) and nothing else */
        if (reasoning != NULL && (rc = cs_thinking(b, ds_thinking, reasoning, NULL, NULL)) != CS_OK) return rc;
        if (content != NULL && PyUnicode_CheckExact(content) && (rc = cs_text(b, ds_text, content, ds_thinking)) != CS_OK)
            return rc;
        return finish(b, reason);
    }
    if (reasoning != NULL && !PyUnicode_CheckExact(reasoning)) return CS_BAIL; /* b.string says it */
    PyObject *calls = m != NULL ? get(m, ds_tool_calls) : NULL;
    if (st->held >= 0) { /* _moves_on */
        int carried[3] = {reasoning != NULL && PyUnicode_GET_LENGTH(reasoning) > 0, has_text(content), truthy(calls)};
        if ((carried[0] || carried[1] || carried[2]) && !carried[st->held] && (rc = settle(b, st, 0)) != CS_OK)
            return rc;
    }
    if (reasoning != NULL && PyUnicode_GET_LENGTH(reasoning) > 0 &&
        (rc = new_text(b, st, F_REASONING, reasoning)) != CS_OK)
        return rc;
    int list = content != NULL && PyList_CheckExact(content);
    if (list && (rc = parts_bail(content)) != CS_OK) return rc;
    if (st->incremental == 1 && list) { /* _parts: each text part in its place */
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(content); k++) {
            PyObject *part = PyList_GET_ITEM(content, k);
            if (!PyDict_CheckExact(part)) continue;
            PyObject *t = get(part, ds_text);
            if (!nonempty_str(t)) continue;
            if ((rc = cs_end_block(b, ds_thinking, NULL)) != CS_OK) return rc;
            if ((rc = cs_text(b, ds_text, t, NULL)) != CS_OK) return rc;
        }
    } else if (has_text(content)) {
        PyObject *text = list ? text_of_parts(content) : Py_NewRef(content);
        if (text == NULL) return CS_ERR;
        rc = cs_end_block(b, ds_thinking, NULL);
        if (rc == CS_OK) rc = new_text(b, st, F_CONTENT, text);
        Py_DECREF(text);
        if (rc != CS_OK) return rc;
    }
    if (calls != NULL && PyList_CheckExact(calls) && PyList_GET_SIZE(calls) > 0) { /* _tool_calls(i, calls, False) */
        if (st->incremental != 1) return CS_BAIL; /* their arguments read by _delta (cumulative, or not known yet) */
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(calls); k++) {
            PyObject *tc = PyList_GET_ITEM(calls, k);
            if (PyDict_CheckExact(tc) && (rc = read_call(b, st, tc, k)) != CS_OK) return rc;
        }
    }
    return finish(b, reason);
}

/* _Reader.payload(obj, whole=False), past StreamParser.payload's checks */
static int read_payload(CS *b, DS *st, PyObject *obj, PyObject *output) {
    if (b->response_id == NULL) { /* b.identify(obj.get("request_id") or obj.get("requestId"), obj.get("model")) */
        PyObject *rid = get(obj, ds_request_id);
        if (!truthy(rid)) rid = get(obj, ds_requestId);
        PyObject *model = get(obj, ds_model);
        if (PyErr_Occurred()) return CS_ERR;
        cs_identify(b, rid, model);
    } else if (b->model == NULL) { /* (the native API names no model: identify only when obj has one) */
        PyObject *model = get(obj, ds_model);
        if (model != NULL) cs_identify(b, NULL, model);
    }
    PyObject *u = get(obj, ds_usage);
    if (u != NULL && u != Py_None) { /* b.usage_later(_usage, u, "input_tokens") */
        if (!PyDict_CheckExact(u)) return CS_BAIL;
        PyObject *n = get(u, ds_input_tokens);
        int overflow = 0;
        if (n == NULL || !PyLong_CheckExact(n)) return PyErr_Occurred() ? CS_ERR : CS_BAIL; /* converted now */
        long long v = PyLong_AsLongLongAndOverflow(n, &overflow);
        if (overflow < 0 || (overflow == 0 && v < 0)) return CS_BAIL;
        Py_XSETREF(st->later, Py_NewRef(u));
    }
    if (output == NULL || !PyDict_CheckExact(output)) return CS_OK;
    PyObject *choices = get(output, ds_choices);
    if (PyDict_GET_SIZE(output) > 1 || choices == NULL) { /* an output of more than its choices */
        for (int k = 0; k < N_OUTPUT_KEYS; k++)
            if (get(output, ds_output_keys[k]) != NULL) return CS_BAIL;
    }
    if (PyErr_Occurred()) return CS_ERR;
    if (choices == NULL || !PyList_CheckExact(choices)) /* the legacy output.text: given up */
        return get(output, ds_text) != NULL ? CS_BAIL : (PyErr_Occurred() ? CS_ERR : CS_OK);
    /* _choices then the loop (what _choices says, logprobs, is given up on: the order does not matter) */
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(choices); k++) {
        PyObject *ch = PyList_GET_ITEM(choices, k);
        if (!PyDict_CheckExact(ch)) continue;
        PyObject *i = get(ch, ds_index);
        if (i != NULL && PyLong_CheckExact(i)) {
            int overflow = 0;
            if (PyLong_AsLongLongAndOverflow(i, &overflow) != 0 || overflow) return CS_BAIL;
        } else if (k != 0) {
            return PyErr_Occurred() ? CS_ERR : CS_BAIL;
        }
        if (truthy(get(ch, ds_logprobs))) return CS_BAIL;
        PyObject *m = get(ch, ds_message);
        if (!truthy(m)) m = get(ch, ds_delta);
        if (!truthy(m) || !PyDict_CheckExact(m)) m = NULL;
        PyObject *reason = get(ch, ds_finish_reason);
        if (PyErr_Occurred()) return CS_ERR;
        int rc = read_choice(b, st, m, reason);
        if (rc != CS_OK) return rc;
    }
    return CS_OK;
}

/* StreamParser.payload(event, obj) */
static int payload(CSRun *r, const char *ev, Py_ssize_t evlen, PyObject *obj) {
    if (cs_is(ev, evlen, "error")) return CS_BAIL; /* an error event */
    PyObject *output = get(obj, ds_output);
    if (!truthy(output)) { /* _is_error(obj): the provider's error */
        PyObject *code = get(obj, ds_code);
        if (nonempty_str(code) && get(obj, ds_message) != NULL) return CS_BAIL;
        if (output == NULL && get(obj, ds_usage) == NULL) /* no DashScope shape: said at the end */
            return PyErr_Occurred() ? CS_ERR : CS_BAIL;
        if (PyErr_Occurred()) return CS_ERR;
    }
    return read_payload(r->b, (DS *)r->state, obj, output);
}

/* safe_int(value) for a count: CS_OK with *out (a new reference, or NULL for None), CS_BAIL when it is said */
static int count(PyObject *value, PyObject **out) {
    *out = NULL;
    if (value == NULL || value == Py_None) return CS_OK;
    if (PyLong_CheckExact(value)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow < 0 || (overflow == 0 && v < 0)) return CS_BAIL;
        *out = overflow > 0 ? PyLong_FromLongLong(LLONG_MAX) : Py_NewRef(value);
        return *out == NULL ? CS_ERR : CS_OK;
    }
    if (PyFloat_CheckExact(value)) {
        double d = PyFloat_AS_DOUBLE(value);
        if (!(d >= 0) || d != floor(d) || isinf(d)) return CS_BAIL;
        *out = d >= 9223372036854775808.0 ? PyLong_FromLongLong(LLONG_MAX) : PyLong_FromDouble(d);
        return *out == NULL ? CS_ERR : CS_OK;
    }
    return CS_BAIL;
}

/* _usage(u, b) of the usage held for later (input_tokens a count), then b.set_usage (StreamBuilder._settle_usage) */
static int settle_usage(CS *b, PyObject *u) {
    PyObject *details = get(u, ds_prompt_tokens_details);
    PyObject *cached = details != NULL && PyDict_CheckExact(details) ? get(details, ds_cached_tokens) : NULL;
    PyObject *out = get(u, ds_output_tokens);
    if (out == NULL && !PyErr_Occurred()) out = get(u, ds_completion_tokens);
    PyObject *total = get(u, ds_total_tokens);
    if (PyErr_Occurred()) return CS_ERR;
    PyObject *v[4] = {NULL, NULL, NULL, NULL};
    int rc = count(get(u, ds_input_tokens), &v[0]);
    if (rc == CS_OK) rc = count(out, &v[1]);
    if (rc == CS_OK) rc = count(cached, &v[2]);
    if (rc == CS_OK) rc = count(total, &v[3]);
    PyObject *usage = NULL;
    if (rc == CS_OK && (usage = PyDict_New()) == NULL) rc = CS_ERR;
    if (rc == CS_OK && v[0] != NULL && PyDict_SetItem(usage, ds_inputTokens, v[0]) < 0) rc = CS_ERR;
    if (rc == CS_OK && v[1] != NULL && PyDict_SetItem(usage, ds_outputTokens, v[1]) < 0) rc = CS_ERR;
    if (rc == CS_OK && v[2] != NULL && PyDict_SetItem(usage, ds_cachedTokens, v[2]) < 0) rc = CS_ERR;
    if (rc == CS_OK && v[0] != NULL && v[1] != NULL) { /* totalTokens = input + output (saturating) */
        unsigned long long s = PyLong_AsUnsignedLongLong(v[0]) + PyLong_AsUnsignedLongLong(v[1]);
        PyObject *t = PyErr_Occurred() ? NULL : PyLong_FromLongLong(s > (unsigned long long)LLONG_MAX ? LLONG_MAX
                                                                                                     : (long long)s);
        if (t == NULL || PyDict_SetItem(usage, ds_totalTokens, t) < 0) rc = CS_ERR;
        Py_XDECREF(t);
    } else if (rc == CS_OK && v[3] != NULL && PyDict_SetItem(usage, ds_totalTokens, v[3]) < 0) {
        rc = CS_ERR;
    }
    for (int k = 0; k < 4; k++) Py_XDECREF(v[k]);
    if (rc == CS_OK) rc = cs_usage(b, usage);
    Py_XDECREF(usage);
    return rc;
}

/* StreamParser.end_payloads: _Reader.end (a value still held is cumulative output), then (b.close's first step)
 * the usage held for later. (Payloads of no DashScope shape were given up on when they came.) */
static int end_payloads(CSRun *r) {
    DS *st = (DS *)r->state;
    int rc = settle(r->b, st, 1);
    if (rc != CS_OK || st->later == NULL) return rc;
    PyObject *u = st->later;
    st->later = NULL;
    rc = settle_usage(r->b, u);
    Py_DECREF(u);
    return rc;
}

PyObject *cs_dashscope_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (ds_strings() < 0) return NULL;
    DS st;
    memset(&st, 0, sizeof(st));
    st.incremental = -1;
    st.held = -1;
    CSRun r = {.payload = payload, .end_payloads = end_payloads, .state = &st};
    PyObject *out = cs_entry(args, nargs, "dashscope", &r);
    ds_clear(&st);
    return out;
}
