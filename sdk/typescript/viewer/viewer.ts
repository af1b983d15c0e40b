// The agentmsg event viewer (`agentmsg serve EVENTS_FILE`): streams the events at ./events through
// @agentmsg/client and renders the reply live, one card per message: text as it arrives, thinking
// collapsed, tool calls with their arguments and results, hints, data blocks, usage. When the stream
// has ended, <body data-state="done"> and <pre id="messages-json"> holds the reduced messages (a JSON
// array in the wire format). Works under a strict Content-Security-Policy: no inline script or style,
// no eval; the DOM is built with textContent only.
import { AGUIDecoder, AiSdkDecoder, Reducer, reduceSSE, streamSSE } from "../src/index.js";
import type { Msg } from "../src/index.js";

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any
type Block = Record<string, Json>;

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;

// What one card lays out, so that a hostile or runaway stream cannot freeze the tab (Chromium took 24 s at a time to
// lay out a 50 MB text, 6.5 s for 100,000 hints in one message): a block's text or JSON shows its first TEXT_LIMIT
// characters, a card at most CARD_LIMIT characters of them and BLOCK_LIMIT blocks (those in its tool results' outputs
// included), a name, id or label its first LABEL_LIMIT characters while the card's CARD_LABELS characters of labels
// last, LABEL_MIN after; the page's finished cards, in order, share PAGE_LIMIT characters, PAGE_BLOCKS blocks and
// PAGE_LABELS characters of labels (a card past them shows its header). The page lays out the cards of the last
// PAGE_CARDS messages (20,000 one-event replies took Chromium 4-8 s and 160,000 nodes to lay out: a card that shows
// only its header is 8 nodes, so 500 of them are 4,000, as many as the page's PAGE_BLOCKS let its blocks make), the
// earlier ones behind a note that lays out PAGE_CARDS more at a time, each batch with a page's budgets; <pre
// id="messages-json"> shows the first and the last JSON_ENDS characters of the messages' JSON (4.5 MB for those
// replies). What is cut says so, with a button that shows it all; "copy" copies the whole JSON of every message.
const TEXT_LIMIT = 100_000;
const CARD_LIMIT = 1_000_000;
const BLOCK_LIMIT = 1_000;
const LABEL_LIMIT = 1_000;
const PAGE_LIMIT = 2_000_000;
const PAGE_BLOCKS = 5_000;
const LABEL_MIN = 40;
const CARD_LABELS = 100_000;
const PAGE_LABELS = 1_000_000;
const PAGE_CARDS = 500;
const JSON_ENDS = 100_000;

const count = (n: number): string => n.toLocaleString("en-US");

/** The first `n` characters of `text` (one fewer when the n-th would split a surrogate pair). */
function head(text: string, n: number): string {
  if (text.length <= n) return text;
  const code = text.charCodeAt(n - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? n - 1 : n);
}

/** The last `n` characters of `text` (one fewer when the first would split a surrogate pair). */
function tail(text: string, n: number): string {
  if (text.length <= n) return text;
  const code = text.charCodeAt(text.length - n);
  return text.slice(code >= 0xdc00 && code <= 0xdfff ? text.length - n + 1 : text.length - n);
}

/** `text` as a label shows it: its first `limit` characters, saying how many more there are. */
function label(text: string, limit = LABEL_LIMIT): string {
  if (text.length <= limit) return text;
  const shown = head(text, limit);
  return `${shown}… (${count(text.length - shown.length)} more characters)`;
}

/** A label as a card's {@link Budget} lets it show. */
class Shown {
  constructor(readonly text: string) {}
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string | null, text?: string | Shown | null, ...children: (Node | null)[]): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text instanceof Shown) node.textContent = text.text;
  else if (text !== undefined && text !== null) node.textContent = label(String(text));
  for (const c of children) if (c) node.append(c);
  return node;
}

