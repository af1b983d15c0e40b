"""Every rule name a :class:`~agentmsg.Problem` can carry: what it means, an example, how to fix it. The
reports link each rule to its entry in docs/rules.md (SARIF ``helpUri``, JUnit), a page written from this
table (``make docs-rules``; tests/project/test_rules_page.py compares, and checks that every rule name the
SDK raises is here)."""

from __future__ import annotations

import os
import re
from typing import Final

from agentmsg.providers import RULES as PROVIDER_RULES

#: where the reports' links point: the page in this repository, or AGENTMSG_RULES_URL (a published copy)
RULES_PAGE: Final = "docs/rules.md"

#: rule -> (meaning, example, fix); the formatters' diagnostics are added below from agentmsg.providers.RULES
RULES: dict[str, tuple[str, str, str]] = {
    # ---- the schemas (a JSON Schema keyword, or the schema's own x-rule) ----
    "type": (
        "a value has the wrong JSON type",
        "`/content: 12 is not of type 'array'`",
        "give the type the schema says",
    ),
    "required": ("a required key is missing", "`'content' is a required property`", "add the key"),
    "enum": (
        "a value is not one of the allowed ones",
        "`/role: 'USER' is not one of ['user', ...]`",
        "use one of the listed values (case matters)",
    ),
    "const": (
        "a value must be exactly one value (a block's or event's type)",
        "`/type: 'TEXT' was expected`",
        "write the value the schema fixes",
    ),
    "pattern": (
        "a string does not match the pattern it must",
        "`/id: '' does not match '^.+$'`",
        "write the string in the form the schema says",
    ),
    "minLength": (
        "a string is shorter than allowed (often: empty)",
        "`/id: '' should be non-empty`",
        "give a non-empty value",
    ),
    "minItems": (
        "an array (or an argument's sequence) holds fewer items than allowed (often: none)",
        "`/offered: offered holds at least one protocol (the default)`",
        "give at least the number of items the message says",
    ),
    "path": (
        "a file path no file system can hold (a lone UTF-16 surrogate, a NUL)",
        "`/source: 'a\\udc00.json' is no path a file system can hold`",
        "give the path as the file system names it (os.fsdecode of its bytes)",
    ),
    "count": (
        "a trim counter gave counts that are not one whole number per message",
        "`/counter: the counter gave 2 counts for 3 messages`",
        "return one count per message (ints, or an object with messages and total), as count_tokens does",
    ),
    "strategy": (
        "a trim strategy and a summarize function that do not go together",
        "`/summarize: strategy='oldest' takes no summarize function (strategy='summarize' does)`",
        "give summarize with strategy='summarize' only, or leave strategy unset",
    ),
    "empty-root": (
        "a media policy's allowed root is an empty path, which Path('') cannot tell from the current directory",
        "`/allowed_roots/0: PosixPath('.') is no root: it may be an empty path`",
        "name the directory the formatter may read, in full",
    ),
    "minimum": (
        "a number is below the smallest allowed",
        "`/usage/inputTokens: -1 is less than the minimum of 0`",
        "give a number in range",
    ),
    "exclusiveMinimum": (
        "a number must be above a bound and is not (a timeout or an interval of 0 seconds or less)",
        "`/keepalive: keepalive must be a number of seconds above 0 (math.inf: none), not 0`",
        "give a number above the bound",
    ),
    "header": (
        "an HTTP header given to the SDK that no header can carry, or one the SDK sets itself (an event stream's "
        "framing)",
        "`/headers/0: content-type is the event stream's own (its framing): it cannot be set`",
        "give a token as the name and Latin-1 text without line breaks as the value; leave the framing to the SDK",
    ),
    "maximum": (
        "a number is above the largest allowed (the usage counts and sizing hints AgentScope Java holds in an int: "
        "2^31-1; a reducer's usage sum stops at its maximum)",
        "`/usage/inputTokens: 2147483648 is greater than the maximum of 2147483647`",
        "give a number in range",
    ),
    "format": (
        "a string is not in the format declared (a date-time, ...)",
        "`/timestamp: 'yesterday' is not a 'date-time'`",
        "write it in the declared format",
    ),
    "additionalProperties": (
        "a key the schema does not declare, refused (`--strict`, closed schemas)",
        "`/content/0: Additional properties are not allowed ('colour' was unexpected)` (at the object; the key named)",
        "remove the key, or drop `--strict` to accept it as a note ([unknown-key])",
    ),
    "anyOf": (
        "a value fits none of the shapes it may take",
        "`/content/0: not valid under any of the given schemas`",
        "give one of the shapes (the other problems at that pointer say which is near)",
    ),
    "allOf": (
        "a value breaks one of the schemas it must fit all of",
        "`/: is not valid under all of the given schemas`",
        "fix what the other problems at that pointer say",
    ),
    "not": (
        "a value has a shape it must not have (a null value in a message's or a tool result's metadata, which "
        "AgentScope Java drops or refuses)",
        "`/metadata/x: metadata values may not be null (AgentScope Java drops such a key: leave it out), got None`",
        "leave the key out (or give it a value)",
    ),
    "if": (
        "a conditional rule of the schema is broken",
        "`/: ... (if/then)`",
        "see the message: it names the condition",
    ),
    "role-content": (
        "a block that the message's role cannot hold (a tool_result in an assistant message, ...)",
        "`/content/0: a user message cannot hold tool_use blocks`",
        "move the block to a message of the role that holds it",
    ),
    "timestamp": (
        "a timestamp that is not the wire form `YYYY-MM-DD HH:MM:SS.mmm`",
        "`/timestamp: not a timestamp, got '2024/01/01'`",
        "write it as agentmsg.now_timestamp() does",
    ),
    "schema": (
        "the instance is invalid and no finer rule was found",
        "`invalid`",
        "check it with `agentmsg validate` to see each problem",
    ),
    # ---- reading JSON, limits ----
    "json": (
        "text that is not JSON (or an SSE stream where JSON was expected)",
        "`not valid JSON: Expecting value at line 1`",
        "fix the JSON syntax; an event stream: `--kind event`",
    ),
    "json-value": (
        "a value JSON cannot hold (NaN, infinity)",
        "`/score: NaN is not JSON`",
        "use a finite number or null",
    ),
    "duplicate-key": (
        'a key given twice in one JSON object with values that differ (`"a"` and `"\\u0061"` are one key; `1`, `1.0`'
        " and `true` three values): the readers keep one (the last), so the other is lost; `agentmsg validate` and"
        " `agentmsg.check` refuse the instance. A key given again with the same value (AgentScope Java writes each"
        " event's `type` twice) loses nothing and is accepted",
        "`/content/0/text: key 'text' given 2 times in one object, its values differ: readers keep one (most, the last)`",
        "keep one of the values: fix the writer that repeats the key",
    ),
    "utf-8": ("bytes that are not UTF-8", "`invalid UTF-8 at byte 12`", "write the file as UTF-8"),
    "lone-surrogate": (
        "a string holds half of a UTF-16 surrogate pair: no UTF-8 can write it",
        "`/text: a lone surrogate \\ud800`",
        "write whole characters",
    ),
    "surrogate": (
        "a provider's reply held a lone surrogate escape, replaced by U+FFFD",
        "`a lone UTF-16 surrogate escape ... replaced`",
        "none needed: the provider sent broken text",
    ),
    "integer-range": (
        "an integer beyond 64 bits, which the readers cannot write back",
        "`/usage/inputTokens: beyond 64 bits`",
        "use a smaller number (or a string)",
    ),
    "max-bytes": (
        "a document or record larger than `limits.max_bytes`",
        "`larger than the limit of 67108864 bytes`",
        "split the file, or raise `--max-bytes` / `agentmsg.limits.max_bytes`",
    ),
    "max-depth": (
        "nesting deeper than `limits.max_depth`",
        "`/metadata: nesting deeper than 64`",
        "flatten the data, or raise `--max-depth`",
    ),
    "max-line-bytes": (
        "a line of an event stream longer than the limit",
        "`a line over 16777216 bytes: skipped`",
        "split the event, or raise `agentmsg.limits`",
    ),
    "max-event-bytes": (
        "an event (SSE event, JSON line, array item) larger than the limit: skipped",
        "`an event over the limit: skipped`",
        "send smaller events, or raise `agentmsg.limits`",
    ),
    "max-problems": (
        "more problems than are kept (a reducer's `max_problems`, a stream reply's 10,000): the rest were counted,"
        " not listed",
        "`120 more problems were not kept`",
        "fix the ones listed, then check again",
    ),
    "max-open-blocks": (
        "more blocks open at once than the reducer keeps: the oldest closed as it was",
        "`/5000: more than 1024 blocks open`",
        "close blocks (…_END events) in the stream",
    ),
    "sse": (
        "an SSE stream that breaks the text/event-stream format",
        "`an event field with no data`",
        "write the stream as `agentmsg events --sse` does",
    ),
    "incomplete": (
        "input cut short (a stream ended inside an event, a line or a value)",
        "`the stream ended inside an event`",
        "make sure the producer wrote (and flushed) the whole stream",
    ),
    "unreadable": (
        "a file that cannot be read (missing, a directory, no permission)",
        "`cannot read: No such file or directory`",
        "give a readable file (a glob pattern in quotes)",
    ),
    "unknown-key": (
        "a note: a key the schema does not declare (a newer producer's), kept",
        "`/content/0/colour: note: not declared`",
        "none needed; `--strict` refuses them",
    ),
    "legacy-key": (
        "a note: a legacy key (AgentScope's seed documents), read in its current form; what the readers refuse in"
        " that form is an error of its own rule at the form read's pointer, its message saying where the file writes"
        " it (written at /content/0/result/0)",
        "`/content/0/arguments: note: read as input`",
        "write the current key; `--strict` refuses legacy keys",
    ),
    # ---- messages, conversations, the API ----
    "role": (
        "a message of the wrong role for where it is (a user message given as a reply, ...)",
        "`expected an ASSISTANT message, got user`",
        "give a message of the role asked for",
    ),
    "invalid-message": (
        "a message that no longer holds what its schema says (changed after it was read)",
        "`/3: cannot format this message`",
        "build messages with the SDK's classes, or validate them again",
    ),
    "unsupported-block": (
        "a block type the provider formatters have no rule for",
        "`/0/content/1/type: no rule for 'x' blocks`",
        "update agentmsg, or leave the block out",
    ),
    "empty-conversation": ("a conversation with no message to send", "`no messages`", "give at least one message"),
    "wire-name": (
        "a key written in another casing than the wire's (camelCase)",
        "`/tool_call_id: the wire name is toolCallId`",
        "write the wire name",
    ),
    "conflict": (
        "two values that must agree do not (an id given twice differently, ...)",
        "`/id: conflicts with the block's id`",
        "make them agree, or give one",
    ),
    "shape": (
        "input that is not the shape expected (a provider reply, an event)",
        "`a Messages response is a message or an error`",
        "give the documented shape",
    ),
    "choice": (
        "a provider reply has no choice of the index asked for",
        "`the reply has no choice 1`",
        "ask for a choice the reply holds",
    ),
    "options": (
        "formatter options that are not valid",
        "`/options: unknown option 'x'`",
        "see agentmsg.providers.FormatOptions",
    ),
    "structured-output": (
        "a reply's structured output does not fit the model asked for",
        "`does not fit Weather: ...`",
        "see the message: the fields it names",
    ),
    "name": (
        "a provider's stream named a tool call again, differently: the later name was left out",
        "`a later fragment names a tool call 'b', not 'a'`",
        "none needed: the provider sent a call's name twice",
    ),
    "cycle": (
        "a value that holds itself (a dict or list inside itself): no JSON can write it",
        "`/metadata: holds itself (a cycle)`",
        "build the value without the self-reference",
    ),
    "number-as-text": (
        "a provider sent a number beyond what JSON is written with (a double, 64-bit integers): kept as its text",
        "`a number at /usage/x is beyond ...: kept as its text, a string`",
        "none needed: the exact digits are kept, as a string",
    ),
    "hint": (
        "`format`: what an input that is no conversation holds, with the command that reads it (not a problem)",
        "`these look like agent events, not messages: reduce them first`",
        "run the command the hint names",
    ),
    "id": (
        "a provider reply reused an earlier tool call's id: this call got its own",
        "`tool call id 'a' is an earlier call's too`",
        "none needed: the provider sent duplicate ids",
    ),
    "media-data-url": (
        "a data: URL that cannot be read",
        "`/0/content/1/source/url: not a base64 data URL`",
        "write `data:<type>;base64,<data>`",
    ),
    "media-local-refused": (
        "local media outside the allowed roots",
        "`/0/content/1: file:// not allowed`",
        "pass `--allow-root DIR` (MediaPolicy.allowed_roots)",
    ),
    "media-download-refused": (
        "a media URL the provider needs as bytes, downloads off",
        "`downloading is off`",
        "pass `--allow-download` or embed the data",
    ),
    "media-address-refused": (
        "a download to a private or loopback address, refused",
        "`127.0.0.1 is private`",
        "pass `--allow-private` if that is meant",
    ),
    "media-scheme-refused": (
        "a media URL scheme that is neither https, http, data nor file",
        "`ftp: not supported`",
        "use an https URL or embed the data",
    ),
    "media-too-large": (
        "media larger than the policy allows",
        "`12 MB over the limit`",
        "send smaller media, or raise MediaPolicy's limit",
    ),
    "media-total-too-large": (
        "the media one request reads and downloads, every block counted, over the policy's total",
        "`/4/content/0: https://x/a.wav (over 1048576 bytes) takes the media of this request over its limit`",
        "send fewer or smaller media, or raise MediaPolicy.max_total_bytes",
    ),
    "media-fetch-failed": ("downloading media failed", "`HTTP 404`", "check the URL"),
    # ---- trimming to a token budget (agentmsg.context.trim, agentmsg trim) ----
    "trim-removed": (
        "messages were removed to fit the token budget: a whole unit (a tool call with its results, a turn's"
        " question with its last answer), oldest first",
        "`/3: removed with 2 more (to /5): 412 tokens, oldest first`",
        "none needed; give a larger budget, or summarize (strategy='summarize') to keep what they said",
    ),
    "trim-summarized": (
        "the removed messages were replaced by the summary the caller's function wrote, after the system prompt",
        "`12 removed messages replaced by a summary`",
        "none needed",
    ),
    "trim-summary-dropped": (
        "the summary did not fit the budget (after making room, asked again at most 3 times) and was left out",
        "`the summary is left out: no room can be made for it`",
        "write a shorter summary, or give a larger budget",
    ),
    "trim-over-budget": (
        "what trimming never removes (the system messages, the latest turn, the request's framing and tool"
        " definitions) alone exceeds the token budget: no trim can fit it",
        "`the system messages and the latest turn alone count 5032 tokens, 5120 with the request's framing: over the"
        " budget of 4096`",
        "give a larger budget, shorten the system prompt or the last message, or keep fewer units (keep_last)",
    ),
    "trim-assistant-first": (
        "the kept conversation starts with an assistant turn, which the provider refuses (it takes a user turn first):"
        " no user message comes before the latest turn",
        "`/1: the kept turns start with an assistant turn`",
        "start the conversation with a user message",
    ),
    # ---- event streams ----
    "order": (
        "an event out of order: a delta for a block not open, an end without a start, a second start",
        "`/7/blockId: TEXT_BLOCK_DELTA for a block that is not open`",
        "emit each block's START, deltas, END in order (docs/events.md)",
    ),
    "after-end": (
        "an event between replies, after an AGENT_END, that would only open an empty reply (an AGENT_RESULT, a"
        " MODEL_CALL_END, REQUEST_STOP, ...): skipped",
        "`/9: AGENT_RESULT after the reply ended (AGENT_END at /8) would only open an empty reply: event skipped`",
        "send it before the reply's AGENT_END (docs/events.md, rule 1)",
    ),
    "duplicate": (
        "something given twice that must be given once (a block opened twice, ...)",
        "`/4: block 'b1' is already open`",
        "emit it once",
    ),
    "cumulative": (
        "deltas that repeat the text so far instead of adding to it",
        "`/9/delta: looks cumulative`",
        "send only the new text in each delta",
    ),
    "usage-not-summed": (
        "usage reported per model call that does not add up",
        "`/12: usage not summed`",
        "report each call's own usage",
    ),
    "agent-result": (
        "a reduced message does not cover its AGENT_RESULT (`reduce --check-result`)",
        "`/0/content: tool call 'c1' not in the message`",
        "look for lost events",
    ),
    "no-event-carrier": (
        "a block the event stream has no event for",
        "`/content/2: no event carries 'x' blocks`",
        "leave the block out of streamed replies",
    ),
    "not-kept": (
        "a note: data a provider sent that the message has no place for",
        "`note: ... [not-kept]`",
        "none needed",
    ),
    "ui-wrapped": (
        "a note: an event the UI protocol has no event for, sent whole in the protocol's custom event",
        "`/6: AGENT_RESULT has no AG-UI event here: sent whole as CUSTOM 'agentscope.event' [ui-wrapped]`",
        "none needed: agentmsg's decoder gives the event back; other clients may ignore it (docs/ag-ui.md)",
    ),
    "ui-not-kept": (
        "a note: a field of a UI protocol's event that no AgentEvent keeps, left out (said once per stream)",
        "`/4: TOOL_CALL_START parentMessageId: no AgentEvent keeps it (left out) [ui-not-kept]`",
        "none needed; docs/ag-ui.md lists what each event keeps",
    ),
    "ui-mapped": (
        "a note: a part of a chat a UI front end posted that no content block holds, kept in the message's metadata",
        "`/messages/1/parts/0: source-url: no content block holds it; kept whole in the message metadata ai_sdk_parts [ui-mapped]`",
        "none needed: the part is kept (docs/ai-sdk.md, docs/ag-ui.md: reading what a front end posts)",
    ),
    "ui-carrier-conflict": (
        "a note: a key of agentmsg's carrier (AG-UI metadata.agentmsg, the AI SDK's data-agentmsg) that contradicts"
        " what the UI event itself says (its type, text, block, run, call, tool name or arguments): not applied;"
        " the AG-UI encoder says it of a TOOL_CALL_END input its arguments do not show as it writes it",
        '`/2/metadata: agentmsg "type" "TOOL_CALL_DELTA" contradicts TEXT_BLOCK_DELTA "TEXT_BLOCK_DELTA": not applied'
        " [ui-carrier-conflict]`",
        "none needed: the event is read as a UI client shows it; find what rewrote the carrier (docs/ag-ui.md rule 1,"
        " docs/ai-sdk.md)",
    ),
    "ui-legacy": (
        "a note: an event of an older version of the UI protocol, read as its current form",
        "`/1: THINKING_START is AG-UI 0.0.x's, read as REASONING_START [ui-legacy]`",
        "have the producer send the current events (AG-UI 1.0: REASONING_*)",
    ),
    "source-error": (
        "a subagent's forwarded stream reported an error",
        "`/3: source 'a/b' failed`",
        "see the subagent's error",
    ),
    "incomplete_stream": (
        "the stream ended inside a reply (no AGENT_END, a block or model call open): kept as INTERRUPTED",
        "`the stream ended inside reply m1`",
        "make sure the producer ends every reply",
    ),
    "empty": (
        "an input (file or stdin) of no bytes or only blanks, in every command; `reduce`: no events in the input",
        "`the input is empty (no bytes, or only blanks): nothing to read`",
        "give the input its content (a producer that wrote nothing: see why)",
    ),
    "no-reply": (
        "`reduce`: a note: events, but none opens a reply here",
        "`note: no reply`",
        "reduce a subagent's events with `--source PATH`",
    ),
}

