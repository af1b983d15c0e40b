/* agentmsg._speedups, the whole-body fast paths: the shared machinery (cstream.c).
 *
 * A fast path reads a whole provider stream body (bytes) and returns the very AgentEvents the Python parser
 * (agentmsg/providers/<provider>.py driving _builder.StreamBuilder) returns for it, given the same event-id
 * prefix and createdAt, dict for dict and key for key in the same order; or it gives up (CS_BAIL: the entry point
 * returns None) on anything but the clean cases it knows, and the Python parser reads the body. Nothing is handed
 * out before the whole body is read, so giving up never loses or repeats an event. The Python parser defines
 * the results: tests/test_cstream.py runs both over the recorded streams and fuzzed ones.
 *
 * This file is the C side of StreamBuilder for choice 0 (a reply of one choice, no subagent source): the reply's
 * start and end, text and thinking blocks by slot, tool calls that start whole (id and name known), usage,
 * finish reason, refusal, not-kept notes and problems; and the reader of a whole SSE body of simple events.
 * A provider file (anthropic.c, ...) reads the payloads and drives it, as the provider's StreamParser drives
 * StreamBuilder. Each function returns CS_OK, CS_BAIL (not a clean case: the caller gives up) or CS_ERR (a
 * Python exception is set).
 */
#ifndef AGENTMSG_CSTREAM_H
#define AGENTMSG_CSTREAM_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define CS_OK 0
#define CS_BAIL 2 /* (not 1: cs_sse_next's "an event") */
#define CS_ERR (-1)
#define CS_PASS 3 /* (CSRun.raw) not read here */

/* ---- interned strings (cs_strings) ------------------------------------------------------------------ */
#define CS_STRINGS(X)                                                                                          \
    X(type, "type") X(id, "id") X(createdAt, "createdAt") X(replyId, "replyId") X(role, "role")                \
    X(assistant, "assistant") X(modelName, "modelName") X(blockId, "blockId") X(delta, "delta")                \
    X(signature, "signature") X(redactedData, "redactedData") X(provider, "provider") X(model, "model")        \
    X(toolCallId, "toolCallId") X(toolCallName, "toolCallName") X(thoughtSignature, "thoughtSignature")        \
    X(metadata, "metadata") X(usage, "usage") X(finishReason, "finishReason") X(refusal, "refusal")            \
    X(reason, "reason") X(generateReason, "generateReason") X(input, "input") X(name, "name")                  \
    X(value, "value") X(rule, "rule") X(message, "message") X(empty, "") X(message_event, "message")           \
    X(TOOL_CALLS, "TOOL_CALLS") X(INTERRUPTED, "INTERRUPTED") X(minted_id, "agentmsg_minted_id")              \
    X(AGENT_START, "AGENT_START") X(AGENT_END, "AGENT_END") X(MODEL_CALL_START, "MODEL_CALL_START")            \
    X(MODEL_CALL_END, "MODEL_CALL_END") X(TEXT_BLOCK_START, "TEXT_BLOCK_START")                                \
    X(TEXT_BLOCK_DELTA, "TEXT_BLOCK_DELTA") X(TEXT_BLOCK_END, "TEXT_BLOCK_END")                                \
    X(THINKING_BLOCK_START, "THINKING_BLOCK_START") X(THINKING_BLOCK_DELTA, "THINKING_BLOCK_DELTA")            \
    X(THINKING_BLOCK_END, "THINKING_BLOCK_END") X(TOOL_CALL_START, "TOOL_CALL_START")                          \
    X(TOOL_CALL_DELTA, "TOOL_CALL_DELTA") X(TOOL_CALL_END, "TOOL_CALL_END") X(REQUEST_STOP, "REQUEST_STOP")    \
    X(CUSTOM, "CUSTOM") X(problem_event, "agentmsg.problem") X(not_kept_event, "agentmsg.not-kept")            \
    X(error_event, "agentmsg.error") X(not_kept_rule, "not-kept") X(incomplete_stream, "incomplete_stream")     \
    X(incomplete_message, "the stream ended before the provider finished the reply")