/** The characters, blocks and characters of labels a card may still lay out. */
class Budget {
  constructor(
    public left = CARD_LIMIT,
    public blocks = BLOCK_LIMIT,
    public labels = CARD_LABELS,
  ) {}
  /** `value` (untrusted text: a name, an id, a media type...) as a label shows it: its first LABEL_LIMIT characters
   * while the labels last, LABEL_MIN after, taken from them (1,000 characters a label, uncounted, let each card's
   * 1,000 blocks lay out 3,000,000, and a stream of replies 4,000 a card however many there were). */
  label(value: unknown): Shown {
    const shown = label(String(value), Math.max(LABEL_MIN, Math.min(LABEL_LIMIT, this.labels)));
    this.labels = Math.max(0, this.labels - shown.length);
    return new Shown(shown);
  }
  /** How many of `n` characters the block may show (at most TEXT_LIMIT), taken from what is left. */
  take(n: number): number {
    const granted = Math.max(0, Math.min(n, TEXT_LIMIT, this.left));
    this.left -= granted;
    return granted;
  }
  /** `took`'s characters, blocks and labels taken from what is left (`by` -1: given back). */
  add(took: Took, by: 1 | -1 = 1): void {
    this.left -= by * took.left;
    this.blocks -= by * took.blocks;
    this.labels -= by * took.labels;
  }
}

/** What a finished card took, and from which budget. */
type Took = { from: Budget; readonly left: number; readonly blocks: number; readonly labels: number };

/** A page's budgets: the page's own, or a batch's of earlier cards. */
const pageBudget = (): Budget => new Budget(PAGE_LIMIT, PAGE_BLOCKS, PAGE_LABELS);

/** `JSON.stringify(value, null, 2)` for JSON data (what the reducer holds), written without recursion, piece by
 * piece to `write`, which says whether to go on: true when the whole text was written and `write` still said so.
 * Indentation can make the text hundreds of times its compact size (a million numbers 240 arrays deep: 2.2 MB of
 * arguments, 530 MB indented), which JSON.stringify builds in full, or throws for. */
function writeJson(value: unknown, write: (piece: string) => boolean): boolean {
  type Frame = { node: Json; keys: string[] | null; at: number; indent: string };
  const stack: Frame[] = [];
  let going = true; // what `write` said last: it is asked for pieces of a text that only grows
  const put = (s: string): void => {
    going = write(s);
  };
  const data = (v: Json): Json => (v !== null && typeof v === "object" && typeof v.toJSON === "function" ? v.toJSON() : v);
  const written = (v: Json): boolean => v !== undefined && typeof v !== "function" && typeof v !== "symbol";
  const open = (v: Json, indent: string): void => {
    v = data(v);
    if (v === null || typeof v !== "object") {
      put(written(v) ? JSON.stringify(v) : "null");
      return;
    }
    const keys = Array.isArray(v) ? null : Object.keys(v).filter((k) => written(data(v[k])));
    if ((keys ?? v).length === 0) {
      put(keys ? "{}" : "[]");
      return;
    }
    put(keys ? "{" : "[");
    stack.push({ node: v, keys, at: 0, indent });
  };
  if (!written(data(value))) return true;
  open(value, "");
  while (stack.length && going) {
    const f = stack[stack.length - 1]!;
    if (f.at === (f.keys ?? f.node).length) {
      put(`\n${f.indent}${f.keys ? "}" : "]"}`);
      stack.pop();
      continue;
    }
    const inner = `${f.indent}  `;
    put(`${f.at ? "," : ""}\n${inner}`);
    const key = f.keys ? f.keys[f.at]! : null;
    if (key !== null) put(`${JSON.stringify(key)}: `);
    f.at++;
    open(key !== null ? f.node[key] : f.node[f.at - 1], inner);
  }
  return !stack.length && going;
}

/** {@link writeJson}'s text, stopping once past `budget` characters: the whole text (`complete`), or its first
 * `budget` characters. */
function prettyJson(value: unknown, budget = Infinity): { text: string; complete: boolean } {
  const parts: string[] = [];
  let size = 0;
  const complete = writeJson(value, (s) => {
    parts.push(s);
    size += s.length;
    return size <= budget;
  });
  const text = parts.join("");
  return { text: complete ? text : head(text, budget), complete };
}

/** How long a value's indented JSON may be, `compact` characters without indentation: past it (16 times that, and
 * 1,024), the whole is shown compact. */
const indentedLimit = (compact: number): number => Math.min(16 * compact + 1024, 1 << 28);

/** The whole of `value` as JSON: indented, unless that would be past {@link indentedLimit} (then compact). */
function wholeJson(value: unknown): string {
  const compact = JSON.stringify(value) ?? "";
  const pretty = prettyJson(value, indentedLimit(compact.length));
  return pretty.complete ? pretty.text : compact;
}

/** `tag.cls` holding `text`, or what the card's budget lets it show of it followed by a note saying how much that is
 * and a button that shows it all (`whole` makes it when asked for; `of` says how long that is). */
