package dev.agentmsg.conformance;

import com.anthropic.core.JsonValue;
import com.anthropic.core.ObjectMappers;
import com.anthropic.models.messages.MessageCreateParams;
import com.anthropic.models.messages.MessageParam;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import io.agentscope.core.message.Msg;
import io.agentscope.core.model.GenerateOptions;
import io.agentscope.core.model.ToolChoice;
import io.agentscope.core.model.ToolSchema;
import io.agentscope.extensions.model.anthropic.formatter.AnthropicBaseFormatter;
import io.agentscope.extensions.model.anthropic.formatter.AnthropicChatFormatter;
import io.agentscope.extensions.model.anthropic.formatter.AnthropicMultiAgentFormatter;
import io.agentscope.extensions.model.openai.dto.OpenAIMessage;
import io.agentscope.extensions.model.openai.dto.OpenAIRequest;
import io.agentscope.extensions.model.openai.dto.OpenAIStreamOptions;
import io.agentscope.extensions.model.openai.formatter.DeepSeekFormatter;
import io.agentscope.extensions.model.openai.formatter.DeepSeekMultiAgentFormatter;
import io.agentscope.extensions.model.openai.formatter.OpenAIBaseFormatter;
import io.agentscope.extensions.model.openai.formatter.OpenAIChatFormatter;
import io.agentscope.extensions.model.openai.formatter.OpenAIMultiAgentFormatter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * Mode {@code formatters}: AgentScope Java's own provider formatters (io.agentscope:agentscope-extensions-model-openai
 * and -anthropic) run on the conversation of every formatter vector (tests/conformance/formatters/PROVIDER/CASE.json),
 * once with the chat formatter and once with the multi-agent formatter, as the provider's ChatModel would call them.
 *
 * <p>The messages are read from the vector's {@code input.messages} with AgentScope's codec; tools, tool choice,
 * stream and generation parameters (temperature, parallel_tool_calls) from the other input keys; the model is the one
 * agentmsg's request names ({@code expected.model}).
 *
 * <p>OUT_DIR/formatters.json: {@code {"PROVIDER/CASE": {"chat": {"formatter": "OpenAIChatFormatter", "body": <the
 * request body Java would send>}, "multi": {...}}}}; a formatter that throws gives {@code {"formatter": ..., "error":
 * "Class: message"}} instead of {@code body}.
 */
final class Formatters {
  private Formatters() {}

  /** agentmsg provider name -> Java's chat and multi-agent formatters. */
  record Pair(Supplier<Object> chat, Supplier<Object> multi) {}

  static final Map<String, Pair> PROVIDERS = new LinkedHashMap<>();

  static {
    PROVIDERS.put("openai", new Pair(OpenAIChatFormatter::new, OpenAIMultiAgentFormatter::new));
    PROVIDERS.put("deepseek", new Pair(DeepSeekFormatter::new, DeepSeekMultiAgentFormatter::new));
    // DashScope's OpenAI-compatible mode: AgentScope Java reaches it with OpenAIChatModel and its formatters.
    PROVIDERS.put("dashscope-compatible", new Pair(OpenAIChatFormatter::new, OpenAIMultiAgentFormatter::new));
    PROVIDERS.put("anthropic", new Pair(AnthropicChatFormatter::new, AnthropicMultiAgentFormatter::new));
  }

  static void run(Path formattersDir, Path out) throws IOException {
    Json.RawObject result = new Json.RawObject();
    int cases = 0, failed = 0;
    for (var provider : PROVIDERS.entrySet()) {
      Path dir = formattersDir.resolve(provider.getKey());
      if (!Files.isDirectory(dir)) {
        System.err.println("formatters: no folder " + dir + "; skipping " + provider.getKey());
        continue;
      }
      List<Path> files;
      try (Stream<Path> s = Files.list(dir)) {
        files = s.filter(f -> f.getFileName().toString().endsWith(".json")).sorted().toList();
      }
      for (Path file : files) {
        String name = file.getFileName().toString();
        String key = provider.getKey() + "/" + name.substring(0, name.length() - ".json".length());
        Json.Inline entry = new Json.Inline();
        try {
          Input input = Input.read(file);
          for (String mode : List.of("chat", "multi")) {
            Pair pair = provider.getValue();
            Outcome outcome = format(mode.equals("chat") ? pair.chat().get() : pair.multi().get(), input);
            if (!outcome.ok()) failed++;
            entry.putRaw(mode, outcome.json());
          }
        } catch (IOException | RuntimeException e) {
          entry.put("error", "reading the vector: " + Json.describe(e));
          failed++;
        }
        result.putRaw(key, entry.text());
        cases++;
      }
    }
    result.writeTo(out.resolve("formatters.json"));
    System.err.printf("formatters: %d vectors, chat and multi-agent each (%d failed)%n", cases, failed);
  }

  record Outcome(boolean ok, String json) {}

