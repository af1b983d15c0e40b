package dev.agentmsg.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentscope.core.event.*;
import io.agentscope.core.message.*;
import io.agentscope.core.model.ChatUsage;
import io.agentscope.core.util.JsonCodec;
import io.agentscope.core.util.JsonUtils;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

/**
 * Runs agentmsg's conformance vectors through AgentScope Java's own JSON codec.
 *
 * <pre>
 * roundtrip VECTORS_DIR OUT_DIR  read every case with AgentScope's codec, write it back
 * build OUT_DIR                  build messages and events of every kind with AgentScope's builders
 * roles OUT_DIR                  which block types AgentScope accepts for each role
 * </pre>
 *
 * Outputs are JSON objects whose values are raw JSON text written by AgentScope (so that its
 * duplicate "type" key on events survives untouched).
 */
public final class Harness {
  private static final ObjectMapper PLAIN = new ObjectMapper();
  private static final JsonCodec CODEC = JsonUtils.getJsonCodec();

  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "roundtrip" -> roundtrip(Paths.get(args[1]), Paths.get(args[2]));
      case "build" -> build(Paths.get(args[1]));
      case "roles" -> roles(Paths.get(args[1]));
      default -> throw new IllegalArgumentException("unknown mode " + args[0]);
    }
  }

  private static Class<?> typeOf(String kind) {
    return switch (kind) {
      case "msg" -> Msg.class;
      case "content-block" -> ContentBlock.class;
      case "event" -> AgentEvent.class;
      default -> null;
    };
  }

  static void roundtrip(Path vectors, Path out) throws Exception {
    Files.createDirectories(out);
    if (!Files.isDirectory(vectors)) return;
    try (var files = Files.list(vectors)) {
      for (Path file : files.sorted().toList()) {
        JsonNode doc = PLAIN.readTree(Files.readString(file, StandardCharsets.UTF_8));
        String kind = doc.get("kind").asText();
        Class<?> type = typeOf(kind);
        if (type == null) continue;
        ObjectNode result = PLAIN.createObjectNode();
        for (JsonNode c : doc.get("cases")) {
          ObjectNode r = result.putObject(c.get("id").asText());
          try {
            Object value = CODEC.fromJson(PLAIN.writeValueAsString(c.get("instance")), type);
            if (value == null) throw new IllegalStateException("read null");
            r.put("read", true);
            r.put("output", CODEC.toJson(value));
          } catch (Throwable e) {
            r.put("read", false);
            Throwable root = e;
            while (root.getCause() != null) root = root.getCause();
            r.put("error", root.getClass().getSimpleName() + ": " + String.valueOf(root.getMessage()).split("\n")[0]);
          }
        }
        Files.writeString(out.resolve("roundtrip-" + kind + ".json"), PLAIN.writerWithDefaultPrettyPrinter().writeValueAsString(result));
      }
    }
  }

  static void build(Path out) throws Exception {
    Files.createDirectories(out);
    URLSource url = new URLSource("https://example.com/cat.png", "image/png");
    Base64Source b64 = Base64Source.builder().mediaType("image/png").data("iVBORw0KGgo=").build();
    ToolUseBlock call = ToolUseBlock.builder().id("call_1").name("get_weather").input(Map.of("city", "Paris"))
        .content("{\"city\":\"Paris\"}").metadata(Map.of("thoughtSignature", "sig")).state(ToolCallState.PENDING).build();
    ToolResultBlock result = ToolResultBlock.builder().id("call_1").name("get_weather")
        .output(List.of(TextBlock.builder().text("Sunny, 25°C").build(), ImageBlock.builder().source(b64).build()))
        .metadata(Map.of("agentscope_suspended", false)).state(ToolResultState.SUCCESS).build();
    ChatUsage usage = ChatUsage.builder().inputTokens(10).outputTokens(20).cachedTokens(3).time(1.5).build();

    Map<String, Object> blocks = new LinkedHashMap<>();
    blocks.put("text", TextBlock.builder().text("hello").build());
    blocks.put("thinking-no-metadata", ThinkingBlock.builder().thinking("hmm").build());
    blocks.put("thinking-signature-metadata", ThinkingBlock.builder().thinking("").metadata(Map.of("signature", "EqQB", "provider", "anthropic", "redacted", false)).build());
    blocks.put("image-url-sizing", ImageBlock.builder().source(url).minPixels(3136).maxPixels(1003520).build());
    blocks.put("image-base64", ImageBlock.builder().source(b64).build());
    blocks.put("audio", AudioBlock.builder().source(new URLSource("https://example.com/a.mp3")).build());
    blocks.put("video-sizing", VideoBlock.builder().source(new URLSource("https://example.com/v.mp4")).fps(2.0f).maxFrames(16).minPixels(1).maxPixels(2).totalPixels(3).build());
    blocks.put("data", DataBlock.builder().source(Base64Source.builder().mediaType("application/pdf").data("JVBE").build()).name("a.pdf").build());
    blocks.put("tool-use", call);
    blocks.put("tool-use-defaults", ToolUseBlock.builder().id("c2").name("f").build());
    blocks.put("tool-result", result);
    blocks.put("tool-result-defaults", ToolResultBlock.builder().id("c3").build());
    blocks.put("hint", new HintBlock("h1", "be brief", "alice"));
    write(out.resolve("built-content-block.json"), blocks);

    Map<String, Object> msgs = new LinkedHashMap<>();
    msgs.put("user-text", new UserMessage("alice", "hi"));
    msgs.put("user-multimodal", new UserMessage("alice", TextBlock.builder().text("look").build(), ImageBlock.builder().source(url).build(), (ContentBlock) blocks.get("data")));
    msgs.put("system", new SystemMessage("system", "You are helpful."));
    msgs.put("assistant-all-blocks", new AssistantMessage("Friday", blocks.values().toArray(new ContentBlock[0])));
    msgs.put("tool-result-message", new ToolResultMessage(result));
    msgs.put("builder-with-usage-and-reason", Msg.builder().name("Friday").role(MsgRole.ASSISTANT).content(List.of(call))
        .metadata(Map.of("task_id", "1")).usage(usage).generateReason(GenerateReason.TOOL_CALLS).build());
    msgs.put("builder-defaults", Msg.builder().textContent("plain builder").build());
    write(out.resolve("built-msg.json"), msgs);

    Msg reply = (Msg) msgs.get("builder-with-usage-and-reason");
    Map<String, Object> events = new LinkedHashMap<>();
    events.put("AGENT_START", new AgentStartEvent("s1", "r1", "Friday"));
    events.put("AGENT_END", new AgentEndEvent("r1"));
    events.put("AGENT_RESULT", new AgentResultEvent(reply));
    events.put("MODEL_CALL_START", new ModelCallStartEvent("m1"));
    events.put("MODEL_CALL_END", new ModelCallEndEvent("m1", usage));
    events.put("TEXT_BLOCK_START", new TextBlockStartEvent("m1", "text"));
    events.put("TEXT_BLOCK_DELTA", new TextBlockDeltaEvent("m1", "text", "Hel"));
    events.put("TEXT_BLOCK_END", new TextBlockEndEvent("m1", "text"));
    events.put("THINKING_BLOCK_START", new ThinkingBlockStartEvent("m1", "thinking"));
    events.put("THINKING_BLOCK_DELTA", new ThinkingBlockDeltaEvent("m1", "thinking", "hmm"));
    events.put("THINKING_BLOCK_END", new ThinkingBlockEndEvent("m1", "thinking"));
    events.put("DATA_BLOCK_START", new DataBlockStartEvent("m1", "d1"));
    events.put("DATA_BLOCK_DELTA", new DataBlockDeltaEvent("m1", "d1", "iVBO"));
    events.put("DATA_BLOCK_END", new DataBlockEndEvent("m1", "d1"));
    events.put("TOOL_CALL_START", new ToolCallStartEvent("m1", "call_1", "get_weather"));
    events.put("TOOL_CALL_DELTA", new ToolCallDeltaEvent("m1", "call_1", "get_weather", "{\"city\":"));
    events.put("TOOL_CALL_END", new ToolCallEndEvent("m1", "call_1", "get_weather"));
    events.put("TOOL_RESULT_START", new ToolResultStartEvent("t1", "call_1", "get_weather"));
    events.put("TOOL_RESULT_TEXT_DELTA", new ToolResultTextDeltaEvent("t1", "call_1", "get_weather", "Sunny"));
    events.put("TOOL_RESULT_DATA_DELTA", new ToolResultDataDeltaEvent("t1", "call_1", "get_weather", ImageBlock.builder().source(url).build()));
    events.put("TOOL_RESULT_END", new ToolResultEndEvent("t1", "call_1", "get_weather", ToolResultState.SUCCESS));
    events.put("EXCEED_MAX_ITERS", new ExceedMaxItersEvent("", 10, 10));
    events.put("REQUIRE_USER_CONFIRM", new RequireUserConfirmEvent("t1", List.of(call)));
    events.put("REQUIRE_EXTERNAL_EXECUTION", new RequireExternalExecutionEvent("t1", List.of(call)));
    events.put("USER_CONFIRM_RESULT", new UserConfirmResultEvent("t1", List.of(new ConfirmResult(true, call))));
    events.put("EXTERNAL_EXECUTION_RESULT", new ExternalExecutionResultEvent("t1", List.of(result)));
    events.put("REQUEST_STOP", new RequestStopEvent("budget exhausted", GenerateReason.MIDDLEWARE_STOP_REQUESTED));
    events.put("SUBAGENT_EXPOSED", new SubagentExposedEvent("sa1", "agent1", "s1", "Researcher"));
    events.put("HINT_BLOCK", new HintBlockEvent("m1", "h1", "alice", "be brief"));
    events.put("ALL_TOOLS_DENIED", new AllToolsDeniedEvent(List.of(call)));
    events.put("CUSTOM", new CustomEvent("progress", Map.of("pct", 50)));
    write(out.resolve("built-event.json"), events);
  }

  static void roles(Path out) throws Exception {
    Files.createDirectories(out);
    Map<String, String> samples = new LinkedHashMap<>();
    samples.put("text", "{\"type\":\"text\",\"text\":\"x\"}");
    samples.put("thinking", "{\"type\":\"thinking\",\"thinking\":\"x\"}");
    samples.put("image", "{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":\"https://a/x.png\"}}");
    samples.put("audio", "{\"type\":\"audio\",\"source\":{\"type\":\"url\",\"url\":\"https://a/x.mp3\"}}");
    samples.put("video", "{\"type\":\"video\",\"source\":{\"type\":\"url\",\"url\":\"https://a/x.mp4\"}}");
    samples.put("data", "{\"type\":\"data\",\"source\":{\"type\":\"base64\",\"media_type\":\"application/pdf\",\"data\":\"JVBE\"}}");
    samples.put("tool_use", "{\"type\":\"tool_use\",\"id\":\"c\",\"name\":\"f\",\"input\":{}}");
    samples.put("tool_result", "{\"type\":\"tool_result\",\"id\":\"c\",\"name\":\"f\",\"output\":[]}");
    samples.put("hint", "{\"type\":\"hint\",\"id\":\"h\",\"hint\":\"x\",\"source\":null}");
    ObjectNode result = PLAIN.createObjectNode();
    for (String role : List.of("USER", "ASSISTANT", "SYSTEM", "TOOL")) {
      ObjectNode row = result.putObject(role);
      for (var e : samples.entrySet()) {
        String json = "{\"id\":\"m\",\"name\":null,\"role\":\"" + role + "\",\"content\":[" + e.getValue() + "],\"metadata\":{}}";
        boolean accepted;
        try {
          accepted = CODEC.fromJson(json, Msg.class) != null;
        } catch (Throwable t) {
          accepted = false;
        }
        row.put(e.getKey(), accepted);
      }
    }
    Files.writeString(out.resolve("roles.json"), PLAIN.writerWithDefaultPrettyPrinter().writeValueAsString(result));
  }

  private static void write(Path file, Map<String, Object> values) throws Exception {
    ObjectNode node = PLAIN.createObjectNode();
    for (var e : values.entrySet()) node.put(e.getKey(), CODEC.toJson(e.getValue()));
    Files.writeString(file, PLAIN.writerWithDefaultPrettyPrinter().writeValueAsString(node));
  }
}
