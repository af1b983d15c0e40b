package dev.agentmsg.conformance;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads a vectors file. Each instance is kept as the exact text it has in the file, so AgentScope's codec sees
 * the bytes the vector author wrote (number spelling, duplicate keys, key order all untouched).
 */
final class Vectors {
  private Vectors() {}

  record Case(String id, Boolean valid, String instance) {}

  record File(String kind, List<Case> cases) {}

  static File read(Path path) throws IOException {
    String text = Files.readString(path, StandardCharsets.UTF_8);
    String kind = null;
    List<Case> cases = new ArrayList<>();
    try (JsonParser p = Json.PLAIN.getFactory().createParser(text)) {
      if (p.nextToken() != JsonToken.START_OBJECT) throw new IOException("not a JSON object");
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        JsonToken t = p.nextToken();
        if (field.equals("kind") && t == JsonToken.VALUE_STRING) {
          kind = p.getText();
        } else if (field.equals("cases") && t == JsonToken.START_ARRAY) {
          while (p.nextToken() == JsonToken.START_OBJECT) cases.add(readCase(p, text));
        } else {
          p.skipChildren();
        }
      }
    }
    if (kind == null) throw new IOException("no \"kind\"");
    return new File(kind, cases);
  }

  private static Case readCase(JsonParser p, String text) throws IOException {
    String id = null;
    Boolean valid = null;
    String instance = null;
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      JsonToken t = p.nextToken();
      switch (field) {
        case "id" -> id = p.getValueAsString();
        case "valid" -> valid = t.isBoolean() ? p.getBooleanValue() : null;
        case "instance" -> instance = rawValue(p, t, text);
        default -> p.skipChildren();
      }
    }
    if (id == null) throw new IOException("a case has no \"id\"");
    if (instance == null) throw new IOException("case " + id + " has no \"instance\"");
    return new Case(id, valid, instance);
  }

  /** The exact source text of the value at the current token (objects/arrays); scalars are re-serialized. */
  private static String rawValue(JsonParser p, JsonToken t, String text) throws IOException {
    if (!t.isStructStart()) {
      JsonNode scalar = p.readValueAsTree();
      return Json.plain(scalar);
    }
    long start = p.currentTokenLocation().getCharOffset();
    p.skipChildren();
    long end = p.currentLocation().getCharOffset();
    if (start >= 0 && end > start && end <= text.length()) {
      String raw = text.substring((int) start, (int) end);
      // Sanity check: the slice must be exactly one JSON value equal to what the parser saw.
      try {
        Json.tree(raw);
        if ((raw.startsWith("{") && raw.endsWith("}")) || (raw.startsWith("[") && raw.endsWith("]"))) return raw;
      } catch (IOException ignored) {
        // fall through
      }
    }
    throw new IOException("could not locate the raw text of an instance (offsets " + start + ".." + end + ")");
  }
}