#define CS_DECLARE(var, text) extern PyObject *cs_s_##var;
CS_STRINGS(CS_DECLARE)
#undef CS_DECLARE
#define CS_S(var) (cs_s_##var)

int cs_strings(void); /* interns them (and takes orjson.dumps) once; 0, or -1 with an exception */
extern PyObject *cs_dumps; /* orjson.dumps, once cs_strings() has run */

/* A provider file's own interned strings, from an X-macro list LIST(X) of X(var, "text"): with CS_PREFIX defined as
 * the file's prefix (a_s_, ...), LIST(CS_STRING_VAR) declares `static PyObject *<prefix>var` and, in the file's
 * set-up function, LIST(CS_STRING_INTERN) interns each (returning -1 from that function when one fails). */
#define CS_PASTE_(a, b) a##b
#define CS_PASTE(a, b) CS_PASTE_(a, b)
#define CS_STRING_VAR(var, text) static PyObject *CS_PASTE(CS_PREFIX, var) = NULL;
#define CS_STRING_INTERN(var, text) \
    if ((CS_PASTE(CS_PREFIX, var) = PyUnicode_InternFromString(text)) == NULL) return -1;

/* ---- the builder ------------------------------------------------------------------------------------ */
enum { CS_TEXT = 1, CS_THINKING = 2 };
#define CS_MAX_BLOCKS 16 /* open blocks at once (a clean reply has one or two): more gives up */
#define CS_MAX_CALLS 64  /* tool calls in a reply (each is looked for among the others: more gives up, as linear) */

typedef struct {
    PyObject *slot;      /* the provider's key for it (str or int), owned */
    int kind;            /* CS_TEXT, CS_THINKING */
    PyObject *block_id;  /* "text-1", owned */
    PyObject *whole_sig; /* a whole signature held until the block ends (cs_signature), owned or NULL */
} CSBlock;

typedef struct {
    PyObject *key;      /* the provider's index or slot, owned */
    PyObject *id;       /* owned */
    PyObject *name;     /* owned */
    PyObject *text;     /* list of the argument pieces (str), owned */
    PyObject *late_sig; /* a thought signature that came after its START, sent on its END: owned or NULL */
    PyObject *input;    /* the input sent on its END (Gemini): owned or NULL */
    int open, minted, said;
} CSCall;

typedef struct {
    PyObject *events;           /* the list of event dicts */
    PyObject *provider;         /* str, for thinking blocks' provenance */
    PyObject *stamp;            /* createdAt of every event */
    PyObject *arguments_problem; /* providers._builder.arguments_problem */
    char prefix[22];            /* event ids: prefix + the counter in 10 hex digits */
    unsigned long long counter;
    PyObject *response_id, *model; /* owned or NULL (identify) */
    PyObject *reply_id;            /* the reply's id once open, owned */
    int opened, closed, made;      /* made: blocks made so far (their ids' numbers) */
    CSBlock blocks[CS_MAX_BLOCKS]; /* open blocks, in the order they opened */
    int nblocks;
    CSCall *calls; /* started calls, in the order they started */
    Py_ssize_t ncalls, cap;
    int minted;                    /* ids minted so far */
    PyObject *usage;               /* dict or NULL */
    PyObject *finish;              /* str or NULL */
    int normal, tool_calls, refusal;
    PyObject *held;                /* (name, value) CUSTOM events said before the reply opened: list or NULL */
    PyObject *said;                /* set of the keys of not-kept notes and (rule, message) problems said */
} CS;

