/* agentmsg._speedups: optional C speed-ups. The JSON writer of model objects (encode, writes, make_plan), the
 * reducer's delta loop (fold_deltas), and the SSE event scanner (sse_scan) and the string of a payload of a known
 * shape (json_string_between), at the end of this file.
 *
 * It writes exactly what orjson.dumps(value, default=agentmsg._codec.converter.json_default) writes, faster: the
 * model objects (attrs classes of agentmsg_models and their SDK subclasses) are written from a plan per
 * class that Python builds from the same attrs metadata as the pure-Python hooks (wire key, key order,
 * omitted when None), reading each attribute straight from its slot, so no dict is built per object.
 *
 * It gives up (returns None, no exception) on anything it does not write exactly as orjson would: values
 * of other types (datetime, UUID, namedtuple, ...), non-str dict keys, integers outside 64 bits, lone
 * surrogates, NaN and infinities (orjson would write null), a model field holding a value of another type
 * than its schema's (a str in a block list, a number for an id), nesting deeper than DEPTH_LIMIT, an error in
 * a Python hook. The caller then runs the
 * pure-Python path, which writes the same bytes or raises the SDK's own error. It stops (False) past its byte
 * cap, or where a part of a free-form value comes back (a value sharing its members, which Python then counts
 * without writing it: the list of the same list twice, 40 levels down, is 2**40 values written).
 * writes() walks a value as encode() does and writes nothing: whether encode() would write it (True:
 * dumps_json writes it without a refusal), at about half the cost; the formatters' check of their messages.
 * Building without a C
 * compiler leaves this module out and agentmsg runs the pure-Python path everywhere.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <structmember.h>

/* Below orjson's limit (254): giving up earlier is always exact (the pure-Python path writes it). */
#define DEPTH_LIMIT 240

typedef struct {
    PyObject *name;       /* attribute name (str) */
    PyObject *key;        /* b'"wire":' */
    Py_ssize_t offset;    /* slot offset, or -1: read with getattr */
    int omit_none;        /* not written when None */
    int expect;           /* EX_*: the JSON type the value must have (else give up), | EX_NULL: None too */
    PyObject *exact;      /* a class the value must be exactly (None aside), else give up; or NULL: any of expect */
} Field;

/* What a field holds. A value of another type gives up (the Python hooks then refuse it with its pointer). */
enum { EX_ANY, EX_STR, EX_INT, EX_NUM, EX_BOOL, EX_DICT, EX_LIST, EX_MODEL, EX_MODELS, EX_NULL = 16, EX_FREE = 32 };
/* EX_FREE: a free-form value (metadata, a tool's input): JSON values only, of their exact types; anything else in it
   (a tuple, a model object, a subclass) gives up, and the Python hooks refuse it as the constructors do. */

typedef struct {
    Py_ssize_t n;
    Field *fields;
    PyObject *unknown_name;  /* attribute holding the unknown keys, or NULL */
    Py_ssize_t unknown_offset;
    int own;                 /* the class is agentmsg's own (not a caller's subclass): writes() gives up otherwise */
    Py_ssize_t width;        /* its braces, commas and keys, every field written: what the dry run counts of it */
} Plan;

typedef struct {
    PyObject *bytes;    /* the output, written in place and resized (no copy at the end) */
    char *buf;          /* PyBytes_AS_STRING(bytes) */
    Py_ssize_t len, cap;
    PyObject *plans;    /* dict: type -> capsule(Plan) */
    PyObject *fallback; /* callable: model object -> dict (agentmsg._codec.converter.json_default) */
    PyObject *dumps;    /* callable: float -> bytes (orjson.dumps) */
    int dry;            /* check only: nothing is written, only whether it would be (writes() below) */
    int free;           /* > 0 inside a free-form field's value (EX_FREE) */
    Py_ssize_t max;     /* the byte cap: past it, no value more is begun (enc), the output is not wanted */
    Py_ssize_t met;     /* the dicts and lists of free-form values begun */
    void **seen;        /* past REMEMBER_AFTER of them, those begun (an open-addressing set of addresses) */
    Py_ssize_t seen_cap, seen_n;
} Enc;

/* The dicts and lists of free-form values an Enc begins before it remembers each one (Python's
   jsontext.REMEMBER_AFTER): one begun again shares its members (a list of the same list twice, 40 levels down:
   2**40 values written, from 41 lists), and the writer stops (2, as past the cap) long before the cap. A small
   value pays nothing for it. Every container remembered is alive meanwhile: held by the value written. */
#define REMEMBER_AFTER 4096
/* and the characters from which a string of a free-form value is remembered, each one (few are so long) */
#define LONG_STRING 65536

/* 1: p was in e->seen already; 0: added; -1: out of memory (an exception set). */
static int remember(Enc *e, void *p) {
    if (e->seen_n * 2 >= e->seen_cap) {
        Py_ssize_t cap = e->seen_cap ? e->seen_cap * 2 : 1 << 13;
        void **slots = PyMem_Calloc((size_t)cap, sizeof(void *));
        if (slots == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < e->seen_cap; i++) {
            void *q = e->seen[i];
            if (q == NULL) continue;
            size_t h = ((uintptr_t)q >> 4) * 0x9E3779B97F4A7C15ull;
            while (slots[h & (cap - 1)] != NULL) h++;
            slots[h & (cap - 1)] = q;
        }
        PyMem_Free(e->seen);
        e->seen = slots;
        e->seen_cap = cap;
    }
    size_t h = ((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull;
    for (;; h++) {
        void *q = e->seen[h & (e->seen_cap - 1)];
        if (q == p) return 1;
        if (q == NULL) break;
    }
    e->seen[h & (e->seen_cap - 1)] = p;
    e->seen_n++;
    return 0;
}

/* A dict or list of a free-form value begun: 2 when it was begun before (past REMEMBER_AFTER), else 0 (-1: an
   exception set). */
static inline int begun(Enc *e, PyObject *c) {
    if (!e->free || ++e->met <= REMEMBER_AFTER) return 0;
    int rc = remember(e, c);
    return rc > 0 ? 2 : rc;
}

#define PLAN_CAPSULE "agentmsg._speedups.Plan"

static int grow(Enc *e, Py_ssize_t need) {
    Py_ssize_t cap = e->cap ? e->cap : 1024;
    while (cap - e->len < need) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    if (e->bytes == NULL) {
        e->bytes = PyBytes_FromStringAndSize(NULL, cap);
        if (e->bytes == NULL) return -1;
    } else if (_PyBytes_Resize(&e->bytes, cap) < 0) {
        return -1; /* e->bytes is NULL (freed) */
    }
    e->buf = PyBytes_AS_STRING(e->bytes);
    e->cap = cap;
    return 0;
}

static inline int reserve(Enc *e, Py_ssize_t n) { return e->cap - e->len < n ? grow(e, n) : 0; }

/* The writer (encode) and its dry run (writes) are the same functions compiled twice, `dry` a constant in each
   (enc_w, enc_d: ENC below), so that neither asks which it is at every byte. The dry run writes nothing and counts
   in len at most what encode would write: a container's punctuation once, where it begins (a list of n values
   n + 1 bytes, a dict 2n + 1 besides its keys, a model object all its keys, braces and commas, its omitted fields'
   too: Plan.width), a string's characters 6 bytes each (an escape, \u001f, is the longest any takes) and its
   quotes, an integer 20 bytes, a float 24 (the longest each writes), null, true, false, {} and [] their own. So
   that a value it says is within the byte cap is so for encode too. It stops (2) where a container or a string
   takes it past the cap; encode begins no value past it. */
#if defined(__GNUC__) || defined(__clang__)
#define ALWAYS_INLINE static inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define ALWAYS_INLINE static __forceinline
#else
#define ALWAYS_INLINE static inline
#endif

/* n bytes of a value (null, true, false, {}, [], a number): the dry run counts them */
ALWAYS_INLINE int put(Enc *e, const char *s, Py_ssize_t n, const int dry) {
    if (dry) {
        e->len += n;
        return 0;
    }
    if (reserve(e, n) < 0) return -1;
    memcpy(e->buf + e->len, s, (size_t)n);
    e->len += n;
    return 0;
}

/* a container's punctuation: the dry run counted it where the container began */
ALWAYS_INLINE int put1(Enc *e, char c, const int dry) {
    if (dry) return 0;
    if (reserve(e, 1) < 0) return -1;
    e->buf[e->len++] = c;
    return 0;
}

static int enc_w(Enc *e, PyObject *v, int depth);
static int enc_d(Enc *e, PyObject *v, int depth);
#define ENC(dry, e, v, depth) ((dry) ? enc_d((e), (v), (depth)) : enc_w((e), (v), (depth)))

/* ---- strings: UTF-8, escaping only '"', '\\' and control characters, as orjson does ---------------- */

static const char HEX[] = "0123456789abcdef";

#define NEEDS_ESCAPE(c) ((c) < 0x20 || (c) == '"' || (c) == '\\')

/* Writes the escape of c (< 0x80, NEEDS_ESCAPE) at out; returns the end. At most 6 bytes. */
static inline char *write_escape(char *out, Py_UCS4 c) {
    *out++ = '\\';
    switch (c) {
    case '"': *out++ = '"'; break;
    case '\\': *out++ = '\\'; break;
    case '\b': *out++ = 'b'; break;
    case '\f': *out++ = 'f'; break;
    case '\n': *out++ = 'n'; break;
    case '\r': *out++ = 'r'; break;
    case '\t': *out++ = 't'; break;
    default:
        *out++ = 'u';
        *out++ = '0';
        *out++ = '0';
        *out++ = HEX[(c >> 4) & 0xf];
        *out++ = HEX[c & 0xf];
    }
    return out;
}

/* Whether any of the 8 ASCII bytes of w needs an escape (exact for bytes < 0x80). */
static inline int word_needs_escape(uint64_t w) {
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    uint64_t ctl = (w - 0x20 * ones) & ~w & high;
    uint64_t q = w ^ (0x22 * ones), b = w ^ (0x5c * ones);
    q = (q - ones) & ~q & high;
    b = (b - ones) & ~b & high;
    return (ctl | q | b) != 0;
}

/* An ASCII string: runs without escapes are found 8 bytes at a time and copied whole. */
static int enc_ascii(Enc *e, const unsigned char *p, Py_ssize_t n) {
    if (reserve(e, n + 2) < 0) return -1;
    e->buf[e->len++] = '"';
    Py_ssize_t i = 0, run = 0;
    while (i < n) {
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (word_needs_escape(w)) break;
            i += 8;
        }
        for (Py_ssize_t stop = i + 8 < n ? i + 8 : n; i < stop; i++) {
            unsigned char c = p[i];
            if (!NEEDS_ESCAPE(c)) continue;
            /* the run before it, then its escape: room for the rest as if nothing more were escaped */
            if (reserve(e, (i - run) + 6 + (n - i) + 1) < 0) return -1;
            memcpy(e->buf + e->len, p + run, (size_t)(i - run));
            e->len += i - run;
            e->len = write_escape(e->buf + e->len, c) - e->buf;
            run = i + 1;
        }
    }
    if (reserve(e, (n - run) + 1) < 0) return -1;
    memcpy(e->buf + e->len, p + run, (size_t)(n - run));
    e->len += n - run;
    e->buf[e->len++] = '"';
    return 0;
}

/* Whether a string of 2 or 4 bytes a character holds a lone surrogate (orjson refuses it). */
static int has_surrogate(int kind, const void *data, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= 0xd800 && c <= 0xdfff) return 1;
    }
    return 0;
}

