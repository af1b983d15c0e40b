package dev.agentmsg.conformance;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.databind.JsonNode;
import io.agentscope.core.event.AgentEndEvent;
import io.agentscope.core.event.AgentEvent;
import io.agentscope.core.event.AgentEventType;
import io.agentscope.core.event.AgentResultEvent;
import io.agentscope.core.event.AgentStartEvent;
import io.agentscope.core.event.AllToolsDeniedEvent;
import io.agentscope.core.event.ConfirmResult;
import io.agentscope.core.event.CustomEvent;
import io.agentscope.core.event.DataBlockDeltaEvent;
import io.agentscope.core.event.DataBlockEndEvent;
import io.agentscope.core.event.DataBlockStartEvent;
import io.agentscope.core.event.ExceedMaxItersEvent;
import io.agentscope.core.event.ExternalExecutionResultEvent;
import io.agentscope.core.event.HintBlockEvent;
import io.agentscope.core.event.ModelCallEndEvent;
import io.agentscope.core.event.ModelCallStartEvent;
import io.agentscope.core.event.RequestStopEvent;
import io.agentscope.core.event.RequireExternalExecutionEvent;
import io.agentscope.core.event.RequireUserConfirmEvent;
import io.agentscope.core.event.SubagentExposedEvent;
import io.agentscope.core.event.TextBlockDeltaEvent;
import io.agentscope.core.event.TextBlockEndEvent;
import io.agentscope.core.event.TextBlockStartEvent;
import io.agentscope.core.event.ThinkingBlockDeltaEvent;
import io.agentscope.core.event.ThinkingBlockEndEvent;
import io.agentscope.core.event.ThinkingBlockStartEvent;
import io.agentscope.core.event.ToolCallDeltaEvent;
import io.agentscope.core.event.ToolCallEndEvent;
import io.agentscope.core.event.ToolCallStartEvent;
import io.agentscope.core.event.ToolResultDataDeltaEvent;
import io.agentscope.core.event.ToolResultEndEvent;
import io.agentscope.core.event.ToolResultStartEvent;
import io.agentscope.core.event.ToolResultTextDeltaEvent;
import io.agentscope.core.event.UserConfirmResultEvent;
import io.agentscope.core.message.AssistantMessage;
import io.agentscope.core.message.AudioBlock;
import io.agentscope.core.message.Base64Source;
import io.agentscope.core.message.ContentBlock;
import io.agentscope.core.message.DataBlock;
import io.agentscope.core.message.GenerateReason;
import io.agentscope.core.message.HintBlock;
import io.agentscope.core.message.ImageBlock;
import io.agentscope.core.message.MessageMetadataKeys;
import io.agentscope.core.message.Msg;
import io.agentscope.core.message.MsgRole;
import io.agentscope.core.message.Source;
import io.agentscope.core.message.SystemMessage;
import io.agentscope.core.message.TextBlock;
import io.agentscope.core.message.ThinkingBlock;
import io.agentscope.core.message.ToolCallState;
import io.agentscope.core.message.ToolResultBlock;
import io.agentscope.core.message.ToolResultMessage;
import io.agentscope.core.message.ToolResultState;
import io.agentscope.core.message.ToolUseBlock;
import io.agentscope.core.message.URLSource;
import io.agentscope.core.message.UserMessage;
import io.agentscope.core.message.VideoBlock;
import io.agentscope.core.model.ChatUsage;
import io.agentscope.core.permission.PermissionBehavior;
import io.agentscope.core.permission.PermissionRule;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Mode {@code build}: messages, blocks and events of every kind, made with AgentScope's own builders and
 * constructors, serialized with AgentScope's codec.
 *
 * <p>OUT_DIR/built-msg.json, built-content-block.json, built-event.json (also built-source.json,
 * built-chat-usage.json): {@code {"descriptive name": <JSON exactly as Java wrote it>}}. In built-event.json the
 * plain key of each event type is the type name (one per AgentEvent subtype); variants are named
 * "TYPE:variant". Values are raw codec output, so the event "type" key appears twice, as Java writes it.
 *
 * <p>OUT_DIR/built-edge-KIND.json: same format, deliberate null/empty probes (builders given nothing, null
 * maps, null-valued map entries, factories that leave id/name null): how Java handles missing values. These
 * are not realistic output and need not validate against agentmsg's schemas.
 *
 * <p>OUT_DIR/built-KIND.raw.json: the same realistic values as {@code {"name": "<exact text Java wrote, as a JSON
 * string>"}}, for byte-for-byte comparisons.
 *
 * <p>OUT_DIR/built-readback.json: each built value (edge probes as "edge:NAME") read back with the same codec:
 * {@code {"kind": {"name": {"read": bool, "same": bool, "error": ...}}}} where "same" means Java wrote the
 * read-back value identically (ignoring key order). OUT_DIR/build-errors.json: builders that threw, and event
 * types not covered.
 */
final class Build {
  private Build() {}

  // Realistic ids as AgentScope makes them: 32 hex characters (UUID without dashes).
  static final String SESSION = "5d1f0c7e9a2b4c6d8e0f1a2b3c4d5e6f";
  static final String AGENT_REPLY = "aa41c0f2b7d94e3c9f1e2d3c4b5a6978";
  static final String MODEL_REPLY = "0c9e8d7f6a5b4c3d2e1f0a9b8c7d6e5f";
  static final String ACT_REPLY = "f1e2d3c4b5a697887766554433221100";
  static final String CALL_ID = "call_9f3b2c1a";
  static final String TIMESTAMP = "2025-01-01 12:00:00.000";
  static final String CREATED_AT = "2026-11-22T10:34:38.563248392Z";

  interface Maker {
    Object make() throws Exception;
  }

  /**
   * One kind: name -> raw JSON as AgentScope wrote it. {@link #add} is for realistic values (built-KIND.json);
   * {@link #edge} for deliberate null/empty probes that show how Java handles missing values
   * (built-edge-KIND.json); those need not match agentmsg's schemas.
   */
  static final class Section {
    final String kind;
    final Class<?> readType;
    final Json.RawObject out = new Json.RawObject();
    final Json.RawObject rawOut = new Json.RawObject();
    final Json.RawObject edgeOut = new Json.RawObject();
    final Map<String, String> written = new LinkedHashMap<>();
    final Map<String, String> edgeWritten = new LinkedHashMap<>();
    final Map<String, Object> values = new LinkedHashMap<>();

    Section(String kind, Class<?> readType) {
      this.kind = kind;
      this.readType = readType;
    }

    <T> T add(String name, Maker maker) {
      return put(name, maker, out, written, true);
    }

    void edge(String name, Maker maker) {
      put(name, maker, edgeOut, edgeWritten, false);
    }

    private <T> T put(String name, Maker maker, Json.RawObject file, Map<String, String> seen, boolean keep) {
      try {
        Object value = maker.make();
        String json = Json.CODEC.toJson(value);
        Json.tree(json);
        if (seen.containsKey(name)) throw new IllegalStateException("duplicate name " + name);
        file.putRaw(name, json);
        if (keep) rawOut.putRaw(name, Json.quote(json));
        seen.put(name, json);
        if (keep) values.put(name, value);
        @SuppressWarnings("unchecked")
        T t = (T) value;
        return t;
      } catch (Throwable e) {
        ERRORS.put(kind + ":" + (keep ? "" : "edge:") + name, Json.describe(e));
        return null;
      }
    }
  }

  static final Map<String, Object> ERRORS = new LinkedHashMap<>();

  static void run(Path out) throws IOException {
    Files.createDirectories(out);
    ERRORS.clear();
    Section sources = new Section("source", Source.class);
    Section usages = new Section("chat-usage", ChatUsage.class);
    Section blocks = new Section("content-block", ContentBlock.class);
    Section msgs = new Section("msg", Msg.class);
    Section events = new Section("event", AgentEvent.class);

    // ---- sources ----
    URLSource url = sources.add("url", () -> new URLSource("https://example.com/images/cat.png"));
    URLSource urlMime = sources.add("url-mime-type", () -> new URLSource("https://example.com/report", "application/pdf"));
    sources.add("url-builder", () -> URLSource.builder().url("https://example.com/a.jpg").mimeType("image/jpeg").build());
    URLSource localPath = sources.add("url-local-path", () -> new URLSource("./images/cat.png"));
    sources.add("url-file-uri", () -> new URLSource("file:///tmp/cat.png"));
    Base64Source png = sources.add("base64", () -> new Base64Source("image/png", "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="));
    Base64Source pdf = sources.add("base64-builder", () -> Base64Source.builder().mediaType("application/pdf").data("JVBERi0xLjQK").build());

    // ---- usage ----
    ChatUsage usage = usages.add("builder", () -> ChatUsage.builder().inputTokens(1200).outputTokens(350).cachedTokens(800).time(2.75).build());
    usages.add("constructor-3", () -> new ChatUsage(10, 20, 1.5));
    usages.add("constructor-4", () -> new ChatUsage(10, 20, 3, 1.5));
    usages.add("builder-defaults", () -> ChatUsage.builder().build());

    // ---- content blocks ----
    TextBlock text = blocks.add("text", () -> TextBlock.builder().text("The weather in Paris is sunny, 25°C.").build());
    blocks.add("text-multiline-unicode", () -> TextBlock.builder().text("Line 1\nLine 2 — 你好 😀 \"quoted\" \\ back\tslash").build());
    blocks.add("text-empty", () -> TextBlock.builder().text("").build());
    blocks.edge("text-null", () -> TextBlock.builder().build());
    ThinkingBlock thinking = blocks.add("thinking", () -> ThinkingBlock.builder().thinking("The user wants the weather; call get_weather.").build());
    blocks.add("thinking-empty-metadata", () -> ThinkingBlock.builder().thinking("hmm").metadata(Map.of()).build());
    blocks.add("thinking-metadata-signature", () -> ThinkingBlock.builder().thinking("Let me check.").metadata(ordered("signature", "EqQBCkYIBRgCKkDx2…", "provider", "anthropic")).build());
    blocks.add("thinking-metadata-reasoning-details", () -> ThinkingBlock.builder().thinking("Plan the call.").metadata(Map.of(ThinkingBlock.METADATA_REASONING_DETAILS, List.of(ordered("type", "reasoning.text", "text", "Plan the call.", "format", "anthropic-claude-v1", "index", 0)))).build());
    blocks.edge("thinking-metadata-null-value", () -> { Map<String, Object> m = new HashMap<>(); m.put("signature", null); m.put("kept", 1); return ThinkingBlock.builder().thinking("x").metadata(m).build(); });
    blocks.add("thinking-redacted", () -> ThinkingBlock.builder().thinking("").metadata(ordered("redacted", true, "redactedData", "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP")).build());
    ImageBlock imageUrl = blocks.add("image-url", () -> ImageBlock.builder().source(url).build());
    blocks.add("image-url-mime-type", () -> ImageBlock.builder().source(new URLSource("https://example.com/i", "image/webp")).build());
    blocks.add("image-url-sizing", () -> ImageBlock.builder().source(url).minPixels(3136).maxPixels(1003520).build());
    blocks.add("image-base64", () -> ImageBlock.builder().source(png).build());
    blocks.add("image-base64-sizing-min-only", () -> ImageBlock.builder().source(png).minPixels(3136).build());
    blocks.add("image-local-path", () -> new ImageBlock(localPath));
    blocks.add("image-constructor", () -> new ImageBlock(url));
    blocks.add("audio-url", () -> AudioBlock.builder().source(new URLSource("https://example.com/audio/hello.mp3")).build());
    blocks.add("audio-base64", () -> AudioBlock.builder().source(new Base64Source("audio/wav", "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=")).build());
    blocks.add("audio-constructor", () -> new AudioBlock(new URLSource("https://example.com/a.wav", "audio/wav")));
    blocks.add("video-url", () -> VideoBlock.builder().source(new URLSource("https://example.com/video/clip.mp4")).build());
    blocks.add("video-url-sizing", () -> VideoBlock.builder().source(new URLSource("https://example.com/video/clip.mp4")).fps(2.0f).maxFrames(64).minPixels(3136).maxPixels(602112).totalPixels(20971520).build());
    blocks.add("video-fractional-fps", () -> VideoBlock.builder().source(new URLSource("https://example.com/v.mp4")).fps(29.97f).build());
    blocks.add("video-base64", () -> VideoBlock.builder().source(new Base64Source("video/mp4", "AAAAIGZ0eXBpc29t")).build());
    blocks.add("video-constructor", () -> new VideoBlock(new URLSource("https://example.com/v.webm")));
    blocks.add("data-base64-named", () -> DataBlock.builder().source(pdf).name("report.pdf").build());
    blocks.add("data-url-mime-type", () -> DataBlock.builder().source(urlMime).name("report").build());
    blocks.add("data-url-no-mime-type", () -> DataBlock.builder().source(new URLSource("https://example.com/data.csv")).build());
    blocks.add("data-explicit-id", () -> DataBlock.builder().id("data_1").source(png).name("pixel.png").build());
    blocks.add("data-empty-id", () -> DataBlock.builder().id("").source(png).build());
    blocks.add("data-image", () -> DataBlock.builder().source(png).build());
    ToolUseBlock call =
        blocks.add("tool-use-full", () -> ToolUseBlock.builder().id(CALL_ID).name("get_weather").input(ordered("city", "Paris", "days", 3, "units", Map.of("temperature", "celsius")))
            .content("{\"city\":\"Paris\",\"days\":3,\"units\":{\"temperature\":\"celsius\"}}").metadata(Map.of(ToolUseBlock.METADATA_THOUGHT_SIGNATURE, "CiQBjz1rX8Wq")).state(ToolCallState.PENDING).build());
    blocks.add("tool-use-defaults", () -> ToolUseBlock.builder().id("call_2").name("list_files").build());
    blocks.edge("tool-use-nothing-set", () -> ToolUseBlock.builder().build());
    for (ToolCallState s : ToolCallState.values())
      blocks.add("tool-use-state-" + s.getValue(), () -> ToolUseBlock.builder().id("call_s").name("f").input(Map.of("x", 1)).state(s).build());
    blocks.add("tool-use-constructor-3", () -> new ToolUseBlock("call_3", "search", Map.of("query", "agentscope")));
    blocks.add("tool-use-constructor-4-metadata", () -> new ToolUseBlock("call_4", "search", Map.of("query", "agentscope"), Map.of("source", "mcp")));
    blocks.add("tool-use-constructor-5-content", () -> new ToolUseBlock("call_5", "search", Map.of(), "{\"query\":", Map.of()));
    blocks.add("tool-use-constructor-6-state", () -> new ToolUseBlock("call_6", "search", Map.of("q", "x"), "{\"q\":\"x\"}", Map.of(), ToolCallState.FINISHED));
    blocks.edge("tool-use-null-maps", () -> new ToolUseBlock("call_7", "f", null, null, null, null));
    blocks.edge("tool-use-input-null-value", () -> { Map<String, Object> in = new HashMap<>(); in.put("a", null); in.put("b", 1); return ToolUseBlock.builder().id("call_8").name("f").input(in).build(); });
    blocks.add("tool-use-gemini-bytes-signature", () -> ToolUseBlock.builder().id("call_9").name("f").metadata(Map.of(ToolUseBlock.METADATA_THOUGHT_SIGNATURE, new byte[] {1, 2, 3, (byte) 0xff})).build());
    blocks.add("tool-use-fragment", () -> ToolUseBlock.builder().id("").name("__fragment__").content("{\"x\":").build());
    ToolResultBlock result =
        blocks.add("tool-result-full", () -> ToolResultBlock.builder().id(CALL_ID).name("get_weather")
            .output(List.of(TextBlock.builder().text("Sunny, 25°C").build(), ImageBlock.builder().source(url).build()))
            .metadata(ordered("elapsed_ms", 412, ToolResultBlock.METADATA_SUSPENDED, false)).state(ToolResultState.SUCCESS).build());
    blocks.add("tool-result-defaults", () -> ToolResultBlock.builder().id("call_2").name("list_files").build());
    blocks.edge("tool-result-nothing-set", () -> ToolResultBlock.builder().build());
    for (ToolResultState s : ToolResultState.values())
      blocks.add("tool-result-state-" + s.getValue(), () -> ToolResultBlock.builder().id("call_s").name("f").output(TextBlock.builder().text("out").build()).state(s).build());
    blocks.edge("tool-result-text-factory", () -> ToolResultBlock.text("42"));
    blocks.edge("tool-result-error-factory", () -> ToolResultBlock.error("division by zero"));
    blocks.add("tool-result-of-factory", () -> ToolResultBlock.of("call_3", "search", TextBlock.builder().text("3 results").build(), Map.of("cached", true)));
    blocks.add("tool-result-suspended-factory", () -> ToolResultBlock.suspended(call));
    blocks.add("tool-result-with-id-and-name", () -> ToolResultBlock.text("ok").withIdAndName("call_10", "f"));
    blocks.add("tool-result-error-with-id-and-name", () -> ToolResultBlock.error("division by zero").withIdAndName("call_15", "divide"));
    blocks.add("tool-result-constructor-3", () -> new ToolResultBlock("call_11", "f", List.of(TextBlock.builder().text("a").build())));
    blocks.add("tool-result-constructor-5", () -> new ToolResultBlock("call_12", "f", List.of(), Map.of(), ToolResultState.INTERRUPTED));
    blocks.edge("tool-result-null-lists", () -> new ToolResultBlock("call_13", "f", null, null, null));
    blocks.add("tool-result-nested-media", () -> ToolResultBlock.builder().id("call_14").name("render").output(List.of(
        DataBlock.builder().source(pdf).name("out.pdf").build(), AudioBlock.builder().source(new URLSource("https://example.com/a.mp3")).build(),
        VideoBlock.builder().source(new URLSource("https://example.com/v.mp4")).fps(1.0f).build())).state(ToolResultState.SUCCESS).build());
    HintBlock hint = blocks.add("hint", () -> new HintBlock("hint_1", "Keep answers under 50 words.", "alice"));
    blocks.add("hint-system-source", () -> new HintBlock("hint_2", "Budget: 3 tool calls left.", "system"));
    blocks.add("hint-no-source", () -> new HintBlock("hint_3", "Be brief."));

    // ---- messages ----
    msgs.add("builder-text-defaults", () -> Msg.builder().textContent("plain builder").build());
    msgs.edge("builder-empty", () -> Msg.builder().build());
    Msg finalReply =
        msgs.add("builder-all-fields", () -> Msg.builder().id("msg_0001").name("Friday").role(MsgRole.ASSISTANT)
            .content(List.of(thinking, text, call)).metadata(ordered("task_id", "t-1"))
            .timestamp(TIMESTAMP).usage(usage).generateReason(GenerateReason.TOOL_CALLS).build());
    for (MsgRole r : MsgRole.values()) {
      ContentBlock b = r == MsgRole.TOOL ? result : text;
      msgs.add("builder-role-" + r.name(), () -> Msg.builder().name("n").role(r).content(b).build());
      msgs.add("builderForRole-" + r.name(), () -> Msg.builderForRole(r).name("n").content(b).build());
    }
    msgs.add("user-text", () -> new UserMessage("What's the weather in Paris?"));
    msgs.add("user-named-text", () -> new UserMessage("alice", "What's the weather in Paris?"));
    msgs.add("user-blocks", () -> new UserMessage(text, imageUrl));
    msgs.add("user-named-blocks", () -> new UserMessage("alice", text, imageUrl));
    msgs.add("user-list", () -> new UserMessage(List.of(text)));
    msgs.add("user-multimodal-every-media", () -> new UserMessage("alice", text, imageUrl, ImageBlock.builder().source(png).minPixels(3136).build(),
        AudioBlock.builder().source(new URLSource("https://example.com/a.mp3")).build(),
        VideoBlock.builder().source(new URLSource("https://example.com/v.mp4")).fps(2.0f).maxFrames(8).build(),
        DataBlock.builder().source(pdf).name("report.pdf").build()));
    msgs.add("user-builder", () -> UserMessage.builder().id("u1").name("alice").textContent("hi").metadata(Map.of("channel", "web")).timestamp(TIMESTAMP).build());
    msgs.add("user-empty", () -> new UserMessage(List.of()));
    msgs.add("system-text", () -> new SystemMessage("You are a helpful assistant."));
    msgs.add("system-named-text", () -> new SystemMessage("system", "You are a helpful assistant."));
    msgs.add("system-builder", () -> SystemMessage.builder().textContent("Be concise.").build());
    msgs.add("assistant-text", () -> new AssistantMessage("Friday", "It is sunny in Paris."));
    msgs.add("assistant-every-block", () -> AssistantMessage.builder().name("Friday").content(everyBlock(blocks)).build());
    msgs.add("assistant-thinking-text-tool-calls", () -> AssistantMessage.builder().name("Friday").content(thinking, text, call, ToolUseBlock.builder().id("call_b").name("g").build()).build());
    msgs.add("assistant-hint", () -> new AssistantMessage("Friday", hint));
    msgs.add("assistant-builder-usage-reason", () -> AssistantMessage.builder().name("Friday").textContent("done").usage(usage).generateReason(GenerateReason.MODEL_STOP).build());
    msgs.add("tool-result-message-text", () -> new ToolResultMessage(CALL_ID, "get_weather", "Sunny, 25°C"));
    msgs.add("tool-result-message-blocks", () -> new ToolResultMessage(result, ToolResultBlock.error("timeout").withIdAndName("call_b", "g")));
    msgs.add("tool-result-message-builder", () -> ToolResultMessage.builder().name("Friday").result(CALL_ID, "get_weather", "Sunny").result(result).build());
    msgs.add("tool-role-every-block", () -> Msg.builder().role(MsgRole.TOOL).content(everyBlock(blocks)).build());
    msgs.edge("metadata-null-values", () -> { Map<String, Object> m = new HashMap<>(); m.put("a", null); m.put("b", 1); return Msg.builder().textContent("x").metadata(m).build(); });
    msgs.edge("metadata-null", () -> Msg.builder().textContent("x").metadata(null).build());
    msgs.edge("content-null", () -> Msg.builder().content((List<ContentBlock>) null).build());
    msgs.edge("content-null-element", () -> Msg.builder().content(Arrays.asList(text, null)).build());
    for (GenerateReason g : GenerateReason.values())
      msgs.add("generate-reason-" + g.name(), () -> Msg.builder().id("m").role(MsgRole.ASSISTANT).textContent("x").timestamp(TIMESTAMP).generateReason(g).build());
    msgs.add("with-generate-reason", () -> new AssistantMessage("Friday", "x").withGenerateReason(GenerateReason.MAX_ITERATIONS));
    msgs.add("with-content", () -> new AssistantMessage("Friday", "x").withContent(List.of(call)));
    msgs.add("usage-constructor-3", () -> Msg.builder().role(MsgRole.ASSISTANT).textContent("x").usage(new ChatUsage(7, 3, 0.0)).build());
    msgs.add("metadata-legacy-chat-usage", () -> Msg.builder().role(MsgRole.ASSISTANT).textContent("Hello").metadata(Map.of(MessageMetadataKeys.CHAT_USAGE, new ChatUsage(7, 3, 0.0))).usage(new ChatUsage(7, 3, 0.0)).build());
    msgs.add("metadata-well-known-keys", () -> Msg.builder().role(MsgRole.USER).textContent("continue").metadata(ordered(
        Msg.METADATA_SYNTHETIC, true, Msg.METADATA_REMINDER_KIND, "todo_state",
        MessageMetadataKeys.BYPASS_MULTIAGENT_HISTORY_MERGE, true, MessageMetadataKeys.CACHE_CONTROL, true,
        Msg.METADATA_CONFIRM_RESULTS, List.of(new ConfirmResult(true, call))))
        .build());
    msgs.add("metadata-structured-output", () -> Msg.builder().role(MsgRole.ASSISTANT).textContent("{\"answer\":42}").metadata(Map.of(MessageMetadataKeys.STRUCTURED_OUTPUT, ordered("answer", 42, "unit", "none"))).build());

    // ---- events: one of every AgentEvent subtype (key = type), variants as "TYPE:variant" ----
    Msg reply = finalReply != null ? finalReply : new AssistantMessage("Friday", "It is sunny in Paris.");
    ToolUseBlock asking = call == null ? null : call.withState(ToolCallState.ASKING);
    ToolUseBlock denied = ToolUseBlock.builder().id("call_rm").name("delete_file").input(Map.of("path", "/etc/passwd")).content("{\"path\":\"/etc/passwd\"}").state(ToolCallState.PENDING).build();
    events.add("AGENT_START", () -> new AgentStartEvent(SESSION, AGENT_REPLY, "Friday"));
    events.add("AGENT_START:explicit-id-role", () -> new AgentStartEvent("4cf8a1b2c3d4e5f60718293a4b5c6d7e", CREATED_AT, SESSION, AGENT_REPLY, "Friday", "user"));
    events.edge("AGENT_START:null-role", () -> new AgentStartEvent(null, null, SESSION, AGENT_REPLY, null, null));
    events.add("AGENT_END", () -> new AgentEndEvent(AGENT_REPLY));
    events.add("AGENT_RESULT", () -> new AgentResultEvent(reply));
    events.edge("AGENT_RESULT:null-result", () -> new AgentResultEvent(null));
    events.add("MODEL_CALL_START", () -> new ModelCallStartEvent(MODEL_REPLY));
    events.add("MODEL_CALL_END", () -> new ModelCallEndEvent(MODEL_REPLY, usage));
    events.edge("MODEL_CALL_END:null-usage", () -> new ModelCallEndEvent(MODEL_REPLY, null));
    events.add("TEXT_BLOCK_START", () -> new TextBlockStartEvent(MODEL_REPLY, "text"));
    events.add("TEXT_BLOCK_DELTA", () -> new TextBlockDeltaEvent(MODEL_REPLY, "text", "It is sunny"));
    events.add("TEXT_BLOCK_DELTA:explicit-id", () -> new TextBlockDeltaEvent("4cf8a1b2c3d4e5f60718293a4b5c6d7e", CREATED_AT, MODEL_REPLY, "text", "Hel"));
    events.edge("TEXT_BLOCK_DELTA:null-ids", () -> new TextBlockDeltaEvent(null, null, null, null, "x"));
    events.add("TEXT_BLOCK_DELTA:forwarded-subagent", () -> new TextBlockDeltaEvent(MODEL_REPLY, "text", "from the child").withSource("Friday/researcher").withMetadata(ordered("taskId", "task_1", "parentSessionId", SESSION)));
    events.add("TEXT_BLOCK_DELTA:empty-metadata", () -> new TextBlockDeltaEvent(MODEL_REPLY, "text", "x").withMetadata(Map.of()));
    events.add("TEXT_BLOCK_END", () -> new TextBlockEndEvent(MODEL_REPLY, "text"));
    events.add("THINKING_BLOCK_START", () -> new ThinkingBlockStartEvent(MODEL_REPLY, "thinking"));
    events.add("THINKING_BLOCK_DELTA", () -> new ThinkingBlockDeltaEvent(MODEL_REPLY, "thinking", "The user wants"));
    events.add("THINKING_BLOCK_END", () -> new ThinkingBlockEndEvent(MODEL_REPLY, "thinking"));
    events.add("DATA_BLOCK_START", () -> new DataBlockStartEvent(MODEL_REPLY, "data_0"));
    events.add("DATA_BLOCK_DELTA", () -> new DataBlockDeltaEvent(MODEL_REPLY, "data_0", "iVBORw0KGgo="));
    events.add("DATA_BLOCK_END", () -> new DataBlockEndEvent(MODEL_REPLY, "data_0"));
    events.add("TOOL_CALL_START", () -> new ToolCallStartEvent(MODEL_REPLY, CALL_ID, "get_weather"));
    events.add("TOOL_CALL_DELTA", () -> new ToolCallDeltaEvent(MODEL_REPLY, CALL_ID, "get_weather", "{\"city\":\"Pa"));
    events.add("TOOL_CALL_END", () -> new ToolCallEndEvent(MODEL_REPLY, CALL_ID, "get_weather"));
    events.add("TOOL_RESULT_START", () -> new ToolResultStartEvent(ACT_REPLY, CALL_ID, "get_weather"));
    events.add("TOOL_RESULT_TEXT_DELTA", () -> new ToolResultTextDeltaEvent(ACT_REPLY, CALL_ID, "get_weather", "Sunny, 25°C"));
    events.add("TOOL_RESULT_TEXT_DELTA:denied", () -> new ToolResultTextDeltaEvent(ACT_REPLY, "call_rm", "delete_file", "Permission denied by rules"));
    events.add("TOOL_RESULT_DATA_DELTA", () -> new ToolResultDataDeltaEvent(ACT_REPLY, CALL_ID, "get_weather", ImageBlock.builder().source(url).build()));
    events.add("TOOL_RESULT_DATA_DELTA:data-block", () -> new ToolResultDataDeltaEvent(ACT_REPLY, CALL_ID, "render", DataBlock.builder().id("d1").source(pdf).name("out.pdf").build()));
    events.add("TOOL_RESULT_END", () -> new ToolResultEndEvent(ACT_REPLY, CALL_ID, "get_weather", ToolResultState.SUCCESS));
    events.add("TOOL_RESULT_END:with-metadata", () -> new ToolResultEndEvent(ACT_REPLY, CALL_ID, "get_weather", ToolResultState.RUNNING).withMetadata(Map.of(ToolResultBlock.METADATA_SUSPENDED, true)));
    events.add("TOOL_RESULT_END:denied", () -> new ToolResultEndEvent(ACT_REPLY, "call_rm", "delete_file", ToolResultState.DENIED));
    events.edge("TOOL_RESULT_END:null-state", () -> new ToolResultEndEvent(ACT_REPLY, CALL_ID, "get_weather", null));
    events.add("EXCEED_MAX_ITERS", () -> new ExceedMaxItersEvent("", 10, 10));
    events.add("REQUIRE_USER_CONFIRM", () -> new RequireUserConfirmEvent(ACT_REPLY, List.of(asking)));
    events.add("REQUIRE_EXTERNAL_EXECUTION", () -> new RequireExternalExecutionEvent(ACT_REPLY, List.of(call)));
    events.add("USER_CONFIRM_RESULT", () -> new UserConfirmResultEvent(ACT_REPLY, List.of(new ConfirmResult(true, asking),
        new ConfirmResult(false, denied, List.of(new PermissionRule("delete_file", "/etc/**", PermissionBehavior.DENY, "user"))))));
    events.add("EXTERNAL_EXECUTION_RESULT", () -> new ExternalExecutionResultEvent(ACT_REPLY, List.of(result)));
    events.add("REQUEST_STOP", () -> new RequestStopEvent("token budget exhausted", GenerateReason.REASONING_STOP_REQUESTED));
    events.add("REQUEST_STOP:default-reason", () -> new RequestStopEvent("stop requested by middleware"));
    events.edge("REQUEST_STOP:null-generate-reason", () -> new RequestStopEvent("x", null));
    events.add("SUBAGENT_EXPOSED", () -> new SubagentExposedEvent("sub_7c1e", "researcher", SESSION, "Research assistant"));
    events.add("HINT_BLOCK", () -> new HintBlockEvent(MODEL_REPLY, "hint_1", "alice", "Keep answers under 50 words."));
    events.add("ALL_TOOLS_DENIED", () -> new AllToolsDeniedEvent(List.of(denied)));
    events.add("CUSTOM", () -> new CustomEvent("progress", ordered("step", 2, "of", 5, "label", "fetching")));
    events.add("CUSTOM:name-only", () -> new CustomEvent("heartbeat"));
    events.edge("CUSTOM:null-value", () -> new CustomEvent("x", null));

    // Every subtype AgentScope registers must be covered by its plain type name.
    Set<String> registered = new LinkedHashSet<>();
    for (JsonSubTypes.Type t : AgentEvent.class.getAnnotation(JsonSubTypes.class).value()) registered.add(t.name());
    Set<String> enumValues = new LinkedHashSet<>();
    for (AgentEventType t : AgentEventType.values()) enumValues.add(t.getValue());
    List<String> missing = registered.stream().filter(n -> !events.written.containsKey(n)).toList();
    if (!missing.isEmpty()) ERRORS.put("event-types-not-built", missing);
    if (!registered.equals(enumValues)) {
      ERRORS.put("event-subtypes-not-in-AgentEventType", registered.stream().filter(n -> !enumValues.contains(n)).toList());
      ERRORS.put("AgentEventType-values-without-subtype", enumValues.stream().filter(n -> !registered.contains(n)).toList());
    }

    List<Section> all = List.of(msgs, blocks, events, sources, usages);
    for (Section s : all) {
      s.out.writeTo(out.resolve("built-" + s.kind + ".json"));
      s.rawOut.writeTo(out.resolve("built-" + s.kind + ".raw.json"));
      s.edgeOut.writeTo(out.resolve("built-edge-" + s.kind + ".json"));
    }
    Json.RawObject readback = new Json.RawObject();
    for (Section s : all) readback.putRaw(s.kind, readBack(s).text().strip().replace("\n", "\n  "));
    readback.writeTo(out.resolve("built-readback.json"));
    Files.writeString(out.resolve("build-errors.json"), Json.PLAIN.writerWithDefaultPrettyPrinter().writeValueAsString(ERRORS) + "\n", StandardCharsets.UTF_8);

    System.err.printf("build: %d messages, %d blocks, %d events (%d subtypes registered), %d sources, %d usages, %d edge probes; %d builder errors%n",
        msgs.written.size(), blocks.written.size(), events.written.size(), registered.size(), sources.written.size(), usages.written.size(),
        all.stream().mapToInt(x -> x.edgeWritten.size()).sum(), ERRORS.size());
    ERRORS.forEach((k, v) -> System.err.println("build: " + k + ": " + v));
  }

  /** Reads each built value back with the codec and writes it again: does Java read what it writes? */
  static Json.RawObject readBack(Section s) {
    Json.RawObject o = new Json.RawObject();
    Map<String, String> all = new LinkedHashMap<>(s.written);
    s.edgeWritten.forEach((k, v) -> all.put("edge:" + k, v));
    for (var e : all.entrySet()) {
      Json.Inline i = new Json.Inline();
      try {
        Object v = Json.CODEC.fromJson(e.getValue(), s.readType);
        String again = Json.CODEC.toJson(v);
        JsonNode a = Json.tree(e.getValue()), b = Json.tree(again);
        i.put("read", true).put("same", a.equals(b));
        if (!a.equals(b)) i.putRaw("rewritten", again);
      } catch (Throwable t) {
        i.put("read", false).put("error", Json.describe(t));
      }
      o.putRaw(e.getKey(), i.text());
    }
    return o;
  }

  static List<ContentBlock> everyBlock(Section blocks) {
    List<ContentBlock> all = new ArrayList<>();
    for (Object v : blocks.values.values()) all.add((ContentBlock) v);
    return all;
  }

  /** An insertion-ordered map from alternating keys and values. */
  static Map<String, Object> ordered(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
    return m;
  }
}
