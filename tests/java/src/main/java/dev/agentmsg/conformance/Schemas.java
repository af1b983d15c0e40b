package dev.agentmsg.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.networknt.schema.Error;
import com.networknt.schema.InputFormat;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SchemaRegistryConfig;
import com.networknt.schema.SpecificationVersion;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Mode {@code schemas}: every case of every vectors file validated by networknt's json-schema-validator (the
 * validator Java projects use), against agentmsg's schema files as they are: draft 2020-12, each found by its
 * {@code $id} (nothing fetched), format assertions on (the schemas' {@code date-time}), the {@code x-}
 * annotations left to the validator (unknown keywords are annotations in 2020-12).
 *
 * <p>OUT_DIR/networknt.json: {@code {"msg": {"CASE_ID": {"valid": true, "errors": []}, ...}, ...}}, at most three
 * error messages per case. The verdicts are compared with agentmsg's by tests/conformance/test_java.py.
 */
final class Schemas {
  private Schemas() {}

  static void run(Path schemasDir, Path vectorsDir, Path outDir) throws IOException {
    Map<String, String> byId = new HashMap<>();
    try (Stream<Path> files = Files.list(schemasDir)) {
      for (Path file : files.filter(f -> f.toString().endsWith(".schema.json")).sorted().toList()) {
        String text = Files.readString(file, StandardCharsets.UTF_8);
        byId.put(Json.tree(text).get("$id").asText(), text);
      }
    }
    SchemaRegistry registry =
        SchemaRegistry.withDefaultDialect(
            SpecificationVersion.DRAFT_2020_12,
            builder ->
                builder
                    .schemas(byId)
                    .schemaRegistryConfig(
                        SchemaRegistryConfig.builder().formatAssertionsEnabled(true).build()));
    Json.RawObject out = new Json.RawObject();
    List<Path> vectorFiles;
    try (Stream<Path> files = Files.list(vectorsDir)) {
      vectorFiles = files.filter(f -> f.toString().endsWith(".json")).sorted().toList();
    }
    for (Path file : vectorFiles) {
      JsonNode doc = Json.tree(Files.readString(file, StandardCharsets.UTF_8));
      String id = doc.path("schema").asText(null);
      if (id == null || !byId.containsKey(id)) {
        System.err.println("schemas: skipping " + file.getFileName() + ": no schema " + id);
        continue;
      }
      Schema schema = registry.getSchema(SchemaLocation.of(id));
      Vectors.File vectors = Vectors.read(file);
      Json.RawObject results = new Json.RawObject();
      int valid = 0;
      for (Vectors.Case c : vectors.cases()) {
        List<Error> errors = schema.validate(c.instance(), InputFormat.JSON);
        List<String> messages = new ArrayList<>();
        for (Error e : errors.subList(0, Math.min(3, errors.size()))) messages.add(e.toString());
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("valid", errors.isEmpty());
        result.put("errors", messages);
        results.put(c.id(), result);
        if (errors.isEmpty()) valid++;
      }
      out.putRaw(vectors.kind(), results.text());
      System.err.printf(
          "schemas: %s: networknt accepted %d of %d cases%n", vectors.kind(), valid, vectors.cases().size());
    }
    out.writeTo(outDir.resolve("networknt.json"));
  }
}