  /** What Java's formatter sends for the input: {"formatter", "body"} or {"formatter", "error"}. */
  private static Outcome format(Object formatter, Input input) {
    Json.Inline entry = new Json.Inline().put("formatter", formatter.getClass().getSimpleName());
    try {
      String body;
      if (formatter instanceof OpenAIBaseFormatter openai) {
        body = openai(openai, input);
      } else if (formatter instanceof AnthropicBaseFormatter anthropic) {
        body = anthropic(anthropic, input);
      } else {
        throw new IllegalStateException("no request builder for " + formatter.getClass());
      }
      Json.tree(body); // must be JSON text we can embed
      return new Outcome(true, entry.putRaw("body", body).text());
    } catch (Throwable e) {
      return new Outcome(false, entry.put("error", Json.describe(e)).text());
    }
  }

  /** As OpenAIChatModel.doStream0 builds the request, then serialized as OpenAIClient does. */
  private static String openai(OpenAIBaseFormatter formatter, Input input) {
    List<OpenAIMessage> messages = formatter.format(input.messages());
    OpenAIRequest.Builder builder =
        OpenAIRequest.builder().model(input.model()).messages(messages).stream(input.stream());
    if (input.stream()) builder.streamOptions(new OpenAIStreamOptions(true));
    OpenAIRequest request = builder.build();
    if (input.tools() != null) formatter.applyTools(request, input.tools());
    formatter.applyOptions(request, input.options(), null);
    if (input.toolChoice() != null) formatter.applyToolChoice(request, input.toolChoice());
    return Json.CODEC.toJson(request);
  }

  /**
   * As AnthropicChatModel.doStream builds MessageCreateParams; the body as the Anthropic SDK writes it. A streaming
   * call goes through the SDK's createStreaming, which adds "stream": true to that body: so does this.
   */
  private static String anthropic(AnthropicBaseFormatter formatter, Input input) throws IOException {
    MessageCreateParams.Builder params = MessageCreateParams.builder().model(input.model()).maxTokens(4096);
    formatter.applySystemMessage(params, input.messages());
    for (MessageParam message : formatter.format(input.messages())) params.addMessage(message);
    formatter.applyOptions(params, input.options(), null);
    formatter.applyTools(params, input.tools());
    if (input.stream()) params.putAdditionalBodyProperty("stream", JsonValue.from(true));
    return ObjectMappers.jsonMapper().writeValueAsString(params.build()._body());
  }

  /** A vector's input, as AgentScope Java values. */
  record Input(
      List<Msg> messages,
      String model,
      boolean stream,
      List<ToolSchema> tools,
      ToolChoice toolChoice,
      GenerateOptions options) {

    static Input read(Path file) throws IOException {
      JsonNode vector = Json.tree(Files.readString(file, StandardCharsets.UTF_8));
      JsonNode in = vector.path("input");
      List<Msg> messages = new ArrayList<>();
      for (JsonNode m : in.path("messages")) messages.add(Json.CODEC.fromJson(Json.plain(m), Msg.class));
      String model = vector.path("expected").path("model").asText(null);
      if (model == null) model = in.path("model").asText(DEFAULT_MODELS.get(vector.path("provider").asText()));
      List<ToolSchema> tools = new ArrayList<>();
      for (JsonNode t : in.path("tools")) tools.add(tool(t.has("function") ? t.get("function") : t));
      ToolChoice choice = toolChoice(in.get("tool_choice"));
      GenerateOptions.Builder options = GenerateOptions.builder();
      JsonNode params = in.path("params");
      if (params.has("temperature")) options.temperature(params.get("temperature").asDouble());
      if (params.has("parallel_tool_calls")) options.parallelToolCalls(params.get("parallel_tool_calls").asBoolean());
      if (choice != null) options.toolChoice(choice);
      return new Input(
          messages, model, in.path("stream").asBoolean(false), tools.isEmpty() ? null : tools, choice, options.build());
    }

    private static ToolSchema tool(JsonNode t) {
      Map<String, Object> parameters =
          Json.PLAIN.convertValue(t.path("parameters"), new TypeReference<Map<String, Object>>() {});
      return ToolSchema.builder()
          .name(t.path("name").asText())
          .description(t.path("description").asText(null))
          .parameters(parameters)
          .build();
    }

    private static ToolChoice toolChoice(JsonNode c) {
      if (c == null || c.isNull()) return null;
      if (c.isObject()) return new ToolChoice.Specific(c.path("name").asText());
      return switch (c.asText()) {
        case "auto" -> new ToolChoice.Auto();
        case "none" -> new ToolChoice.None();
        case "required" -> new ToolChoice.Required();
        default -> throw new IllegalArgumentException("unknown tool_choice " + c);
      };
    }
  }

  /** The model agentmsg names when a vector gives none and agentmsg refused it (no expected.model). */
  static final Map<String, String> DEFAULT_MODELS =
      Map.of(
          "openai", "gpt-4o",
          "deepseek", "deepseek-chat",
          "dashscope-compatible", "qwen-plus",
          "anthropic", "claude-sonnet-4-5");
}
