package dev.agentmsg.conformance;

import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * Runs agentmsg's conformance vectors through AgentScope Java's own JSON codec and builders.
 *
 * <pre>
 * roundtrip VECTORS_DIR OUT_DIR   read every case of every vectors file with AgentScope's codec and write
 *                                 it back: OUT_DIR/roundtrip-KIND.json
 * build OUT_DIR                   build messages, blocks and events of every kind with AgentScope's own
 *                                 builders and constructors: OUT_DIR/built-{msg,content-block,event}.json
 * roles OUT_DIR                   which block types AgentScope accepts for each role: OUT_DIR/roles.json
 * formatters FORMATTERS_DIR OUT_DIR
 *                                 AgentScope's OpenAI, DeepSeek and Anthropic formatters (chat and multi-agent) on
 *                                 every formatter vector's conversation: OUT_DIR/formatters.json
 * stream OUT_DIR                  (extra) a real ReActAgent driven by a scripted model, its AgentEvents as
 *                                 JSONL: OUT_DIR/stream-SCENARIO.jsonl
 * schemas SCHEMAS_DIR VECTORS_DIR OUT_DIR
 *                                 networknt's json-schema-validator on every vector case, with agentmsg's schema
 *                                 files: OUT_DIR/networknt.json
 * all VECTORS_DIR OUT_DIR [FORMATTERS_DIR]
 *                                 roundtrip, build, roles (and formatters) in one JVM
 * </pre>
 *
 * <p>The harness never decides pass/fail: it records what AgentScope did, and exits 0 whenever it could run.
 * The verdicts are compared on the Python side. Exit status 2 means a usage error, 1 an unexpected crash.
 */
public final class Harness {
  private Harness() {}

  public static void main(String[] args) throws Exception {
    if (args.length == 0) usage();
    switch (args[0]) {
      case "roundtrip" -> {
        if (args.length != 3) usage();
        Roundtrip.run(path(args[1]), path(args[2]));
      }
      case "build" -> {
        if (args.length != 2) usage();
        Build.run(path(args[1]));
      }
      case "roles" -> {
        if (args.length != 2) usage();
        Roles.run(path(args[1]));
      }
      case "formatters" -> {
        if (args.length != 3) usage();
        Formatters.run(path(args[1]), path(args[2]));
      }
      case "schemas" -> {
        if (args.length != 4) usage();
        Schemas.run(path(args[1]), path(args[2]), path(args[3]));
      }
      case "stream" -> {
        if (args.length != 2) usage();
        Stream.run(path(args[1]));
      }
      case "all" -> {
        if (args.length != 3 && args.length != 4) usage();
        Roundtrip.run(path(args[1]), path(args[2]));
        Build.run(path(args[2]));
        Roles.run(path(args[2]));
        if (args.length == 4) Formatters.run(path(args[3]), path(args[2]));
      }
      default -> usage();
    }
    // Do not wait for stray non-daemon threads a library may have started: the files are written.
    System.exit(0);
  }

  private static Path path(String s) {
    return Paths.get(s).toAbsolutePath().normalize();
  }

  private static void usage() {
    System.err.println(
        "usage: Harness roundtrip VECTORS_DIR OUT_DIR | build OUT_DIR | roles OUT_DIR"
            + " | formatters FORMATTERS_DIR OUT_DIR | schemas SCHEMAS_DIR VECTORS_DIR OUT_DIR | stream OUT_DIR"
            + " | all VECTORS_DIR OUT_DIR [FORMATTERS_DIR]");
    System.exit(2);
  }
}