/* Set up: provider (str), prefix (a str of 22 ASCII characters), stamp (str), arguments_problem (callable). */
int cs_begin(CS *b, PyObject *provider, PyObject *prefix, PyObject *stamp, PyObject *arguments_problem);
void cs_clear(CS *b);
/* A new event {"type", "id", "createdAt"} appended to the events: borrowed, NULL with an exception. */
PyObject *cs_event(CS *b, PyObject *type);
/* StreamBuilder.identify(response_id, model): each taken when it is a non-empty str and none was taken. */
int cs_identify(CS *b, PyObject *response_id, PyObject *model);
/* StreamBuilder.choice(0): AGENT_START, MODEL_CALL_START and what was held, once (no response id: gives up). */
int cs_open(CS *b);
/* StreamBuilder.text(delta, slot=slot, ends=ends): ends may be NULL. A delta that is no str gives up. */
int cs_text(CS *b, PyObject *slot, PyObject *delta, PyObject *ends);
/* StreamBuilder.thinking(delta, slot=slot, signature=sig, redacted=redacted): sig and redacted may be NULL. */
int cs_thinking(CS *b, PyObject *slot, PyObject *delta, PyObject *sig, PyObject *redacted);
/* StreamBuilder.signature(value, slot=slot): a whole signature, held until the block ends. */
int cs_signature(CS *b, PyObject *slot, PyObject *value);
/* StreamBuilder.end_block(slot, metadata=metadata): metadata may be NULL. */
int cs_end_block(CS *b, PyObject *slot, PyObject *metadata);
/* The kind of the block open in slot (CS_TEXT, CS_THINKING), 0 when none; -1 with an exception. */
int cs_block_kind(CS *b, PyObject *slot);
/* The started call under key that is still open, or NULL (no exception). */
CSCall *cs_open_call(CS *b, PyObject *key);
/* A call that starts whole (StreamBuilder._start_call for a call that has its name): id NULL mints one as
 * _start_call does; an id an earlier call has gives up, as does a call beyond CS_MAX_CALLS. Ends the open thinking blocks, emits TOOL_CALL_START
 * (thoughtSignature when sig is a non-empty str) and, when pending is a non-empty str, one TOOL_CALL_DELTA. */
int cs_call_start(CS *b, PyObject *key, PyObject *id, PyObject *name, PyObject *sig, PyObject *pending);
/* A fragment of arguments text for a started open call (empty: nothing). */
int cs_call_args(CS *b, CSCall *call, PyObject *text);
/* StreamBuilder._end_started: TOOL_CALL_END (metadata thoughtSignature / agentmsg_minted_id, input). */
int cs_call_end(CS *b, CSCall *call);
/* StreamBuilder.set_usage(usage): a dict, merged over the last ({**old, **new}); empty or NULL: nothing. */
int cs_usage(CS *b, PyObject *usage);
/* StreamBuilder.finish(0, reason, tool_calls=, normal=). */
int cs_finish(CS *b, PyObject *reason, int tool_calls, int normal);
void cs_refused(CS *b);
/* StreamBuilder.not_kept(key, message): said once per key (held until the reply opens). */
int cs_not_kept(CS *b, PyObject *key, PyObject *message);
/* StreamBuilder.problem(rule, message): said once per (rule, message) (held until the reply opens). */
int cs_problem(CS *b, PyObject *rule, PyObject *message);
/* StreamBuilder._problem_at(c, rule, message, call): call may be NULL. The reply must be open. */
int cs_problem_at(CS *b, PyObject *rule, PyObject *message, CSCall *call);
/* StreamBuilder.close(ended=ended). */
int cs_close(CS *b, int ended);

/* ---- a whole SSE body of simple events ---------------------------------------------------------------
 * Accepted: lines all ending in "\n" or all in "\r\n" (the first line decides); fields `event`, `data` (at most
 * one line of it an event), `id` and comments (":..."); a blank line ends each event; more blank lines between
 * events are nothing (as the SSE decoder reads them); the last event may lack its blank line, and its last line
 * its end, as Framer.close reads them.
 * An `event` or `id` field that is not ASCII (the SSE decoder says invalid UTF-8 in it) gives up too.
 * Anything else (a `retry` field, other lines, a body that does not start with a field, a UTF-8 byte order
 * mark, an HTTP head, JSON lines) gives up, as do events of no data. */
typedef struct {
    const char *p, *end;
    int crlf;
} CSSse;

int cs_sse_begin(CSSse *s, PyObject *body); /* CS_OK or CS_BAIL */
/* The next event: CS_EVENT with its name ([*ev, *ev + *evlen); "message" when it has none) and data, 0 at the end
 * of the body, or CS_BAIL (not 1: that is CS_BAIL's value). */