/* A string in the dry run: every string writes but one holding a lone surrogate (none in a 1-byte string); 2
   where its most bytes take the count past the cap. */
ALWAYS_INLINE int str_dry(Enc *e, PyObject *s) {
    if (PyUnicode_READY(s) < 0) return -1; /* Python < 3.12: a str made by the legacy C API */
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (n > (PY_SSIZE_T_MAX - 2) / 6 || (e->len += 6 * n + 2) > e->max) return 2;
    return PyUnicode_KIND(s) != PyUnicode_1BYTE_KIND && has_surrogate(PyUnicode_KIND(s), PyUnicode_DATA(s), n);
}

static int enc_str(Enc *e, PyObject *s) {
    if (PyUnicode_READY(s) < 0) return -1; /* Python < 3.12: a str made by the legacy C API */
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (PyUnicode_IS_ASCII(s)) return enc_ascii(e, PyUnicode_1BYTE_DATA(s), n);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    /* UTF-8 takes at most 2 bytes per character of a 1-byte string, 3 of a 2-byte one, 4 of a 4-byte one;
       an escape 6 (ASCII characters only, which take 1 otherwise) */
    Py_ssize_t per = kind == PyUnicode_1BYTE_KIND ? 2 : kind == PyUnicode_2BYTE_KIND ? 3 : 4;
    if (n > (PY_SSIZE_T_MAX - 2) / 6) {
        PyErr_NoMemory();
        return -1;
    }
    if (reserve(e, per * n + 2) < 0) return -1;
    char *out = e->buf + e->len;
    *out++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c < 0x80) {
            if (NEEDS_ESCAPE(c)) {
                e->len = out - e->buf;
                if (reserve(e, 6 + per * (n - i - 1) + 1) < 0) return -1;
                out = write_escape(e->buf + e->len, c);
            } else {
                *out++ = (char)c;
            }
        } else if (c < 0x800) {
            *out++ = (char)(0xc0 | (c >> 6));
            *out++ = (char)(0x80 | (c & 0x3f));
        } else if (c < 0x10000) {
            if (c >= 0xd800 && c <= 0xdfff) {
                e->len = out - e->buf;
                return 1; /* a lone surrogate: orjson refuses it */
            }
            *out++ = (char)(0xe0 | (c >> 12));
            *out++ = (char)(0x80 | ((c >> 6) & 0x3f));
            *out++ = (char)(0x80 | (c & 0x3f));
        } else {
            *out++ = (char)(0xf0 | (c >> 18));
            *out++ = (char)(0x80 | ((c >> 12) & 0x3f));
            *out++ = (char)(0x80 | ((c >> 6) & 0x3f));
            *out++ = (char)(0x80 | (c & 0x3f));
        }
    }
    *out++ = '"';
    e->len = out - e->buf;
    return 0;
}

/* ---- numbers ------------------------------------------------------------------------------------- */

static int enc_int(Enc *e, PyObject *v) {
    char buf[32];
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred()) return -1;
    if (overflow == 0) {
        if (e->dry) return e->len += 20, 0;
        int n = snprintf(buf, sizeof buf, "%lld", x);
        return put(e, buf, n, 0);
    }
    if (overflow < 0) return 1; /* below -2^63: orjson refuses it */
    unsigned long long u = PyLong_AsUnsignedLongLong(v);
    if (u == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 1; /* above 2^64-1 */
    }
    if (e->dry) return e->len += 20, 0;
    int n = snprintf(buf, sizeof buf, "%llu", u);
    return put(e, buf, n, 0);
}

static int enc_float(Enc *e, PyObject *v) {
    double d = PyFloat_AS_DOUBLE(v);
    if (!Py_IS_FINITE(d)) return 1; /* NaN, infinity: JSON has no such number (orjson writes null) */
    if (e->dry) return e->len += 24, 0; /* (every finite float writes) */
    char *r = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (r == NULL) return -1;
    if (strchr(r, 'e') == NULL) { /* without an exponent Python's repr is orjson's text */
        int rc = put(e, r, (Py_ssize_t)strlen(r), 0);
        PyMem_Free(r);
        return rc;
    }
    PyMem_Free(r);
    /* exponents: orjson's own text */
    PyObject *b = PyObject_CallOneArg(e->dumps, v);
    if (b == NULL) return -1;
    if (!PyBytes_Check(b)) { /* not orjson.dumps: no text to copy (its bytes were read as if it were) */
        Py_DECREF(b);
        return 1;
    }
    int rc = put(e, PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), 0);
    Py_DECREF(b);
    return rc;
}

/* ---- containers ---------------------------------------------------------------------------------- */

ALWAYS_INLINE int enc_dict(Enc *e, PyObject *d, int depth, const int dry) {
    Py_ssize_t n = PyDict_GET_SIZE(d);
    if (n == 0) return put(e, "{}", 2, dry);
    if (depth >= DEPTH_LIMIT) return 1;
    int rc = begun(e, d);
    if (rc) return rc;
    /* the dry run: its braces, commas and colons (its keys are strings) */
    if (dry && (e->len += 2 * n + 1) > e->max) return 2;
    if (put1(e, '{', dry) < 0) return -1;
    Py_ssize_t pos = 0, met = 0;
    PyObject *k, *v;
    while (PyDict_Next(d, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k)) return 1; /* orjson: "Dict key must be str" */
        if (met++ && put1(e, ',', dry) < 0) return -1;
        Py_INCREF(k);
        Py_INCREF(v);
        rc = dry ? str_dry(e, k) : enc_str(e, k);
        if (rc == 0) rc = put1(e, ':', dry);
        if (rc == 0) rc = ENC(dry, e, v, depth + 1);
        Py_DECREF(k);
        Py_DECREF(v);
        if (rc) return rc;
    }
    if (dry && met > n) e->len += 2 * (met - n); /* (grown meanwhile, by a hook: counted too) */
    return put1(e, '}', dry);
}

ALWAYS_INLINE int enc_seq(Enc *e, PyObject *seq, int depth, int is_list, const int dry) {
    Py_ssize_t n = is_list ? PyList_GET_SIZE(seq) : PyTuple_GET_SIZE(seq);
    if (n == 0) return put(e, "[]", 2, dry);
    if (depth >= DEPTH_LIMIT) return 1;
    int rc = begun(e, seq);
    if (rc) return rc;
    if (dry && (e->len += n + 1) > e->max) return 2; /* the dry run: its brackets and commas */
    if (put1(e, '[', dry) < 0) return -1;
    Py_ssize_t i = 0;
    for (; i < (is_list ? PyList_GET_SIZE(seq) : n); i++) {
        if (i && put1(e, ',', dry) < 0) return -1;
        PyObject *v = is_list ? PyList_GET_ITEM(seq, i) : PyTuple_GET_ITEM(seq, i);
        Py_INCREF(v);
        rc = ENC(dry, e, v, depth + 1);
        Py_DECREF(v);
        if (rc) return rc;
    }
    if (dry && i > n) e->len += i - n; /* (a list grown meanwhile, by a hook: counted too) */
    return put1(e, ']', dry);
}

static int enc_dict_w(Enc *e, PyObject *d, int depth) { return enc_dict(e, d, depth, 0); }
static int enc_dict_d(Enc *e, PyObject *d, int depth) { return enc_dict(e, d, depth, 1); }
static int enc_seq_w(Enc *e, PyObject *seq, int depth, int is_list) { return enc_seq(e, seq, depth, is_list, 0); }
static int enc_seq_d(Enc *e, PyObject *seq, int depth, int is_list) { return enc_seq(e, seq, depth, is_list, 1); }

/* ---- model objects ------------------------------------------------------------------------------- */

static inline PyObject *read_field(PyObject *o, Py_ssize_t offset, PyObject *name) {
    /* a new reference, or NULL with an exception set */
    if (offset >= 0) {
        PyObject *v = *(PyObject **)((char *)o + offset);
        if (v == NULL) {
            PyErr_SetObject(PyExc_AttributeError, name);
            return NULL;
        }
        Py_INCREF(v);
        return v;
    }
    return PyObject_GetAttr(o, name);
}

static int enc_via_fallback(Enc *e, PyObject *o, int depth) {
    if (depth >= DEPTH_LIMIT) return 1;
    PyObject *d = PyObject_CallOneArg(e->fallback, o);
    if (d == NULL) return -1;
    int rc = ENC(e->dry, e, d, depth + 1);
    Py_DECREF(d);
    return rc;
}

/* Whether v is no JSON value (a model object, to be written by its plan or through the fallback, which
   refuses anything else). */
static inline int not_json(PyObject *v) {
    return v != Py_None && !PyUnicode_Check(v) && !PyLong_Check(v) && !PyFloat_Check(v) && !PyDict_Check(v) &&
           !PyList_Check(v) && !PyTuple_Check(v);
}