_FIX = {
    "lossy": "the request is sent without it; make the conversation fit the provider, or accept it (without --strict)",
    "rewrite": "none needed: sent in the provider's form, nothing lost",
    "info": "none needed: said for your information, nothing lost",
    "error": "fix the conversation (e.g. answer every tool call before the next turn; --repair adds results)",
}
#: the fix of a formatter diagnostic for which its kind's fix says too little
_RULE_FIX = {
    "history-tag-in-text": "nothing is changed (as AgentScope Java); if the other agent's text is not trusted, take"
    " the tags out of it before formatting, or use the prefix layout",
    "history-name-forges-line": "nothing is changed (as AgentScope Java); give the agents names of one line without"
    " `: ` or tags",
    "prefix-name-forges-line": "nothing is changed; give the agents names of one line without `]:`",
    "tool-key-dropped": "take the key out of the tool definition (a message given as a tool: the conversation goes"
    " in the messages), or give it as a key agentmsg maps (`_cache_control` for a prompt-cache marker)",
    "speaker-line-in-text": "nothing is changed (the history layout as AgentScope Java); if the other agent's text is"
    " not trusted, check or rewrite such lines before formatting",
}
#: the example pointer of a formatter diagnostic said of something else than a message's block
_RULE_POINTER = {
    "tool-key-dropped": "/tools/0/cache_control",
    "schema-keyword-dropped": "/tools/0/parameters/properties/x/examples",
}
for _rule, (_kind, _meaning) in PROVIDER_RULES.items():
    RULES[_rule] = (
        f"formatter diagnostic ({_kind}): {_meaning}",
        f"`agentmsg format --provider P` / `validate --provider P`: `{_RULE_POINTER.get(_rule, '/3/content/0')} [{_rule}]`",
        _RULE_FIX.get(_rule, _FIX[_kind]),
    )