function longText<K extends keyof HTMLElementTagNameMap>(budget: Budget, tag: K, cls: string, text: string, whole?: { text: () => string; of: string }): HTMLElement {
  const shown = head(text, budget.take(text.length));
  const node = el(tag, cls);
  node.textContent = shown;
  if (shown.length === text.length && !whole) return node;
  const more = el("button", null, "show all");
  more.type = "button";
  const note = el("div", "cut muted", `shown: the first ${count(shown.length)} characters ${whole?.of ?? `of ${count(text.length)}`} `, more);
  more.addEventListener("click", () => {
    node.textContent = whole ? whole.text() : text;
    note.remove();
  });
  return el("div", "long", null, node, note);
}

/** `value` as indented JSON in `pre.cls`, cut as {@link longText} cuts. */
function jsonView(budget: Budget, cls: string, value: unknown): HTMLElement {
  const { text, complete } = prettyJson(value, Math.min(TEXT_LIMIT, budget.left));
  if (complete) return longText(budget, "pre", cls, text);
  const of = `(the whole is ${count((JSON.stringify(value) ?? "").length)} without indentation)`;
  return longText(budget, "pre", cls, text, { text: () => wholeJson(value), of });
}

/** `value` as a label shows it: a string as it is, anything else as JSON (its first LABEL_LIMIT characters). */
function jsonLabel(value: unknown): string {
  if (typeof value === "string") return value;
  const { text, complete } = prettyJson(value, LABEL_LIMIT);
  return complete ? text : `${text}… (cut)`;
}

