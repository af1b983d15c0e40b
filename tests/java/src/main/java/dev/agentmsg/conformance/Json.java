package dev.agentmsg.conformance;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentscope.core.util.JsonCodec;
import io.agentscope.core.util.JsonUtils;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** JSON helpers. AgentScope's codec does the real work; PLAIN only handles the harness's own files. */
final class Json {
  private Json() {}

  /** AgentScope's own codec: the object under test. */
  static final JsonCodec CODEC = JsonUtils.getJsonCodec();

  /** A plain mapper for reading vector files and writing our result envelopes (never AgentScope values). */
  static final ObjectMapper PLAIN =
      new ObjectMapper()
          .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
          .enable(DeserializationFeature.USE_BIG_INTEGER_FOR_INTS);

  /** A JSON string literal. */
  static String quote(String s) {
    try {
      return PLAIN.writeValueAsString(s);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Any plain Java value (String, Boolean, List, Map...) as JSON text, written by PLAIN. */
  static String plain(Object value) {
    try {
      return PLAIN.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  static JsonNode tree(String text) throws IOException {
    return PLAIN.readTree(text);
  }

  /**
   * "SimpleClassName: first line of message" of the innermost cause: the exception that says what is wrong
   * (AgentScope wraps Jackson errors in JsonException, Jackson wraps constructor errors in
   * ValueInstantiationException).
   */
  static String describe(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) root = root.getCause();
    String msg = String.valueOf(root.getMessage());
    int nl = msg.indexOf('\n');
    if (nl >= 0) msg = msg.substring(0, nl);
    return root.getClass().getSimpleName() + ": " + msg.strip();
  }

  /** Fully qualified class names from the outermost exception to the innermost cause. */
  static List<String> chain(Throwable e) {
    List<String> out = new ArrayList<>();
    for (Throwable t = e; t != null && out.size() < 10; t = t.getCause() == t ? null : t.getCause())
      out.add(t.getClass().getName());
    return out;
  }

  /**
   * Builds a JSON object as text whose values are raw JSON text, so that what AgentScope wrote lands in the
   * file exactly as written (events carry the "type" key twice; a tree model would keep only one).
   */
  static final class RawObject {
    private final StringBuilder sb = new StringBuilder("{");
    private boolean empty = true;

    RawObject putRaw(String key, String rawJson) {
      sb.append(empty ? "\n  " : ",\n  ").append(quote(key)).append(": ").append(rawJson);
      empty = false;
      return this;
    }

    RawObject put(String key, Object plainValue) {
      return putRaw(key, plain(plainValue));
    }

    String text() {
      return sb + (empty ? "}\n" : "\n}\n");
    }

    void writeTo(Path file) throws IOException {
      Files.createDirectories(file.getParent());
      Files.writeString(file, text(), StandardCharsets.UTF_8);
    }
  }

  /** A one-line JSON object built from raw values (used for the per-case entries). */
  static final class Inline {
    private final StringBuilder sb = new StringBuilder("{");

    Inline putRaw(String key, String rawJson) {
      if (sb.length() > 1) sb.append(", ");
      sb.append(quote(key)).append(": ").append(rawJson);
      return this;
    }

    Inline put(String key, Object plainValue) {
      return putRaw(key, plain(plainValue));
    }

    String text() {
      return sb + "}";
    }
  }
}
