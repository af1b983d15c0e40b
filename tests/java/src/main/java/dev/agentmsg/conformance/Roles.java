package dev.agentmsg.conformance;

import io.agentscope.core.message.AssistantMessage;
import io.agentscope.core.message.ContentBlock;
import io.agentscope.core.message.Msg;
import io.agentscope.core.message.MsgRole;
import io.agentscope.core.message.SystemMessage;
import io.agentscope.core.message.UserMessage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Mode {@code roles}: for each role and each block type, does AgentScope accept a message holding one block of
 * that type?
 *
 * <p>OUT_DIR/roles.json: {@code {"USER": {"text": true, "thinking": false, ...}, ...}}, the verdict of
 * deserializing {@code {"id":"m","name":null,"role":ROLE,"content":[SAMPLE],"metadata":{}}} with AgentScope's
 * codec (the sample blocks are listed in roles-detail.json).
 *
 * <p>OUT_DIR/roles-detail.json: the samples, and for every role x block every way of building the message
 * (codec, Msg.builder().role(), Msg.builderForRole(), the role subclass constructor) with its error, plus the
 * empty-content case. Any disagreement between the ways is printed to stderr.
 */
final class Roles {
  private Roles() {}

  /** One sample per block type, as JSON (the codec path reads exactly this text). */
  static final Map<String, String> SAMPLES = new LinkedHashMap<>();

  static {
    SAMPLES.put("text", "{\"type\":\"text\",\"text\":\"x\"}");
    SAMPLES.put("thinking", "{\"type\":\"thinking\",\"thinking\":\"x\"}");
    SAMPLES.put("image", "{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":\"https://a/x.png\"}}");
    SAMPLES.put("audio", "{\"type\":\"audio\",\"source\":{\"type\":\"url\",\"url\":\"https://a/x.mp3\"}}");
    SAMPLES.put("video", "{\"type\":\"video\",\"source\":{\"type\":\"url\",\"url\":\"https://a/x.mp4\"}}");
    SAMPLES.put(
        "data",
        "{\"type\":\"data\",\"source\":{\"type\":\"base64\",\"media_type\":\"application/pdf\",\"data\":\"JVBE\"}}");
    SAMPLES.put("tool_use", "{\"type\":\"tool_use\",\"id\":\"c\",\"name\":\"f\",\"input\":{}}");
    SAMPLES.put("tool_result", "{\"type\":\"tool_result\",\"id\":\"c\",\"name\":\"f\",\"output\":[]}");
    SAMPLES.put("hint", "{\"type\":\"hint\",\"id\":\"h\",\"hint\":\"x\",\"source\":null}");
  }

  static String message(String role, String contentJson) {
    return "{\"id\":\"m\",\"name\":null,\"role\":\"" + role + "\",\"content\":[" + contentJson + "],\"metadata\":{}}";
  }

  record Try(boolean accepted, String error, String javaClass) {
    String json() {
      Json.Inline i = new Json.Inline().put("accepted", accepted);
      if (javaClass != null) i.put("javaClass", javaClass);
      if (error != null) i.put("error", error);
      return i.text();
    }
  }

  static Try attempt(Supplier<Object> s) {
    try {
      Object v = s.get();
      if (v == null) return new Try(false, "returned null", null);
      return new Try(true, null, v.getClass().getName());
    } catch (Throwable e) {
      return new Try(false, Json.describe(e), null);
    }
  }

  static void run(Path out) throws IOException {
    Map<String, ContentBlock> blocks = new LinkedHashMap<>();
    for (var e : SAMPLES.entrySet()) blocks.put(e.getKey(), Json.CODEC.fromJson(e.getValue(), ContentBlock.class));

    Json.RawObject verdicts = new Json.RawObject();
    Json.RawObject details = new Json.RawObject();
    Json.RawObject samples = new Json.RawObject();
    SAMPLES.forEach(samples::putRaw);
    details.putRaw("samples", indent(samples.text()));
    details.put("message", message("ROLE", "SAMPLE"));
    List<String> disagreements = new ArrayList<>();

    for (MsgRole role : MsgRole.values()) {
      Json.Inline row = new Json.Inline();
      Json.RawObject detailRow = new Json.RawObject();
      Map<String, String> withEmpty = new LinkedHashMap<>(SAMPLES);
      withEmpty.put("(empty content)", null);
      for (var e : withEmpty.entrySet()) {
        String name = e.getKey();
        ContentBlock block = blocks.get(name);
        List<ContentBlock> content = block == null ? List.of() : List.of(block);
        Map<String, Try> ways = new LinkedHashMap<>();
        String text = message(role.name(), e.getValue() == null ? "" : e.getValue());
        ways.put("codec", attempt(() -> Json.CODEC.fromJson(text, Msg.class)));
        ways.put("Msg.builder().role()", attempt(() -> Msg.builder().role(role).content(content).build()));
        ways.put("Msg.builderForRole()", attempt(() -> Msg.builderForRole(role).content(content).build()));
        switch (role) {
          case USER -> ways.put("new UserMessage(List)", attempt(() -> new UserMessage(content)));
          case SYSTEM -> ways.put("new SystemMessage(List)", attempt(() -> new SystemMessage(content)));
          case ASSISTANT -> ways.put("new AssistantMessage(List)", attempt(() -> new AssistantMessage(content)));
          case TOOL -> {} // ToolResultMessage's constructors only take ToolResultBlocks
        }
        boolean verdict = ways.get("codec").accepted();
        if (block != null) row.put(name, verdict);
        Json.Inline d = new Json.Inline();
        ways.forEach((k, v) -> d.putRaw(k, v.json()));
        detailRow.putRaw(name, d.text());
        if (ways.values().stream().anyMatch(t -> t.accepted() != verdict))
          disagreements.add(role + "/" + name + ": " + ways);
      }
      verdicts.putRaw(role.name(), row.text());
      details.putRaw(role.name(), indent(detailRow.text()));
    }
    details.put("disagreements", disagreements);
    verdicts.writeTo(out.resolve("roles.json"));
    details.writeTo(out.resolve("roles-detail.json"));
    for (String d : disagreements) System.err.println("roles: the ways of building disagree: " + d);
    System.err.println("roles: wrote roles.json (" + MsgRole.values().length + " roles x " + SAMPLES.size() + " blocks)");
  }

  private static String indent(String objectText) {
    return objectText.strip().replace("\n", "\n  ");
  }
}