/** A media type as a data: URL may carry it: type/subtype and parameters of RFC 9110 tokens (anything else, which
 * could end the media type early and put its own text in the URL's place, is application/octet-stream). */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(?:\\s*;\\s*${TOKEN}=${TOKEN})*$`);
const urlMediaType = (mediaType: string): string => (MEDIA_TYPE.test(mediaType) && !/;\s*base64=/i.test(mediaType) ? mediaType : "application/octet-stream");

function sourceView(source: Json, type: string, budget: Budget): Node {
  if (source?.type === "base64") {
    const given = String(source.media_type ?? "application/octet-stream");
    const mediaType = urlMediaType(given);
    const data = String(source.data ?? "");
    const url = `data:${mediaType};base64,${data}`;
    const bytes = Math.floor((data.length * 3) / 4) - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);
    const box = el("div", "media");
    if (type === "image" || mediaType.toLowerCase().startsWith("image/")) {
      const img = el("img");
      img.src = url;
      img.alt = label(`${given} (${bytes} bytes)`);
      box.append(img);
    }
    const link = el("a", null, budget.label(`${given}, ${bytes} bytes${mediaType === given ? "" : ` (downloaded as ${mediaType}: not a media type a URL can carry)`}`));
    link.href = url;
    link.download = "";
    box.append(link);
    return box;
  }
  if (source?.type === "url") return el("div", "media", null, el("span", "muted", "url "), el("code", null, budget.label(source.url)));
  return el("pre", "raw", budget.label(jsonLabel(source)));
}

function blockView(b: Block, budget: Budget): HTMLElement {
  switch (b.type) {
    case "text":
      return longText(budget, "div", "block text", String(b.text ?? ""));
    case "thinking": {
      const meta = b.metadata && typeof b.metadata === "object" ? b.metadata : {};
      // a carrier (docs/streams.md): provider data kept in its place, not reasoning
      const kept = meta.providerBlock;
      if (kept && typeof kept === "object" && !Array.isArray(kept)) {
        const kind = typeof kept.type === "string" ? kept.type : (Object.keys(kept).find((k) => k !== "thoughtSignature") ?? "block");
        return el("details", "block provider-block", null, el("summary", null, budget.label(`${String(meta.provider ?? "provider")} ran a tool: ${kind}`)), jsonView(budget, "raw", kept));
      }
      if (Array.isArray(meta.citations)) {
        return el("details", "block citations", null, el("summary", null, `citations of the text above · ${meta.citations.length}`), jsonView(budget, "raw", meta.citations));
      }
      const label = ["thinking", meta.redacted ? "(redacted)" : null, meta.signature ? "(signed)" : null].filter(Boolean).join(" ");
      const thought = String(b.thinking ?? "");
      return el("details", "block thinking", null, el("summary", null, `${label} · ${thought.length} chars`), longText(budget, "div", "thought", thought));
    }
    case "tool_use": {
      const args = b.metadata?.argumentsError ? longText(budget, "pre", "args error", `${b.content ?? ""}\n${b.metadata.argumentsError}`) : jsonView(budget, "args", b.input);
      return el("div", "block tool-use", null, el("div", "head", null, el("span", "tag", "tool call"), el("strong", null, budget.label(b.name || "(unnamed)")), el("code", "muted", budget.label(b.id)), el("span", `state state-${b.state}`, budget.label(b.state))), args);
    }
    case "tool_result": {
      const out = el("div", "outputs");
      blocksInto(out, Array.isArray(b.output) ? b.output : [], budget);
      return el("div", "block tool-result", null, el("div", "head", null, el("span", "tag", "tool result"), el("strong", null, budget.label(b.name ?? "")), el("code", "muted", budget.label(b.id)), el("span", `state state-${b.state}`, budget.label(b.state))), out);
    }
    case "hint":
      return el("div", "block hint", null, el("span", "tag", "hint"), longText(budget, "span", "", String(b.hint ?? "")), b.source ? el("span", "muted", budget.label(` (${jsonLabel(b.source)})`)) : null);
    case "data":
    case "image":
    case "audio":
    case "video":
      return el("div", `block media-block ${b.type}`, null, el("span", "tag", budget.label(b.type + (b.name ? `: ${b.name}` : ""))), sourceView(b.source, b.type, budget));
    default:
      return jsonView(budget, "block raw", b);
  }
}

/** `blocks` into `box`: as many as the card's budget goes (each block, and each in a tool result's output, takes one of
 * its BLOCK_LIMIT: a list cut at 1,000 of its own let 1,000 tool results of 1,000 blocks each lay out a million), then
 * a note saying how many more there are and a button that shows them. */
function blocksInto(box: HTMLElement, blocks: Block[], budget: Budget): void {
  let shown = 0;
  while (shown < blocks.length && budget.blocks > 0 && budget.left > 0) {
    budget.blocks--;
    box.append(blockView(blocks[shown++]!, budget));
  }
  if (shown === blocks.length) return;
  const more = el("button", null, "show them");
  more.type = "button";
  const note = el("div", "cut muted", `${count(blocks.length - shown)} more blocks (${count(blocks.length)} in all) `, more);
  more.addEventListener("click", () => {
    // all of this list; in their outputs BLOCK_LIMIT blocks (each block's text is still cut at TEXT_LIMIT, with its
    // own button)
    const rest = new Budget(Infinity);
    note.replaceWith(fragment(blocks.slice(shown).map((b) => blockView(b, rest))));
  });
  box.append(note);
}

function usageText(u: Json): string {
  if (!u) return "";
  const parts = [["in", u.inputTokens], ["out", u.outputTokens], ["cached", u.cachedTokens], ["total", u.totalTokens]].filter(([, v]) => v !== undefined && v !== null).map(([k, v]) => `${k} ${v}`);
  if (u.time !== undefined && u.time !== null) parts.push(`${u.time}s`);
  return parts.length ? `tokens: ${parts.join(" · ")}` : "";
}

/** What the page's finished cards may still lay out (reset when the page builds them again; a card that leaves the
 * page gives back what it took). */
let page = pageBudget();
/** What each finished card took, and from which budget. */
const taken = new WeakMap<HTMLElement, Took>();

/** The card of `m`, taking what it lays out from `from` (the live card, built again at each render, takes nothing:
 * it gets what `page` has left). */
function card(m: Msg, from: Budget | null): HTMLElement {
  const live = !from;
  const of = from ?? page;
  const meta = (m.metadata ?? {}) as Record<string, Json>;
  const budget = new Budget(Math.min(CARD_LIMIT, of.left), Math.min(BLOCK_LIMIT, of.blocks), Math.min(CARD_LABELS, of.labels));
  const [left, blocks, labels] = [budget.left, budget.blocks, budget.labels];
  const head = el("header", null, null,
    el("strong", null, budget.label(m.name ?? "assistant")),
    el("code", "muted", budget.label(m.id)),
    m.timestamp ? el("span", "muted", budget.label(m.timestamp)) : null,
    live ? el("span", "badge live", "streaming") : null,
    meta.agentscope_generate_reason ? el("span", "badge", budget.label(meta.agentscope_generate_reason)) : null);
  const body = el("div", "blocks");
  blocksInto(body, m.content as Block[], budget);
  const foot = el("footer", "muted", budget.label(usageText(m.usage)));
  if (Array.isArray(meta.agentmsg_reduce_errors)) foot.append(el("div", "error", budget.label(`dropped (invalid): ${meta.agentmsg_reduce_errors.join("; ")}`)));
  const node = el("article", live ? "card live" : "card", null, head, body, foot);
  if (from) {
    const took = { from, left: left - budget.left, blocks: blocks - budget.blocks, labels: labels - budget.labels };
    from.add(took);
    taken.set(node, took);
  }
  return node;
}

/** The page's budgets are its last PAGE_CARDS cards': a card of theirs that is no longer one of them once `coming`
 * more cards are added (the page keeps more, asked for while streaming) is now an earlier batch's, and what it took is
 * that batch's (the card before it, or a new batch's): without this, after "show 500 more" the page's budgets went to
 * 1,000 cards, and the newest showed only their headers once the 1,000 had taken them. The cards that take from `page`
 * are the last in `done` (a render appends them, "show them" puts a batch's before them). */
function settle(coming: number): void {
  const out = done.length + coming - PAGE_CARDS; // the cards before done[out] leave the page's last PAGE_CARDS
  let i = out;
  while (i > 0 && taken.get(done[i - 1]!)?.from === page) i--;
  for (; i < out; i++) {
    const took = taken.get(done[i]!)!;
    const to = (i && taken.get(done[i - 1]!)?.from) || pageBudget();
    page.add(took, -1);
    to.add(took);
    took.from = to;
  }
}

/** `c` out of the page, giving back what it took. */
function drop(c: HTMLElement): void {
  const took = taken.get(c);
  if (took) took.from.add(took, -1);
  c.remove();
}

const cards = $("cards");
const status = $("status");
const done: HTMLElement[] = []; // the cards in the page, in order (before the live card)
let first = 0; // the message whose card is done[0] (the earlier ones have none)
let keep = PAGE_CARDS; // how many finished cards the page keeps: PAGE_CARDS, and as many more as were asked for
let final: Msg[] | null = null; // every message, once the stream has ended
let liveCard: HTMLElement | null = null;
let restarted = false; // the cards in the page are a dropped reducer's
let reducer: Reducer | null = null;
let events = 0;
let reconnects = 0;
let restarts = 0;
let pending = false;
let ended = false;

let cost = 0; // how long the last render took (ms): renders are spaced so they take at most ~1/5 of the time

function render(): void {
  pending = false;
  if (!reducer || ended) return;
  const started = performance.now();
  const finished = reducer.messages();
  const snap = reducer.snapshot();
  if (restarted) {
    cards.replaceChildren();
    liveCard = null;
    restarted = false;
  }
  liveCard?.remove();
  // Only what is new goes in, one node at a time (replaceChildren(...cards) rebuilt the page at each render and, past
  // about 125,000 cards, the most arguments a call takes, threw), and the oldest cards go out past `keep`, giving back
  // what they took from the page's budgets; a message whose card would go out at once gets none. Each card is laid out
  // once the card it pushes out of the page's last PAGE_CARDS has left the page's budgets, as if each render added one:
  // the same events make the same page however they are batched into renders (the 200 cards of one render, laid out
  // before settling, had only what the 500 before them had left, and the newest showed only their headers).
  const start = Math.max(first + done.length, finished.length - keep);
  for (const c of done.splice(0, Math.max(0, done.length + finished.length - start - keep))) drop(c);
  first = start - done.length;
  const added: HTMLElement[] = [];
  for (const m of finished.slice(start)) {
    settle(1);
    const c = card(m, page);
    done.push(c);
    added.push(c);
  }
  cards.append(fragment(added));
  noteEarlier();
  liveCard = snap ? card(snap, null) : null;
  if (liveCard) cards.append(liveCard);
  status.textContent = `${events} events · ${finished.length} message(s)${snap ? " · streaming" : ""}${reconnects ? ` · ${reconnects} reconnect(s)` : ""}${restarts ? ` · restarted ${restarts} time(s)` : ""}`;
  document.body.dataset.events = String(events);
  cost = performance.now() - started;
}

const earlierText = document.createTextNode("");
const earlierButton = el("button", null, "show them");
earlierButton.type = "button";
/** Before the first card: how many earlier messages have no card in the page, and a button that lays out the
 * PAGE_CARDS before the first, sharing a page's budgets. */
const earlier = el("div", "cut muted earlier", null, earlierText, earlierButton);

function noteEarlier(): void {
  if (!first) {
    earlier.remove();
    return;
  }
  earlierText.textContent = `${count(first)} earlier messages not shown `;
  earlierButton.textContent = first > PAGE_CARDS ? `show ${count(PAGE_CARDS)} more` : "show them";
  if (cards.firstChild !== earlier) cards.prepend(earlier);
}

/** The cards of the `n` messages of `all` before the first card's, sharing `budget`: now the first in `done` (the
 * caller puts them in the page). */
function cardsBefore(all: Msg[], n: number, budget: Budget): HTMLElement[] {
  const from = first - n;
  const added = all.slice(from, first).map((m) => card(m, budget));
  done.unshift(...added);
  first = from;
  return added;
}

earlierButton.addEventListener("click", () => {
  const added = cardsBefore(final ?? reducer?.messages() ?? [], Math.min(PAGE_CARDS, first), pageBudget());
  earlier.after(fragment(added));
  keep += added.length;
  noteEarlier();
});

let messagesJson: (() => string) | null = null; // what "copy" copies: every message's JSON (built when asked for)

/** The length of `wholeJson(messages)` and its last `n` characters (or more), when it is indented: written in pieces,
 * of which only the last `n` characters' or so are kept (the whole is built for "show all" and "copy" only); null when
 * it is not indented. */
function jsonEnd(messages: Msg[], n: number): { length: number; end: string } | null {
  let compact = 1 + messages.length;
  for (const m of messages) compact += (JSON.stringify(m) ?? "null").length;
  const limit = indentedLimit(compact);
  let length = 0;
  let last = ""; // the run of pieces before `parts`, once one reached n characters
  let parts: string[] = [];
  let size = 0;
  const indented = writeJson(messages, (s) => {
    length += s.length;
    parts.push(s);
    size += s.length;
    if (size >= n) [last, parts, size] = [parts.join(""), [], 0];
    return length <= limit;
  });
  return indented ? { length, end: last + parts.join("") } : null;
}

/** The messages' JSON in <pre id="messages-json">: its first and last JSON_ENDS characters, with a note between them
 * saying how many are left out and a button that shows them (the whole JSON is built then, or for "copy"). */
function showJson(messages: Msg[]): void {
  let whole: string | null = null;
  messagesJson = () => (whole ??= wholeJson(messages));
  const box = $("messages-json");
  const found = jsonEnd(messages, JSON_ENDS);
  if (!found || found.length <= 2 * JSON_ENDS) {
    const text = messagesJson();
    if (text.length <= 2 * JSON_ENDS) {
      box.textContent = text;
      return;
    }
  }
  const length = found?.length ?? messagesJson().length;
  const start = found ? prettyJson(messages, JSON_ENDS).text : head(messagesJson(), JSON_ENDS);
  const end = tail(found?.end ?? messagesJson(), JSON_ENDS);
  const more = el("button", null, "show all");
  more.type = "button";
  more.addEventListener("click", () => (box.textContent = messagesJson?.() ?? ""));
  const left = length - start.length - end.length;
  box.replaceChildren(start, el("div", "cut muted", `… ${count(left)} characters not shown (${count(length)} in all) `, more), end);
}
/** `nodes` in one fragment (appended one by one: a call with each as an argument fails past ~125,000). */
function fragment(nodes: Iterable<Node>): DocumentFragment {
  const out = document.createDocumentFragment();
  for (const node of nodes) out.appendChild(node);
  return out;
}

function schedule(): void {
  if (!pending) {
    pending = true;
    setTimeout(render, Math.max(40, 4 * cost));
  }
}

/** The page's protocol: `?protocol=ag-ui` reads the endpoint's AG-UI stream (what an AG-UI producer sends), decoded
 * into AgentEvents by @agentmsg/client's AGUIDecoder; `?protocol=ai-sdk` its Vercel AI SDK UI message stream (what
 * useChat reads), decoded by AiSdkDecoder; otherwise agentmsg's own events. */
const asked = new URLSearchParams(location.search).get("protocol");
const protocol = asked === "ag-ui" || asked === "ai-sdk" ? asked : "agentscope";

/** AG-UI or the UI message stream: no end event (a closed connection ends it, so there is no resume; the UI message
 * stream's `data: [DONE]` is its last frame) and each event's data is a protocol event, whose AgentEvents the reducer
 * folds. What the decoder could not keep is counted as notes. */
async function readProtocol(name: "ag-ui" | "ai-sdk"): Promise<Msg[]> {
  const r = new Reducer();
  const decoder = name === "ag-ui" ? new AGUIDecoder() : new AiSdkDecoder();
  reducer = r;
  const url = new URL(`events?protocol=${name}`, document.baseURI);
  for await (const sse of streamSSE(url, { endEvent: null, errorEvent: null, idleTimeout: 45_000 })) {
    if (name === "ai-sdk" && sse.data === "[DONE]") break;
    events++;
    if (sse.problem) {
      r.feedUnreadable(sse.problem.message, sse.problem.rule);
    } else {
      let data: Json;
      try {
        data = JSON.parse(sse.data);
      } catch {
        r.feedUnreadable(`a ${name} event that is not JSON`, "json");
        continue;
      }
      for (const e of decoder.feed(data)) r.feed(e);
    }
    schedule();
  }
  for (const e of decoder.close()) r.feed(e);
  document.body.dataset.notes = String(decoder.notes.length);
  return r.finish();
}

async function main(): Promise<void> {
  document.body.dataset.state = "streaming";
  document.body.dataset.events = "0";
  document.body.dataset.reconnects = "0";
  document.body.dataset.restarts = "0";
  document.body.dataset.protocol = protocol;
  // agentmsg's own events, whatever protocol `agentmsg serve --protocol` makes the endpoint's default.
  const messages = protocol !== "agentscope" ? await readProtocol(protocol) : await reduceSSE(new URL("events?protocol=agentscope", document.baseURI), {
    retry: { initialDelay: 200, maxDelay: 5000 },
    // The endpoint sends a keepalive after 15 s of silence: a connection silent three times that long is dead
    // (a laptop's sleep, a network change), and the page resumes on a new one.
    idleTimeout: 45_000,
    onEvent: (_e, r) => {
      reducer = r;
      events++;
      schedule();
    },
    onRetry: ({ attempt, delay, lastEventId }) => {
      reconnects++;
      document.body.dataset.reconnects = String(reconnects);
      status.textContent = `reconnecting after event ${lastEventId || "(none)"} in ${delay} ms (attempt ${attempt})`;
    },
    // The server no longer holds the events after the last one seen: the stream starts over with a
    // fresh reducer, and the page shows what that one builds.
    onRestart: ({ lastEventId, reducer: fresh }) => {
      restarts++;
      reducer = fresh;
      done.length = 0;
      first = 0;
      keep = PAGE_CARDS;
      page = pageBudget();
      restarted = true;
      document.body.dataset.restarts = String(restarts);
      status.textContent = `the server could not resume after event ${lastEventId}: starting over`;
      schedule();
    },
  });
  ended = true;
  final = messages;
  document.body.dataset.events = String(events);
  page = pageBudget();
  first = messages.length;
  done.length = 0;
  // the last PAGE_CARDS with the page's budgets, each PAGE_CARDS before them (asked for) with a batch's, as "show
  // them" lays them out
  for (let budget = page; first && done.length < keep; budget = pageBudget()) cardsBefore(messages, Math.min(PAGE_CARDS, first, keep - done.length), budget);
  cards.replaceChildren(fragment(done));
  noteEarlier();
  const problems = reducer ? (reducer as Reducer).problems.length : 0;
  status.textContent = `done · ${events} events · ${messages.length} message(s)${reconnects ? ` · ${reconnects} reconnect(s)` : ""}${restarts ? ` · restarted ${restarts} time(s)` : ""}${problems ? ` · ${problems} problem(s) fixed by the tolerant rules` : ""}`;
  showJson(messages);
  $<HTMLDetailsElement>("json-box").hidden = false;
  document.body.dataset.state = "done";
}

$("copy").addEventListener("click", () => {
  navigator.clipboard?.writeText(messagesJson?.() ?? "").then(
    () => ($("copy").textContent = "copied"),
    () => window.getSelection()?.selectAllChildren($("messages-json")),
  );
});

main().catch((err: unknown) => {
  document.body.dataset.state = "error";
  status.textContent = `error: ${err instanceof Error ? err.message : String(err)}`;
  status.classList.add("error");
});
