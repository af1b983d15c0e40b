package dev.agentmsg.conformance;

import io.agentscope.core.event.AgentEvent;
import io.agentscope.core.message.ContentBlock;
import io.agentscope.core.message.GenerateReason;
import io.agentscope.core.message.Msg;
import io.agentscope.core.message.Source;
import io.agentscope.core.model.ChatUsage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Mode {@code roundtrip}: every case of every vectors file is read with AgentScope's codec into the Java type
 * of its kind and written back with the same codec.
 *
 * <p>OUT_DIR/roundtrip-KIND.json: {@code {"case id": {"read": true, "javaClass": "...", "output": <JSON Java
 * wrote>}, "case id 2": {"read": false, "error": "Class: message", "exception": [...]}}}
 *
 * <p>OUT_DIR/roundtrip-KIND.raw.json: {@code {"case id": "<the exact text Java wrote, as a JSON string>"}} for
 * every case Java read and wrote back, so that the Python side can compare bytes, not parsed values.
 */
final class Roundtrip {
  private Roundtrip() {}

  /** Vector kind -> the Java type AgentScope reads it into (polymorphic types resolve subclasses). */
  static final Map<String, Class<?>> TYPES =
      Map.of(
          "msg", Msg.class,
          "content-block", ContentBlock.class,
          "event", AgentEvent.class,
          "source", Source.class,
          "chat-usage", ChatUsage.class,
          "generate-reason", GenerateReason.class);

  static void run(Path vectorsDir, Path out) throws IOException {
    Files.createDirectories(out);
    if (!Files.isDirectory(vectorsDir)) {
      System.err.println("roundtrip: no vectors directory " + vectorsDir + "; nothing to do");
      return;
    }
    List<Path> files;
    try (Stream<Path> s = Files.list(vectorsDir)) {
      files = s.filter(f -> f.getFileName().toString().endsWith(".json")).sorted().toList();
    }
    Map<String, Json.RawObject> results = new LinkedHashMap<>();
    Map<String, Json.RawObject> raws = new LinkedHashMap<>();
    for (Path file : files) {
      Vectors.File vectors;
      try {
        vectors = Vectors.read(file);
      } catch (IOException | RuntimeException e) {
        System.err.println("roundtrip: skipping " + file.getFileName() + ": " + Json.describe(e));
        continue;
      }
      Class<?> type = TYPES.get(vectors.kind());
      if (type == null) {
        System.err.println("roundtrip: skipping " + file.getFileName() + ": unknown kind " + vectors.kind());
        continue;
      }
      Json.RawObject result = results.computeIfAbsent(vectors.kind(), k -> new Json.RawObject());
      Json.RawObject raw = raws.computeIfAbsent(vectors.kind(), k -> new Json.RawObject());
      int read = 0, validRejected = 0, invalidRead = 0;
      for (Vectors.Case c : vectors.cases()) {
        Outcome o = roundtrip(c.instance(), type);
        result.putRaw(c.id(), o.json());
        if (o.written() != null) raw.putRaw(c.id(), Json.quote(o.written()));
        if (o.read()) read++;
        if (Boolean.TRUE.equals(c.valid()) && !o.read()) validRejected++;
        if (Boolean.FALSE.equals(c.valid()) && o.read()) invalidRead++;
      }
      System.err.printf(
          "roundtrip %-14s %3d cases: Java read %d (valid cases it rejected: %d, invalid cases it read: %d)%n",
          vectors.kind(), vectors.cases().size(), read, validRejected, invalidRead);
    }
    for (var e : results.entrySet()) e.getValue().writeTo(out.resolve("roundtrip-" + e.getKey() + ".json"));
    for (var e : raws.entrySet()) e.getValue().writeTo(out.resolve("roundtrip-" + e.getKey() + ".raw.json"));
  }

  record Outcome(boolean read, String json, String written) {}

  static Outcome roundtrip(String instance, Class<?> type) {
    Object value;
    try {
      value = Json.CODEC.fromJson(instance, type);
    } catch (Throwable e) {
      return new Outcome(
          false,
          new Json.Inline().put("read", false).put("error", Json.describe(e)).put("exception", Json.chain(e)).text(),
          null);
    }
    Json.Inline entry =
        new Json.Inline().put("read", true).put("javaClass", value == null ? null : value.getClass().getName());
    String written = null;
    try {
      written = Json.CODEC.toJson(value);
      Json.tree(written); // must be JSON text we can embed
      entry.putRaw("output", written);
    } catch (Throwable e) {
      written = null;
      entry.put("written", false).put("error", Json.describe(e)).put("exception", Json.chain(e));
    }
    return new Outcome(true, entry.text(), written);
  }
}