#define CS_EVENT 4 /* (not CS_OK, CS_BAIL or CS_PASS) */
int cs_sse_next(CSSse *s, const char **ev, Py_ssize_t *evlen, const char **data, Py_ssize_t *dlen);
/* Whether [p, p + n) is exactly the C string lit. */
static inline int cs_is(const char *p, Py_ssize_t n, const char *lit) {
    return (Py_ssize_t)strlen(lit) == n && memcmp(p, lit, (size_t)n) == 0;
}

/* ---- a payload ------------------------------------------------------------------------------------- */
/* loads(data) as a dict: a new reference; NULL with CS_BAIL in *rc when it is not JSON or not an object (no
 * exception), or with CS_ERR (an exception). */
PyObject *cs_loads(PyObject *loads, const char *data, Py_ssize_t n, int *rc);
/* The value of the JSON string whose body (between its quotes) is [body, end), as orjson reads it (_speedups.c,
 * json_string_between's reader): a new reference; None (a new reference) when it is not one whole JSON string this
 * reads (a \u escape of a surrogate, a control character, an escape JSON does not have, invalid UTF-8: orjson says
 * why); NULL with an exception. */
PyObject *cs_json_string(const char *body, const char *end);

/* ---- BaseStreamParser over a whole SSE body --------------------------------------------------------- */
typedef struct CSRun CSRun;
struct CSRun {
    CS *b;
    int done; /* the provider's end signal was read: [DONE], or one the provider file sets (then it closes b) */
    /* the provider's StreamParser.payload(event, obj): obj a dict */
    int (*payload)(CSRun *r, const char *ev, Py_ssize_t evlen, PyObject *obj);
    /* StreamParser.end_payloads() (may be NULL) */
    int (*end_payloads)(CSRun *r);
    void *state; /* the provider file's own */
    /* (may be NULL) a payload's data before it is read as JSON: CS_OK (read so), CS_PASS (read it as JSON and
     * call payload), CS_BAIL or CS_ERR: for a provider's common payloads of a known shape, read with no dict */
    int (*raw)(CSRun *r, const char *ev, Py_ssize_t evlen, const char *data, Py_ssize_t n);
};
/* BaseStreamParser.feed(body) then close(), as run_parser runs them on a whole body: each payload that is a JSON
 * object goes to r->payload; [DONE] ends the reply (end_payloads, close(ended=True)); a blank payload is skipped;
 * a payload after the end that is news, or anything the Python parser would say a problem of, gives up. */
int cs_run_sse(CSRun *r, PyObject *body, PyObject *loads);
/* An entry point's body: checks the arguments, runs cs_run_sse with r (its payload, end_payloads and state set
 * by the caller) and returns the events, None (gave up) or NULL (an exception). */
PyObject *cs_entry(PyObject *const *args, Py_ssize_t nargs, const char *provider, CSRun *r);

/* ---- the entry points, registered in _speedups.c's method table ------------------------------------ */
/* <provider>_stream(body: bytes, prefix: str, stamp: str, loads, arguments_problem) -> list | None */
PyObject *cs_anthropic_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *cs_openai_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *cs_gemini_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *cs_dashscope_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* reduce_reply(events: list) -> dict | None (reduce.c) */
PyObject *cs_reduce_reply(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* plain_json(value, max_bytes) -> bool (reduce.c) */
PyObject *cs_plain_json(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

#define CS_METHOD(name, doc) {#name, (PyCFunction)(void (*)(void))cs_##name, METH_FASTCALL, doc},
#define CSTREAM_METHODS                                                                                        \
    CS_METHOD(anthropic_stream, "The whole-body fast path of providers.anthropic.parse_stream.")              \
    CS_METHOD(openai_stream, "The whole-body fast path of providers.openai.parse_stream.")                    \
    CS_METHOD(gemini_stream, "The whole-body fast path of providers.gemini.parse_stream.")                    \
    CS_METHOD(dashscope_stream, "The whole-body fast path of providers.dashscope.parse_stream.")              \
    CS_METHOD(reduce_reply, "The reducer's fast path for a whole list of trusted events.")                    \
    CS_METHOD(plain_json, "Whether a value holds nothing but exact JSON types msgspec.convert reads as the JSON " \
                          "round trip would (and its text is within max_bytes).")

#endif