/* Whether v has the type a field of kind `expect` holds. */
ALWAYS_INLINE int expected(PyObject *v, int expect) {
    if (v == Py_None) return (expect & EX_NULL) != 0;
    switch (expect & ~(EX_NULL | EX_FREE)) {
    case EX_ANY: return 1;
    case EX_STR: return PyUnicode_Check(v);
    case EX_INT: return PyLong_Check(v) && !PyBool_Check(v);
    case EX_NUM: return (PyLong_Check(v) && !PyBool_Check(v)) || PyFloat_Check(v);
    case EX_BOOL: return PyBool_Check(v);
    case EX_DICT: return PyDict_Check(v);
    case EX_LIST: return PyList_Check(v);
    case EX_MODEL: return not_json(v);
    case EX_MODELS:
        if (!PyList_Check(v)) return 0;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++)
            if (!not_json(PyList_GET_ITEM(v, i))) return 0;
        return 1;
    }
    return 0;
}

ALWAYS_INLINE int enc_model(Enc *e, PyObject *o, const Plan *p, int depth, const int dry) {
    if (depth >= DEPTH_LIMIT) return 1;
    if (p->unknown_name != NULL) {
        PyObject *x = read_field(o, p->unknown_offset, p->unknown_name);
        if (x == NULL) return -1;
        int truthy = PyObject_IsTrue(x);
        Py_DECREF(x);
        if (truthy < 0) return -1;
        if (truthy) return enc_via_fallback(e, o, depth); /* the hook merges them exactly */
    }
    if (dry && (e->len += p->width) > e->max) return 2; /* the dry run: its keys and punctuation, every one */
    if (put1(e, '{', dry) < 0) return -1;
    int first = 1;
    for (Py_ssize_t i = 0; i < p->n; i++) {
        const Field *f = &p->fields[i];
        PyObject *v = read_field(o, f->offset, f->name);
        if (v == NULL) return -1;
        if (v == Py_None && f->omit_none) {
            Py_DECREF(v);
            continue;
        }
        if (((f->expect & ~EX_FREE) != EX_ANY && !expected(v, f->expect)) ||
            (f->exact != NULL && v != Py_None && (PyObject *)Py_TYPE(v) != f->exact)) {
            Py_DECREF(v);
            return 1;
        }
        int rc = 0;
        if (!dry) { /* (the dry run counted its key where it began) */
            if (!first) rc = put1(e, ',', 0);
            if (rc == 0) rc = put(e, PyBytes_AS_STRING(f->key), PyBytes_GET_SIZE(f->key), 0);
        }
        first = 0;
        int in_free = (f->expect & EX_FREE) != 0;
        e->free += in_free;
        if (rc == 0) rc = ENC(dry, e, v, depth + 1);
        e->free -= in_free;
        Py_DECREF(v);
        if (rc) return rc;
    }
    return put1(e, '}', dry);
}

/* ---- any value ----------------------------------------------------------------------------------- */

/* 0: written; 1: not writable here exactly (give up, no exception); -1: an exception is set (give up). 2: the
   output passed the byte cap (e->max) before v: a value sharing its members (a list of the same list twice, 40
   levels down: 2**40 values written) stops there, at most one string past the cap, not after its every path. The
   dry run stops where a string, a container or a model object it begins takes its count past the cap. */
ALWAYS_INLINE int enc(Enc *e, PyObject *v, int depth, const int dry) {
    if (!dry && e->len > e->max) return 2; /* (the dry run: where a container or a string takes it past) */
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyUnicode_Type) {
        /* a long string of a free-form value met twice: 2 too (the same 1 MiB string a thousand times in a list is
           1 GB written) */
        if (e->free && PyUnicode_GET_LENGTH(v) >= LONG_STRING) {
            int rc = remember(e, v);
            if (rc) return rc > 0 ? 2 : rc;
        }
        return dry ? str_dry(e, v) : enc_str(e, v);
    }
    if (v == Py_None) return put(e, "null", 4, dry);
    if (t == &PyLong_Type) return enc_int(e, v);
    if (t == &PyDict_Type) return dry ? enc_dict_d(e, v, depth) : enc_dict_w(e, v, depth);
    if (t == &PyList_Type) return dry ? enc_seq_d(e, v, depth, 1) : enc_seq_w(e, v, depth, 1);
    if (v == Py_True) return put(e, "true", 4, dry);
    if (v == Py_False) return put(e, "false", 5, dry);
    if (t == &PyFloat_Type) return enc_float(e, v);
    if (e->free) return 1; /* in a free-form value: no other type (the Python hooks say what constructors say) */
    PyObject *cap = PyDict_GetItemWithError(e->plans, (PyObject *)t);
    if (cap != NULL) {
        const Plan *plan = (const Plan *)PyCapsule_GetPointer(cap, PLAN_CAPSULE);
        if (plan == NULL) return -1; /* no plan (the table holds something else): an exception is set */
        if (dry && !plan->own) return 1; /* a caller's subclass: the check leaves it to Python */
        /* held while in use: a hook run meanwhile may change the table */
        Py_INCREF(cap);
        int rc = enc_model(e, v, plan, depth, dry);
        Py_DECREF(cap);
        return rc;
    }
    if (PyErr_Occurred()) return -1;
    if (t == &PyTuple_Type) return dry ? enc_seq_d(e, v, depth, 0) : enc_seq_w(e, v, depth, 0);
    /* subclasses orjson writes as their base: str (str enums), int (int enums), list, dict */
    if (PyUnicode_Check(v)) return dry ? str_dry(e, v) : enc_str(e, v);
    if (PyLong_Check(v)) return enc_int(e, v);
    if (PyList_Check(v)) return dry ? enc_seq_d(e, v, depth, 1) : enc_seq_w(e, v, depth, 1);
    if (PyDict_Check(v)) return dry ? enc_dict_d(e, v, depth) : enc_dict_w(e, v, depth);
    /* anything else: a model class without a plan gets its dict from the fallback (the Python hook); the
       fallback refuses other types, and orjson's own types (datetime, UUID, ...) are left to orjson. The check
       (writes) gives up instead: a class it has no plan of yet may be a caller's subclass (dumps_json, which the
       caller then runs, makes the plan) */
    if (dry) return 1;
    return enc_via_fallback(e, v, depth);
}

static int enc_w(Enc *e, PyObject *v, int depth) { return enc(e, v, depth, 0); }
static int enc_d(Enc *e, PyObject *v, int depth) { return enc(e, v, depth, 1); }

/* ---- module -------------------------------------------------------------------------------------- */

static void plan_free(PyObject *capsule) {
    Plan *p = (Plan *)PyCapsule_GetPointer(capsule, PLAN_CAPSULE);
    if (p == NULL) return;
    for (Py_ssize_t i = 0; i < p->n; i++) {
        Py_XDECREF(p->fields[i].name);
        Py_XDECREF(p->fields[i].key);
        Py_XDECREF(p->fields[i].exact);
    }
    Py_XDECREF(p->unknown_name);
    PyMem_Free(p->fields);
    PyMem_Free(p);
}

/* The slot offset of attribute `name` of instances of `cls` when it is a plain object slot, else -1. */
static Py_ssize_t slot_offset(PyTypeObject *cls, PyObject *name) {
    PyObject *mro = cls->tp_mro;
    if (mro == NULL || !PyTuple_Check(mro)) return -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyObject *base = PyTuple_GET_ITEM(mro, i);
        PyObject *dict = ((PyTypeObject *)base)->tp_dict;
        if (dict == NULL) continue;
        PyObject *descr = PyDict_GetItemWithError(dict, name);
        if (descr == NULL) {
            if (PyErr_Occurred()) PyErr_Clear();
            continue;
        }
        if (Py_TYPE(descr) != &PyMemberDescr_Type) return -1;
        /* a slot of another class's layout (its descriptor copied into this class's dict): not at that offset in
           instances of cls, which may be smaller (Python's own access refuses it with a TypeError) */
        if (!PyType_IsSubtype(cls, PyDescr_TYPE(descr))) return -1;
        PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
        if (m->type != T_OBJECT_EX) return -1;
        return m->offset;
    }
    return -1;
}

PyDoc_STRVAR(make_plan_doc,
             "make_plan(cls, fields, unknown_name, own=True) -> plan\n\n"
             "The plan of writing instances of cls: fields is a sequence of (attribute name, wire key, omitted "
             "when None, expected type: 0 any, 1 str, 2 int, 3 number, 4 bool, 5 dict, 6 list, 7 model object (no "
             "JSON value), 8 list "
             "of models, | 16 None too, | 32 free-form: exact JSON types only[, exact class: a value of any other class but None gives up, or None]); "
             "unknown_name the attribute holding unknown keys, or None; own: cls is agentmsg's own class, not a "
             "caller's subclass (writes() gives up on instances of a class whose plan is not own).");