def anchor(rule: str) -> str:
    """The rule's anchor in docs/rules.md (GitHub's heading ids: lowercase, punctuation but - and _ dropped)."""
    return re.sub(r"[^a-z0-9_-]", "", rule.lower())


def help_uri(rule: str) -> str:
    """The link to a rule's entry: AGENTMSG_RULES_URL (a published copy of the page) or docs/rules.md."""
    return f"{os.environ.get('AGENTMSG_RULES_URL') or RULES_PAGE}#{anchor(rule)}"


def describe(rule: str) -> tuple[str, str]:
    """(meaning, fix) of a rule; a name not in the table (a newer library's) says so."""
    meaning, _, fix = RULES.get(rule, (f"rule {rule}", "", "see the message"))
    return meaning, fix


def docs_table() -> str:
    """docs/rules.md's entries, between its rules markers: one heading per rule (sorted), its meaning, example and
    fix. ``make docs-rules`` writes them (tests/project/test_rules_page.py compares)."""
    out = []
    for rule in sorted(RULES, key=str.lower):
        meaning, example, fix = RULES[rule]
        out.append(f"## {rule}\n\n- meaning: {meaning}\n- example: {example}\n- fix: {fix}\n")
    return "\n".join(out)


def write_page(path: str) -> None:
    """Write :func:`docs_table` between the rules markers of ``path`` (docs/rules.md), the rest kept."""
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    head, rest = doc.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + BEGIN + docs_table() + END + tail)


BEGIN: Final = "<!-- rules:begin -->\n"
END: Final = "<!-- rules:end -->"