static PyObject *make_plan(PyObject *self, PyObject *args) {
    PyObject *cls, *fields, *unknown;
    int own = 1;
    if (!PyArg_ParseTuple(args, "O!OO|p:make_plan", &PyType_Type, &cls, &fields, &unknown, &own)) return NULL;
    /* a tuple (a copy of a list): parsing a field may run Python code (its flag's __bool__, its type's
       __index__), which must not change or free the fields being read */
    PyObject *seq = PySequence_Tuple(fields);
    if (seq == NULL) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    Plan *p = PyMem_Calloc(1, sizeof(Plan));
    Field *fs = PyMem_Calloc(n ? (size_t)n : 1, sizeof(Field));
    if (p == NULL || fs == NULL) {
        PyMem_Free(p);
        PyMem_Free(fs);
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    p->fields = fs;
    p->own = own;
    p->width = 2;
    PyObject *capsule = PyCapsule_New(p, PLAN_CAPSULE, plan_free);
    if (capsule == NULL) {
        PyMem_Free(fs);
        PyMem_Free(p);
        Py_DECREF(seq);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name, *wire, *exact = Py_None;
        int omit, expect;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(seq, i), "UUpi|O:field", &name, &wire, &omit, &expect, &exact))
            goto fail;
        if (exact != Py_None && !PyType_Check(exact)) {
            PyErr_SetString(PyExc_TypeError, "a field's exact class must be a type or None");
            goto fail;
        }
        Enc tmp = {0};
        int rc = enc_str(&tmp, wire);
        if (rc == 0) rc = put1(&tmp, ':', 0);
        if (rc == 0) rc = _PyBytes_Resize(&tmp.bytes, tmp.len);
        if (rc != 0) {
            Py_XDECREF(tmp.bytes);
            if (rc > 0) PyErr_SetString(PyExc_ValueError, "a wire key is not writable");
            goto fail;
        }
        fs[i].key = tmp.bytes;
        p->width += tmp.len + (i > 0); /* (and the comma before it) */
        Py_INCREF(name);
        PyUnicode_InternInPlace(&name);
        fs[i].name = name;
        fs[i].offset = slot_offset((PyTypeObject *)cls, name);
        fs[i].omit_none = omit;
        fs[i].expect = expect;
        if (exact != Py_None) {
            Py_INCREF(exact);
            fs[i].exact = exact;
        }
        p->n = i + 1;
    }
    if (unknown != Py_None) {
        if (!PyUnicode_Check(unknown)) {
            PyErr_SetString(PyExc_TypeError, "unknown_name must be a str or None");
            goto fail;
        }
        Py_INCREF(unknown);
        p->unknown_name = unknown;
        p->unknown_offset = slot_offset((PyTypeObject *)cls, unknown);
    }
    Py_DECREF(seq);
    return capsule;
fail:
    Py_DECREF(seq);
    Py_DECREF(capsule);
    return NULL;
}

PyDoc_STRVAR(encode_doc,
             "encode(value, plans, fallback, dumps, max_bytes=None) -> bytes | False | None\n\n"
             "value as compact JSON, exactly as orjson.dumps(value, default=fallback) writes it, or None where "
             "this writer gives up (the caller then runs orjson); False where its output passed max_bytes (an int "
             "from 0; None: no cap), where it stopped. plans: type -> make_plan(...); fallback: model object -> "
             "dict, for model classes without a plan; dumps: orjson.dumps (floats in exponent form).");

/* The byte cap of encode and writes: their fifth argument, an int from 0 or None (no cap; absent, the same). */
static int byte_cap(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t *max) {
    *max = PY_SSIZE_T_MAX;
    if (nargs < 5 || args[4] == Py_None) return 0;
    if (!PyLong_CheckExact(args[4])) {
        PyErr_SetString(PyExc_TypeError, "max_bytes: an int or None");
        return -1;
    }
    int overflow = 0;
    long long n = PyLong_AsLongLongAndOverflow(args[4], &overflow);
    if (n == -1 && PyErr_Occurred()) return -1;
    if (n < 0 && overflow == 0) {
        PyErr_SetString(PyExc_ValueError, "max_bytes: an int from 0");
        return -1;
    }
    if (overflow < 0) {
        PyErr_SetString(PyExc_ValueError, "max_bytes: an int from 0");
        return -1;
    }
    /* (past PY_SSIZE_T_MAX: no output is so long, no cap) */
    *max = overflow > 0 || n > PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX : (Py_ssize_t)n;
    return 0;
}

static PyObject *encode(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 4 || nargs > 5 || !PyDict_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "encode(value, plans: dict, fallback, dumps, max_bytes=None)");
        return NULL;
    }
    Enc e = {NULL, NULL, 0, 0, args[1], args[2], args[3], 0, 0, 0, 0, NULL, 0, 0};
    if (byte_cap(args, nargs, &e.max) < 0) return NULL;
    int rc = enc_w(&e, args[0], 0);
    PyMem_Free(e.seen);
    if (rc == 0 && e.len > e.max) rc = 2; /* (its last string took it past the cap) */
    if (rc == 0 && e.bytes == NULL) rc = grow(&e, 1);
    if (rc == 0 && _PyBytes_Resize(&e.bytes, e.len) < 0) return NULL; /* out of memory: e.bytes is freed */
    if (rc != 0) {
        Py_XDECREF(e.bytes);
        PyErr_Clear();
        if (rc == 2) Py_RETURN_FALSE;
        Py_RETURN_NONE;
    }
    return e.bytes;
}

PyDoc_STRVAR(writes_doc,
             "writes(value, plans, fallback, dumps, max_bytes=None) -> bool\n\n"
             "Whether encode(value, plans, fallback, dumps, max_bytes) writes value (does not give up, nor pass "
             "max_bytes), told without writing it: the same walk, the same rules, nothing written; the bytes counted "
             "at most what encode writes (a string's characters 6 each, an integer 20, a float 24, a model object "
             "every key of its plan, omitted or not), so that it says False at a cap encode may keep within. False "
             "is no verdict: the caller then writes it.");

static PyObject *writes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 4 || nargs > 5 || !PyDict_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "writes(value, plans: dict, fallback, dumps, max_bytes=None)");
        return NULL;
    }
    Enc e = {NULL, NULL, 0, 0, args[1], args[2], args[3], 1, 0, 0, 0, NULL, 0, 0};
    if (byte_cap(args, nargs, &e.max) < 0) return NULL;
    int rc = enc_d(&e, args[0], 0);
    PyMem_Free(e.seen);
    if (rc != 0) PyErr_Clear();
    return PyBool_FromLong(rc == 0 && e.len <= e.max);
}

/* ---- the reducer's delta loop -------------------------------------------------------------------------
 *
 * The plain deltas of a run of events (agentmsg.events._handlers.fold's common case, its rules exactly): an event
 * is taken when it is a dict without "source", its "id" and "type" are str, routes[type] is a table, its
 * "toolCallId" (the table is `calls`) or "blockId" and its "delta" are str, a THINKING_BLOCK_DELTA carries no
 * "signature" nor "redactedData", and table[key] is an open text whose parts stay under join_every with it. Taken:
 * skipped when its id is in `current` or `previous` (a duplicate), else its id added to `current` and its delta
 * appended to the text's parts. The loop stops at the first event it does not take, or whose id would fill the
 * window (size > 0), and leaves that one (and the rest) to Python, which applies it as before.
 */

static PyObject *s_source, *s_id, *s_type, *s_delta, *s_call_key, *s_block_key, *s_signature, *s_redacted,
    *s_parts, *s_thinking_delta;

static int fold_strings(void) {
    if (s_parts != NULL) return 0;
    s_source = PyUnicode_InternFromString("source");
    s_id = PyUnicode_InternFromString("id");
    s_type = PyUnicode_InternFromString("type");
    s_delta = PyUnicode_InternFromString("delta");
    s_call_key = PyUnicode_InternFromString("toolCallId");
    s_block_key = PyUnicode_InternFromString("blockId");
    s_signature = PyUnicode_InternFromString("signature");
    s_redacted = PyUnicode_InternFromString("redactedData");
    s_thinking_delta = PyUnicode_InternFromString("THINKING_BLOCK_DELTA");
    s_parts = PyUnicode_InternFromString("parts");
    return s_source && s_id && s_type && s_delta && s_call_key && s_block_key && s_signature && s_redacted &&
                   s_thinking_delta && s_parts
               ? 0
               : -1;
}

/* A new reference to d[key], or NULL (not there, or an error set). */
static inline PyObject *get_ref(PyObject *d, PyObject *key) {
    PyObject *v = PyDict_GetItemWithError(d, key);
    Py_XINCREF(v);
    return v;
}

/* The class a per-class cache's weak reference ``ref`` refers to (borrowed: compared, never used), or NULL. A cache
 * keeps no class alive (a strong reference pinned the last class seen, one made at run time, forever); a class
 * compared with it is alive (the caller holds it), so a dead referent never matches, and a class at the address
 * of a freed one is read again. */
static PyObject *class_seen(PyObject *ref) {
    if (ref == NULL) return NULL;
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *seen = NULL;
    if (PyWeakref_GetRef(ref, &seen) < 0) {
        PyErr_Clear();
        return NULL;
    }
    Py_XDECREF(seen); /* (only its address is compared, with a class the caller holds) */
    return seen;
#else
    PyObject *seen = PyWeakref_GET_OBJECT(ref);
    return seen == Py_None ? NULL : seen; /* (dead: None, which no class is) */
#endif
}

/* ``*ref`` set to a weak reference to ``cls`` (NULL where it takes none: nothing remembered, read at each call). */
static void class_remember(PyObject **ref, PyObject *cls) {
    PyObject *made = PyWeakref_NewRef(cls, NULL);
    if (made == NULL) PyErr_Clear();
    Py_XSETREF(*ref, made);
}

/* A new reference to text.parts. Read from its slot when text's class keeps it in a plain object slot (Text's
 * __slots__), at the offset looked up once per class: PyObject_GetAttr cost about 160 instructions an event. */
static PyObject *parts_ref = NULL; /* the class the offset was read from (a weak reference: class_seen) */
static Py_ssize_t parts_offset = -1;

static PyObject *parts_of(PyObject *text) {
    PyTypeObject *cls = Py_TYPE(text);
    if ((PyObject *)cls != class_seen(parts_ref)) {
        Py_ssize_t offset = slot_offset(cls, s_parts);
        if (PyErr_Occurred()) return NULL;
        class_remember(&parts_ref, (PyObject *)cls);
        parts_offset = offset;
    }
    if (parts_offset >= 0) {
        PyObject *parts = *(PyObject **)((char *)text + parts_offset);
        if (parts != NULL) return Py_NewRef(parts);
    }
    return PyObject_GetAttr(text, s_parts);
}

/* fold_deltas of one event (a dict, held by the caller): 0 taken or skipped (a duplicate), -1 left to Python.
 * A lookup may run Python code (a key of a str subclass with its own __eq__, a set of such, the text's `parts`
 * a property), which may change or free what an earlier lookup gave: each is held until the event is done. */
static int fold_one(PyObject *e, PyObject *current, PyObject *previous, Py_ssize_t size, PyObject *routes,
                    PyObject *calls, Py_ssize_t join) {
    PyObject *source = NULL, *id = NULL, *kind = NULL, *table = NULL, *key = NULL, *delta = NULL, *text = NULL,
             *parts = NULL;
    int rc = -1;
    if ((source = get_ref(e, s_source)) != NULL || PyErr_Occurred()) goto done;
    id = get_ref(e, s_id);
    if (id == NULL || !PyUnicode_CheckExact(id)) goto done;
    kind = get_ref(e, s_type);
    if (kind == NULL || !PyUnicode_CheckExact(kind)) goto done;
    table = get_ref(routes, kind);
    if (table == NULL || !PyDict_CheckExact(table)) goto done;
    key = get_ref(e, table == calls ? s_call_key : s_block_key);
    if (key == NULL || !PyUnicode_CheckExact(key)) goto done;
    delta = get_ref(e, s_delta);
    if (delta == NULL || !PyUnicode_CheckExact(delta)) goto done;
    /* (the length first: a text's or a call's kind is not as long, and PyUnicode_Compare cost about 90
     * instructions an event) */
    if (PyUnicode_GetLength(kind) == PyUnicode_GET_LENGTH(s_thinking_delta) &&
        PyUnicode_Compare(kind, s_thinking_delta) == 0) {
        PyObject *other = get_ref(e, s_signature);
        if (other == NULL && !PyErr_Occurred()) other = get_ref(e, s_redacted);
        if (other != NULL || PyErr_Occurred()) {
            Py_XDECREF(other);
            goto done;
        }
    }
    if (PyErr_Occurred()) goto done;
    text = get_ref(table, key);
    if (text == NULL) goto done;
    /* (previous is looked in only when it holds ids: a stream of fewer events than the window has none) */
    int seen = PySet_GET_SIZE(previous) > 0 ? PySet_Contains(previous, id) : 0;
    if (seen < 0) goto done;
    if (seen) { /* a duplicate: counted, skipped */
        rc = 0;
        goto done;
    }
    Py_ssize_t held = PySet_GET_SIZE(current);
    if (size > 0 && held + 1 >= size) goto done; /* the window turns (or a duplicate where it would): Python's */
    parts = parts_of(text);
    if (parts == NULL) goto done;
    if (!PyList_CheckExact(parts) || PyList_GET_SIZE(parts) + 1 >= join) goto done; /* (a duplicate too) */
    /* the id added to current, which is then one larger unless it held it already: a duplicate, counted and
     * skipped (one look in current, not a look then an add) */
    if (PySet_Add(current, id) < 0) goto done;
    if (PySet_GET_SIZE(current) == held || PyList_Append(parts, delta) == 0) rc = 0;
done:
    Py_XDECREF(source);
    Py_XDECREF(id);
    Py_XDECREF(kind);
    Py_XDECREF(table);
    Py_XDECREF(key);
    Py_XDECREF(delta);
    Py_XDECREF(text);
    Py_XDECREF(parts);
    return rc;
}

PyDoc_STRVAR(fold_deltas_doc,
             "fold_deltas(events, start, current, previous, size, routes, calls, join_every) -> int\n\n"
             "Take the plain deltas of events[start:] (a list) into the reducer's open texts, and their ids into "
             "the dedupe window; the index of the first event not taken (len(events): all).");

static PyObject *fold_deltas(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8 || !PyList_CheckExact(args[0]) || !PyLong_Check(args[1]) || !PySet_CheckExact(args[2]) ||
        !PySet_CheckExact(args[3]) || !PyLong_Check(args[4]) || !PyLong_Check(args[7])) {
        PyErr_SetString(PyExc_TypeError,
                        "fold_deltas(events: list, start: int, current: set, previous: set, size: int, routes, calls, "
                        "join_every: int)");
        return NULL;
    }
    if (fold_strings() < 0) return NULL;
    PyObject *events = args[0], *current = args[2], *previous = args[3], *routes = args[5], *calls = args[6];
    Py_ssize_t i = PyLong_AsSsize_t(args[1]), size = PyLong_AsSsize_t(args[4]), join = PyLong_AsSsize_t(args[7]);
    if (PyErr_Occurred()) return NULL;
    if (i < 0) i = 0;
    if (!PyDict_CheckExact(routes)) return PyLong_FromSsize_t(i);
    for (; i < PyList_GET_SIZE(events); i++) {
        PyObject *e = PyList_GET_ITEM(events, i);
        if (!PyDict_CheckExact(e)) break;
        Py_INCREF(e);
        int step = fold_one(e, current, previous, size, routes, calls, join);
        Py_DECREF(e);
        if (step < 0) break;
    }
    PyErr_Clear();
    return PyLong_FromSsize_t(i);
}

/* ---- SSE: whole simple events straight from a chunk ------------------------------------------------
 *
 * The C form of agentmsg._wire.sse.SSEDecoder._simple_event over the blank-line-separated pieces of a chunk:
 * a piece of `event:` / `id:` / comment lines then one `data:` line (the shapes providers send) becomes
 * an SSEEvent; the scan stops at the first piece that is not that simple and hands it back, with its
 * separator, to the Python line parser. Same rules, same results (tests/native/test_speedups.py compares them).
 */

static const char *find_sep(const char *p, const char *end, int crlf, int *lone) {
    /* the next blank line: "\n\n", or "\r\n\r\n" (crlf: the chunk has CRs, maybe lone CRs and LFs too; a
     * piece between two such separators is simple only if its every line ends with CRLF, see simple_event).
     * *lone (crlf): an LF of the piece before it has no CR before it; told here, where each LF is looked at (a
     * second pass over the piece for its LFs, and a third for its CRs, read CRLF pieces three times) */
    Py_ssize_t need = crlf ? 4 : 2;
    *lone = crlf && p < end && *p == '\n';
    while (end - p >= need) {
        const char *nl = memchr(crlf ? p + 1 : p, '\n', (size_t)(end - (crlf ? p + 1 : p)));
        if (nl == NULL) return NULL;
        if (crlf) {
            if (nl[-1] != '\r') *lone = 1;
            else if (end - nl >= 3 && nl[1] == '\r' && nl[2] == '\n') return nl - 1;
            p = nl;
        } else {
            if (end - nl >= 2 && nl[1] == '\n') return nl;
            p = nl + 1;
        }
    }
    return NULL;
}

/* (8 bytes at a time, as valid_utf8's ASCII runs: a byte at a time cost about 90 instructions of a live chunk
 * whose provider names each event, with a name of about 20 bytes) */
static int all_ascii(const char *p, Py_ssize_t n) {
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w & 0x8080808080808080ULL) return 0;
    }
    for (; i < n; i++)
        if ((unsigned char)p[i] >= 0x80) return 0;
    return 1;
}

/* Whether [s, s + n) is UTF-8 as Python's strict decoder reads it: no overlong forms, no surrogates, nothing
 * past U+10FFFF, no sequence cut short. ASCII runs are checked 8 bytes at a time. */
static int valid_utf8(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        uint64_t w;
        while (i + 8 <= n) {
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ULL) break;
            i += 8;
        }
        if (i >= n) break;
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
        } else if (c < 0xC2) {
            return 0; /* a continuation byte, or an overlong 2-byte form */
        } else if (c < 0xE0) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
            i += 2;
        } else if (c < 0xF0) {
            if (i + 2 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80) return 0;
            if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] >= 0xA0)) return 0; /* overlong, surrogate */
            i += 3;
        } else if (c < 0xF5) {
            if (i + 3 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
                return 0;
            if ((c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] >= 0x90)) return 0; /* overlong, > U+10FFFF */
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* The event of a simple piece [p, end): 1 and *out set, 0 when the piece is not simple, -1 on error. raw: the
 * data as bytes (checked to be UTF-8), not str. */
/* cls(data, event, id): an SSEEvent (retry and problem None). When cls keeps those five attributes in plain
 * object slots (attrs' slotted classes do) and has no __init__ logic beyond storing them, the instance is
 * filled in here, with no Python frame; otherwise (a subclass, another class) cls is called. */
/* The class the offsets below were read from, by a weak reference (class_seen); a callable that takes no weak
 * reference is read at each call. */
static PyObject *event_ref = NULL;
static Py_ssize_t event_offsets[5];
static int event_direct = 0;

static PyObject *new_event(PyObject *cls, PyObject *data, PyObject *name, PyObject *id) {
    if (cls != class_seen(event_ref)) {
        static const char *names[5] = {"data", "event", "id", "retry", "problem"};
        Py_ssize_t offsets[5];
        int direct = PyType_Check(cls) && PyObject_HasAttrString(cls, "__attrs_attrs__") &&
                     !PyObject_HasAttrString(cls, "__attrs_post_init__") &&
                     !PyObject_HasAttrString(cls, "__attrs_pre_init__");
        for (int i = 0; i < 5 && direct; i++) {
            PyObject *attr = PyUnicode_InternFromString(names[i]);
            if (attr == NULL) return NULL;
            offsets[i] = slot_offset((PyTypeObject *)cls, attr);
            Py_DECREF(attr);
            if (offsets[i] < 0) direct = 0;
        }
        if (PyErr_Occurred()) return NULL;
        class_remember(&event_ref, cls);
        event_direct = direct;
        if (direct) memcpy(event_offsets, offsets, sizeof offsets);
    }
    if (!event_direct) {
        PyObject *args[3] = {data, name, id};
        return PyObject_Vectorcall(cls, args, 3, NULL);
    }
    PyTypeObject *type = (PyTypeObject *)cls;
    PyObject *o = type->tp_alloc(type, 0);
    if (o == NULL) return NULL;
    PyObject *values[5] = {data, name, id, Py_None, Py_None};
    for (int i = 0; i < 5; i++) {
        Py_INCREF(values[i]);
        *(PyObject **)((char *)o + event_offsets[i]) = values[i];
    }
    return o;
}

/* What a piece with no data line may hold and still be taken here (sse_scan's `dataless` flags): */
#define DL_TAKE 1     /* a piece of comment, id and event lines: no event; its id is the last id (a retry line
                         sets the decoder's reconnection time: never taken here, the line parser's) */
#define DL_UNKNOWN 2  /* lines of fields the spec does not know are skipped in it too */
#define DL_PROVIDER 4 /* the provider decoder's rules: `event: error`, an `error` field, a line starting with
                         `{` or `[` (after any blanks) make the piece not simple (the line parser's) */

/* A scan's route (SSEScanner's `route`): the events named `event` whose data (bytes) is head + a JSON string +
 * tail (+ after's holes and pieces) are given as (the string's value, the data); `on` while each event of the scan
 * so far was (the first that is not may change the caller's route: the events after it are given as events). */
typedef struct {
    PyObject *event, *head, *tail, *after;
    int on;
} ScanRoute;

static PyObject *string_between(const unsigned char *d, Py_ssize_t n, PyObject *head, PyObject *tail,
                                PyObject *after);

static int simple_event(const char *p, const char *end, int crlf, int lone, Py_ssize_t limit, Py_ssize_t max_line,
                        PyObject **last_id, PyObject *cls, PyObject *message, int raw, int dataless,
                        ScanRoute *route, PyObject **out) {
    Py_ssize_t eol = crlf ? 2 : 1;
    const char *line = NULL;    /* the data line */
    const char *event = NULL;   /* the event name's bytes, when an event field was given */
    Py_ssize_t event_len = 0;
    const char *id = NULL;
    Py_ssize_t id_len = 0;
    int has_id = 0;
    int other = 0; /* an unknown field line: only in a piece with no data */
    /* crlf: the piece's lines end with CRLF, each: no LF without a CR before it (lone, from find_sep) and no CR
     * without an LF after it (each CR is a line's end below, checked there, or in the data line: not simple) */
    if (lone) return 0;
    /* blank lines the piece starts with: between events, each dispatches nothing */
    while (end - p >= eol && *p == (crlf ? '\r' : '\n')) {
        if (crlf && p[1] != '\n') return 0;
        p += eol;
    }
    if (end - p >= 5 && memcmp(p, "data:", 5) == 0) {
        if (end - p > limit || memchr(p, crlf ? '\r' : '\n', (size_t)(end - p)) != NULL) return 0;
        line = p;
    } else {
        /* field lines; the last may be the data line */
        const char *f = p;
        for (;;) {
            const char *nl = memchr(f, crlf ? '\r' : '\n', (size_t)(end - f));
            if (crlf && nl != NULL && (end - nl < 2 || nl[1] != '\n')) return 0; /* a CR alone */
            if (nl == NULL) {
                if (end - f >= 5 && memcmp(f, "data:", 5) == 0) {
                    if (end - f > limit) return 0;
                    line = f;
                    break;
                }
                if (!(dataless & DL_TAKE)) return 0;
                nl = end; /* a piece of no data: its last line is a field line too */
            }
            Py_ssize_t flen = nl - f;
            if (flen > max_line) return 0;
            if (flen > 0 && f[0] != ':') { /* not a comment (nor the empty piece of a blank line) */
                const char *colon = memchr(f, ':', (size_t)flen);
                Py_ssize_t nlen = colon ? colon - f : flen;
                const char *v = colon ? colon + 1 : nl;
                if (v < nl && *v == ' ') v++;
                Py_ssize_t vlen = nl - v;
                int is_event = nlen == 5 && memcmp(f, "event", 5) == 0;
                int is_id = nlen == 2 && memcmp(f, "id", 2) == 0;
                if (is_event || is_id) {
                    if (!all_ascii(v, vlen)) return 0;
                    if (is_event) {
                        event = v;
                        event_len = vlen;
                    } else if (memchr(v, '\0', (size_t)vlen) == NULL) {
                        id = v;
                        id_len = vlen;
                        has_id = 1;
                    }
                } else if (nlen == 4 && memcmp(f, "data", 4) == 0) {
                    return 0; /* a data line that is not the last: more than one */
                } else if (nlen == 5 && memcmp(f, "retry", 5) == 0) {
                    return 0; /* it sets the decoder's retry: the line parser's */
                } else {
                    if (!(dataless & DL_UNKNOWN)) return 0;
                    if (dataless & DL_PROVIDER) {
                        const char *w = f; /* (a JSON value on lines of no field may start after blanks) */
                        while (w < nl && (*w == ' ' || *w == '\t')) w++;
                        if ((w < nl && (*w == '{' || *w == '[')) || (nlen == 5 && memcmp(f, "error", 5) == 0))
                            return 0;
                    }
                    other = 1;
                }
            }
            if (nl == end) break;
            f = nl + eol;
        }
    }
    if (line == NULL) { /* no data: nothing dispatched, the id kept */
        if ((dataless & DL_PROVIDER) && event_len == 5 && memcmp(event, "error", 5) == 0) return 0;
        if (has_id) {
            PyObject *new_id = PyUnicode_DecodeASCII(id, id_len, "strict");
            if (new_id == NULL) return -1;
            Py_SETREF(*last_id, new_id);
        }
        return 2;
    }
    if (other) return 0;
    const char *d = line + 5;
    if (d < end && *d == ' ') d++;
    PyObject *data;
    if (raw) {
        if (!valid_utf8((const unsigned char *)d, end - d)) return 0; /* the line parser reports it */
        data = PyBytes_FromStringAndSize(d, end - d);
        if (data == NULL) return -1;
    } else if ((data = PyUnicode_DecodeUTF8(d, end - d, "strict")) == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return -1;
        PyErr_Clear();
        return 0; /* the line parser reports the invalid UTF-8 */
    }
    PyObject *name = message;
    Py_INCREF(name);
    if (event != NULL && event_len > 0) {
        Py_DECREF(name);
        /* a stream names its events with a few names, mostly the one before: that str again (ASCII, checked) */
        static PyObject *last_name = NULL;
        if (last_name != NULL && PyUnicode_GET_LENGTH(last_name) == event_len &&
            memcmp(PyUnicode_1BYTE_DATA(last_name), event, (size_t)event_len) == 0) {
            name = Py_NewRef(last_name);
        } else {
            name = PyUnicode_DecodeASCII(event, event_len, "strict");
            if (name == NULL) {
                Py_DECREF(data);
                return -1;
            }
            Py_XSETREF(last_name, Py_NewRef(name));
        }
    }
    if (has_id) {
        PyObject *new_id = PyUnicode_DecodeASCII(id, id_len, "strict");
        if (new_id == NULL) {
            Py_DECREF(data);
            Py_DECREF(name);
            return -1;
        }
        Py_SETREF(*last_id, new_id);
    }
    if (route != NULL && route->on) { /* (raw: data is bytes) */
        PyObject *text = name == route->event || PyUnicode_Compare(name, route->event) == 0
                             ? string_between((const unsigned char *)d, end - d, route->head, route->tail, route->after)
                             : Py_NewRef(Py_None);
        if (text == NULL) {
            Py_DECREF(data);
            Py_DECREF(name);
            return -1;
        }
        if (text != Py_None) {
            *out = PyTuple_Pack(2, text, data);
            Py_DECREF(text);
            Py_DECREF(data);
            Py_DECREF(name);
            return *out == NULL ? -1 : 1;
        }
        Py_DECREF(text);
        route->on = 0;
    }
    *out = new_event(cls, data, name, *last_id);
    Py_DECREF(data);
    Py_DECREF(name);
    return *out == NULL ? -1 : 1;
}

/* sse_scan's result, (pos, stop, last_id), built directly: Py_BuildValue("nnN") read its format string at each
 * call, about 430 instructions of a live chunk's scan (a tuple and a small int here). Takes last_id's reference. */
static PyObject *scan_result(Py_ssize_t pos, Py_ssize_t stop, PyObject *last_id) {
    PyObject *result = PyTuple_New(3);
    PyObject *at = PyLong_FromSsize_t(pos);
    PyObject *end = PyLong_FromSsize_t(stop);
    if (result == NULL || at == NULL || end == NULL) {
        Py_XDECREF(result);
        Py_XDECREF(at);
        Py_XDECREF(end);
        Py_DECREF(last_id);
        return NULL;
    }
    PyTuple_SET_ITEM(result, 0, at);
    PyTuple_SET_ITEM(result, 1, end);
    PyTuple_SET_ITEM(result, 2, last_id);
    return result;
}

PyDoc_STRVAR(sse_scan_doc,
             "sse_scan(chunk, pos, crlf, limit, max_line, last_id, out, cls, raw=False, dataless=0) -> (pos, stop, "
             "last_id)\n\n"
             "Append to out the SSEEvent (cls(data, event, id)) of each simple piece of chunk from pos on (see "
             "agentmsg._wire.sse.SSEDecoder._simple_event), up to the first that is not simple. Returns where the "
             "scan stopped, the end of that piece with its separator (-1: no more whole pieces; chunk[pos:] "
             "is the rest), and the last event id. raw: each event's data is its UTF-8 bytes (checked), not str. dataless: "
             "flags, a piece with no data line taken as no event (1), with unknown fields in it too (2), by the "
             "provider decoder's rules (4).");

/* The scan itself, sse_scan's and an SSEScanner's: appends the events of chunk[pos:] to out, *last_id (a
 * reference held, replaced by each id) the last event id. Returns where it stopped, *stop set; -1 on error. */
static Py_ssize_t scan_chunk(PyObject *chunk, Py_ssize_t pos, int crlf, Py_ssize_t limit, Py_ssize_t max_line,
                             PyObject **last_id, PyObject *out, PyObject *cls, int raw, int dataless,
                             ScanRoute *route, Py_ssize_t *stop) {
    const char *buf = PyBytes_AS_STRING(chunk);
    Py_ssize_t n = PyBytes_GET_SIZE(chunk);
    static PyObject *message = NULL;
    if (message == NULL && (message = PyUnicode_InternFromString("message")) == NULL) return -1;
    Py_ssize_t seplen = crlf ? 4 : 2;
    *stop = -1;
    for (;;) {
        int lone;
        const char *sep = find_sep(buf + pos, buf + n, crlf, &lone);
        if (sep == NULL) break;
        PyObject *event = NULL;
        int rc = simple_event(buf + pos, sep, crlf, lone, limit, max_line, last_id, cls, message, raw, dataless, route,
                              &event);
        if (rc < 0) return -1;
        if (rc == 0) {
            *stop = (sep - buf) + seplen;
            break;
        }
        if (rc == 1) {
            int err = PyList_Append(out, event);
            Py_DECREF(event);
            if (err < 0) return -1;
        }
        pos = (sep - buf) + seplen;
    }
    return pos;
}

static PyObject *sse_scan(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 8 || nargs > 10 || !PyBytes_CheckExact(args[0]) || !PyUnicode_CheckExact(args[5]) || !PyList_CheckExact(args[6])) {
        PyErr_SetString(PyExc_TypeError,
                        "sse_scan(chunk: bytes, pos, crlf, limit, max_line, last_id: str, out: list, cls, raw=False, "
                        "dataless=0)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    int crlf = PyObject_IsTrue(args[2]);
    int raw = nargs >= 9 ? PyObject_IsTrue(args[8]) : 0;
    if (raw < 0) return NULL;
    int dataless = nargs == 10 ? (int)PyLong_AsLong(args[9]) : 0;
    Py_ssize_t limit = PyLong_AsSsize_t(args[3]);
    Py_ssize_t max_line = PyLong_AsSsize_t(args[4]);
    if (PyErr_Occurred() || crlf < 0) return NULL;
    if (pos < 0 || pos > PyBytes_GET_SIZE(args[0])) {
        PyErr_SetString(PyExc_ValueError, "pos out of range");
        return NULL;
    }
    PyObject *last_id = Py_NewRef(args[5]);
    Py_ssize_t stop;
    pos = scan_chunk(args[0], pos, crlf, limit, max_line, &last_id, args[6], args[7], raw, dataless, NULL, &stop);
    if (pos < 0) {
        Py_DECREF(last_id);
        return NULL;
    }
    return scan_result(pos, stop, last_id);
}

/* ---- SSE: the scan with its bounds bound (SSEScanner) ----------------------------------------------
 * sse_scan from a chunk's start with the arguments that do not change within a stream given once: a stream
 * parser's idle scan (agentmsg._wire.sse.SSEDecoder.idle_scanner) calls it once per chunk, and each of
 * sse_scan's ten arguments was loaded and converted at each call. The chunk's line ends are told here (a CR
 * in it: CRLF ones, as sse_scan's crlf). Each call returns a new result tuple (one refilled in place when no
 * caller held it saved about 50 instructions a chunk of ~21,500; and from 3.14 a tuple caches its hash). */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Py_ssize_t limit, max_line;
    PyObject *cls;
    char raw; /* (a char: T_BOOL's) */
} SSEScanner;

static PyObject *scanner_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    SSEScanner *self = (SSEScanner *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 4 || nargs > 5 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) || !PyBytes_CheckExact(args[0]) ||
        !PyUnicode_CheckExact(args[1]) || !PyList_CheckExact(args[2]) || !PyLong_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError,
                        "SSEScanner(chunk: bytes, last_id: str, out: list, dataless: int, route: tuple | None = None, /)");
        return NULL;
    }
    int dataless = (int)PyLong_AsLong(args[3]);
    if (dataless == -1 && PyErr_Occurred()) return NULL;
    ScanRoute route = {NULL, NULL, NULL, NULL, 1};
    if (nargs == 5 && args[4] != Py_None) { /* a PayloadReader.route: (head, tail, slot, event, after, ...) */
        PyObject *r = args[4];
        int ok = self->raw && PyTuple_CheckExact(r) && PyTuple_GET_SIZE(r) >= 5 &&
                 PyBytes_CheckExact(PyTuple_GET_ITEM(r, 0)) && PyBytes_CheckExact(PyTuple_GET_ITEM(r, 1)) &&
                 PyUnicode_CheckExact(PyTuple_GET_ITEM(r, 3)) && PyTuple_CheckExact(PyTuple_GET_ITEM(r, 4));
        for (Py_ssize_t k = 0; ok && k < PyTuple_GET_SIZE(PyTuple_GET_ITEM(r, 4)); k++)
            ok = PyBytes_CheckExact(PyTuple_GET_ITEM(PyTuple_GET_ITEM(r, 4), k));
        if (!ok) {
            PyErr_SetString(PyExc_TypeError,
                            "SSEScanner: route is (head: bytes, tail: bytes, _, event: str, after: tuple[bytes, ...], "
                            "...), for a raw scanner only");
            return NULL;
        }
        route.head = PyTuple_GET_ITEM(r, 0);
        route.tail = PyTuple_GET_ITEM(r, 1);
        route.event = PyTuple_GET_ITEM(r, 3);
        route.after = PyTuple_GET_ITEM(r, 4);
    }
    PyObject *chunk = args[0];
    int crlf = memchr(PyBytes_AS_STRING(chunk), '\r', (size_t)PyBytes_GET_SIZE(chunk)) != NULL;
    PyObject *last_id = Py_NewRef(args[1]);
    Py_ssize_t stop;
    Py_ssize_t pos = scan_chunk(chunk, 0, crlf, self->limit, self->max_line, &last_id, args[2], self->cls, self->raw,
                                dataless, route.event != NULL ? &route : NULL, &stop);
    if (pos < 0) {
        Py_DECREF(last_id);
        return NULL;
    }
    return scan_result(pos, stop, last_id);
}

static PyObject *scanner_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *cls;
    Py_ssize_t limit, max_line;
    int raw;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "SSEScanner(limit, max_line, cls, raw, /) takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "nnOp:SSEScanner", &limit, &max_line, &cls, &raw)) return NULL;
    if (!PyCallable_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "SSEScanner: cls is not callable");
        return NULL;
    }
    SSEScanner *self = (SSEScanner *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = scanner_call;
    self->limit = limit;
    self->max_line = max_line;
    self->cls = Py_NewRef(cls);
    self->raw = (char)raw;
    return (PyObject *)self;
}

static int scanner_traverse(PyObject *op, visitproc visit, void *arg) {
    Py_VISIT(((SSEScanner *)op)->cls);
    return 0;
}

static int scanner_clear(PyObject *op) {
    Py_CLEAR(((SSEScanner *)op)->cls);
    return 0;
}

static void scanner_dealloc(PyObject *op) {
    PyObject_GC_UnTrack(op);
    scanner_clear(op);
    Py_TYPE(op)->tp_free(op);
}

static PyMemberDef scanner_members[] = {
    {"limit", T_PYSSIZET, offsetof(SSEScanner, limit), READONLY, "the bytes a simple event's data line may hold"},
    {"max_line", T_PYSSIZET, offsetof(SSEScanner, max_line), READONLY, "the bytes any other line may hold"},
    {"cls", T_OBJECT, offsetof(SSEScanner, cls), READONLY, "what each event is made with: cls(data, event, id)"},
    {"raw", T_BOOL, offsetof(SSEScanner, raw), READONLY, "each event's data its UTF-8 bytes (checked), not str"},
    {NULL, 0, 0, 0, NULL},
};

PyDoc_STRVAR(scanner_doc,
             "SSEScanner(limit, max_line, cls, raw, /)\n\n"
             "sse_scan from a chunk's start with its bounds, its event class and raw given once: "
             "scanner(chunk, last_id, out, dataless) is sse_scan(chunk, 0, b'\\r' in chunk, limit, max_line, "
             "last_id, out, cls, raw, dataless), the same events appended to out and the same (pos, stop, last_id) "
             "returned (a new tuple). chunk is bytes, last_id str, out a list and dataless an int, else TypeError. "
             "scanner(chunk, last_id, out, dataless, route) (a raw scanner; route (head, tail, _, event, after, ...)): "
             "the events named event that json_string_between(data, head, tail, after) reads, up to the first that "
             "is not, are appended as (its value, data).");

static PyTypeObject SSEScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "agentmsg._speedups.SSEScanner",
    .tp_basicsize = sizeof(SSEScanner),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = scanner_doc,
    .tp_new = scanner_new,
    .tp_dealloc = scanner_dealloc,
    .tp_traverse = scanner_traverse,
    .tp_clear = scanner_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(SSEScanner, vectorcall),
    .tp_members = scanner_members,
};

/* ---- SSE: lines that do nothing between events (sse_idle) ------------------------------------------
 * The C form of agentmsg._wire.sse.idle_lines: from a line start, a run of blank lines, comments and (flag
 * DL_UNKNOWN) lines of fields the spec does not know, none over max_line bytes; by the provider decoder's
 * rules (DL_PROVIDER) no `error` field and no line starting with `{` or `[` after any blanks. */

static int known_field(const char *f, Py_ssize_t nlen, int provider) {
    return (nlen == 4 && memcmp(f, "data", 4) == 0) || (nlen == 5 && memcmp(f, "event", 5) == 0) ||
           (nlen == 2 && memcmp(f, "id", 2) == 0) || (nlen == 5 && memcmp(f, "retry", 5) == 0) ||
           (provider && nlen == 5 && memcmp(f, "error", 5) == 0);
}

PyDoc_STRVAR(sse_idle_doc, "sse_idle(chunk, pos, max_line, dataless) -> (end, blank)\n\n"
                           "Where the run of lines that do nothing between events, from the line start pos on, "
                           "ends (see agentmsg._wire.sse.idle_lines; dataless: sse_scan's flags), and whether it "
                           "holds a blank line.");

static PyObject *sse_idle(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyBytes_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "sse_idle(chunk: bytes, pos, max_line, dataless)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    Py_ssize_t max_line = PyLong_AsSsize_t(args[2]);
    long flags = PyLong_AsLong(args[3]);
    if (PyErr_Occurred()) return NULL;
    const char *buf = PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    if (pos < 0 || pos > n) {
        PyErr_SetString(PyExc_ValueError, "pos out of range");
        return NULL;
    }
    const char *p = buf + pos, *end = buf + n;
    int blank = 0;
    while (p < end) {
        if (*p == '\r' || *p == '\n') { /* at a line start: blank lines, however their ends pair */
            blank = 1;
            p++;
            continue;
        }
        const char *q = p;
        while (q < end && *q != '\r' && *q != '\n') q++;
        if (q == end || q - p > max_line) break; /* the unfinished last line, or one over the limit */
        if (*p != ':') {
            if (!(flags & DL_UNKNOWN)) break;
            const char *colon = memchr(p, ':', (size_t)(q - p));
            if (known_field(p, colon ? colon - p : q - p, (int)(flags & DL_PROVIDER))) break;
            if (flags & DL_PROVIDER) {
                const char *w = p;
                while (w < q && (*w == ' ' || *w == '\t')) w++;
                if (w < q && (*w == '{' || *w == '[')) break;
            }
        }
        p = q + 1;
        if (*q == '\r' && p < end && *p == '\n') p++; /* CRLF: one line end */
    }
    PyObject *result = PyTuple_New(2); /* (built directly, as sse_scan's: no format string read at each call) */
    PyObject *at = PyLong_FromSsize_t((Py_ssize_t)(p - buf));
    if (result == NULL || at == NULL) {
        Py_XDECREF(result);
        Py_XDECREF(at);
        return NULL;
    }
    PyTuple_SET_ITEM(result, 0, at);
    PyTuple_SET_ITEM(result, 1, Py_NewRef(blank ? Py_True : Py_False));
    return result;
}

/* ---- A payload of a known shape around one JSON string (json_string_between) ---------------------------
 * A stream parser's common payload is a text fragment whose bytes are the same around its text from one
 * payload to the next (a text delta event, say). When data is exactly head, one JSON string, then tail, the
 * string is the value orjson would read there; anything this does not read exactly as orjson does (a \u escape
 * of a surrogate, a control character, an escape JSON does not have, invalid UTF-8) gives None, and the
 * caller reads the payload with orjson (tests/native/test_speedups.py compares the two). */

static int hex4(const unsigned char *p, unsigned int *out) {
    unsigned int v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned int)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned int)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned int)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

/* The text of the JSON string body [s, e) (between its quotes) unescaped into out (at most e - s bytes);
 * its length, or -1 when it is not one whole JSON string read here (see above). */
static Py_ssize_t unescape(const unsigned char *s, const unsigned char *e, unsigned char *out) {
    unsigned char *q = out;
    while (s < e) {
        unsigned char c = *s;
        if (c == '"' || c < 0x20) return -1; /* the string ends before e, or a raw control character */
        if (c != '\\') {
            *q++ = c;
            s++;
            continue;
        }
        if (e - s < 2) return -1;
        switch (s[1]) {
        case '"': *q++ = '"'; break;
        case '\\': *q++ = '\\'; break;
        case '/': *q++ = '/'; break;
        case 'b': *q++ = '\b'; break;
        case 'f': *q++ = '\f'; break;
        case 'n': *q++ = '\n'; break;
        case 'r': *q++ = '\r'; break;
        case 't': *q++ = '\t'; break;
        case 'u': {
            unsigned int cp;
            if (e - s < 6 || !hex4(s + 2, &cp) || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
            if (cp < 0x80) {
                *q++ = (unsigned char)cp;
            } else if (cp < 0x800) {
                *q++ = (unsigned char)(0xC0 | (cp >> 6));
                *q++ = (unsigned char)(0x80 | (cp & 0x3F));
            } else {
                *q++ = (unsigned char)(0xE0 | (cp >> 12));
                *q++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                *q++ = (unsigned char)(0x80 | (cp & 0x3F));
            }
            s += 6;
            continue;
        }
        default: return -1;
        }
        s += 2;
    }
    return q - out;
}

static PyObject *cs_json_string(const char *body, const char *end);

PyDoc_STRVAR(json_string_between_doc,
             "json_string_between(data, head, tail, after=()) -> str | None\n\n"
             "The value of the JSON string when data is exactly head + a JSON string + tail (all bytes), as orjson "
             "reads it; with after (a tuple of bytes), when data goes on after tail with a hole then the piece, for "
             "each piece of after: a hole is a JSON string or an integer of at most 18 digits, checked as orjson "
             "reads it, its value not read. None when data is not so, or a string holds what this does not read (a "
             "\\u escape of a surrogate, a control character, an escape JSON does not have, invalid UTF-8).");

/* The end of the JSON string whose opening quote is at d[i] (the index of its closing quote), or -1: none
 * before n. Escapes are skipped, not checked (cs_json_string checks the body). */
static Py_ssize_t string_end(const unsigned char *d, Py_ssize_t i, Py_ssize_t n) {
    for (i++; i < n; i++) {
        if (d[i] == '\\') i++;
        else if (d[i] == '"') return i;
    }
    return -1;
}

/* The end (one past) of the hole at d[i]: a JSON string orjson reads as cs_json_string does, or an integer of
 * at most 18 digits (-?(0|[1-9][0-9]*): an int64 as orjson reads it); -1: none there; -2: an error set. */
static Py_ssize_t hole_end(const unsigned char *d, Py_ssize_t i, Py_ssize_t n) {
    if (i >= n) return -1;
    if (d[i] == '"') {
        Py_ssize_t close = string_end(d, i, n);
        if (close < 0) return -1;
        PyObject *value = cs_json_string((const char *)d + i + 1, (const char *)d + close);
        if (value == NULL) return -2;
        int ok = value != Py_None;
        Py_DECREF(value);
        return ok ? close + 1 : -1;
    }
    Py_ssize_t j = i + (d[i] == '-');
    Py_ssize_t start = j;
    while (j < n && d[j] >= '0' && d[j] <= '9') j++;
    if (j == start || j - start > 18 || (d[start] == '0' && j - start > 1)) return -1;
    return j;
}

static PyObject *json_string_between(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 3 || nargs > 4 || !PyBytes_CheckExact(args[0]) || !PyBytes_CheckExact(args[1]) ||
        !PyBytes_CheckExact(args[2]) || (nargs == 4 && !PyTuple_CheckExact(args[3]))) {
        PyErr_SetString(PyExc_TypeError,
                        "json_string_between(data: bytes, head: bytes, tail: bytes, after: tuple[bytes, ...] = ())");
        return NULL;
    }
    PyObject *after = nargs == 4 ? args[3] : NULL;
    Py_ssize_t pieces = after != NULL ? PyTuple_GET_SIZE(after) : 0;
    for (Py_ssize_t k = 0; k < pieces; k++) {
        if (!PyBytes_CheckExact(PyTuple_GET_ITEM(after, k))) {
            PyErr_SetString(PyExc_TypeError, "json_string_between: after holds bytes only");
            return NULL;
        }
    }
    return string_between((const unsigned char *)PyBytes_AS_STRING(args[0]), PyBytes_GET_SIZE(args[0]), args[1],
                          args[2], after);
}

/* json_string_between of the n bytes at d (head, tail: bytes; after: a tuple of bytes, or NULL): a new reference,
 * the string's value or None; NULL with an error set. */
static PyObject *string_between(const unsigned char *d, Py_ssize_t n, PyObject *head, PyObject *tail,
                                PyObject *after) {
    Py_ssize_t pieces = after != NULL ? PyTuple_GET_SIZE(after) : 0;
    Py_ssize_t h = PyBytes_GET_SIZE(head), t = PyBytes_GET_SIZE(tail);
    if (n - h - t < 2 || memcmp(d, PyBytes_AS_STRING(head), (size_t)h) != 0 || d[h] != '"') Py_RETURN_NONE;
    Py_ssize_t close = string_end(d, h, n); /* the text's closing quote: the first not escaped */
    if (close < 0 || n - close - 1 < t || memcmp(d + close + 1, PyBytes_AS_STRING(tail), (size_t)t) != 0)
        Py_RETURN_NONE;
    Py_ssize_t pos = close + 1 + t;
    for (Py_ssize_t k = 0; k < pieces; k++) {
        PyObject *piece = PyTuple_GET_ITEM(after, k);
        Py_ssize_t p = PyBytes_GET_SIZE(piece);
        pos = hole_end(d, pos, n);
        if (pos == -2) return NULL;
        if (pos < 0 || n - pos < p || memcmp(d + pos, PyBytes_AS_STRING(piece), (size_t)p) != 0) Py_RETURN_NONE;
        pos += p;
    }
    if (pos != n) Py_RETURN_NONE;
    return cs_json_string((const char *)d + h + 1, (const char *)d + close); /* the body between its quotes */
}

static PyObject *cs_json_string(const char *body, const char *end) {
    const unsigned char *s = (const unsigned char *)body, *e = (const unsigned char *)end;
    const unsigned char *p = s;
    while (p < e && *p != '\\' && *p != '"' && *p >= 0x20) p++;
    PyObject *text;
    if (p == e) { /* no escape: the bytes are the text */
        text = PyUnicode_DecodeUTF8((const char *)s, e - s, "strict");
    } else {
        unsigned char small[512];
        unsigned char *buf = e - s <= (Py_ssize_t)sizeof(small) ? small : PyMem_Malloc((size_t)(e - s));
        if (buf == NULL) return PyErr_NoMemory();
        Py_ssize_t len = unescape(s, e, buf);
        text = len < 0 ? Py_NewRef(Py_None) : PyUnicode_DecodeUTF8((const char *)buf, len, "strict");
        if (buf != small) PyMem_Free(buf);
    }
    if (text == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
        Py_RETURN_NONE; /* invalid UTF-8: orjson says why */
    }
    return text;
}

static PyMethodDef methods[] = {
    {"encode", (PyCFunction)(void (*)(void))encode, METH_FASTCALL, encode_doc},
    {"writes", (PyCFunction)(void (*)(void))writes, METH_FASTCALL, writes_doc},
    {"fold_deltas", (PyCFunction)(void (*)(void))fold_deltas, METH_FASTCALL, fold_deltas_doc},
    {"make_plan", make_plan, METH_VARARGS, make_plan_doc},
    {"sse_scan", (PyCFunction)(void (*)(void))sse_scan, METH_FASTCALL, sse_scan_doc},
    {"sse_idle", (PyCFunction)(void (*)(void))sse_idle, METH_FASTCALL, sse_idle_doc},
    {"json_string_between", (PyCFunction)(void (*)(void))json_string_between, METH_FASTCALL,
     json_string_between_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "agentmsg._speedups",
    .m_doc = "Optional C speed-ups: the JSON writer of model objects, the SSE event scanner, the string of a payload "
             "of a known shape.",
    .m_size = 0,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__speedups(void) {
    if (PyType_Ready(&SSEScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "SSEScanner", (PyObject *)&SSEScannerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
