package dev.agentmsg.conformance;

import io.agentscope.core.ReActAgent;
import io.agentscope.core.event.AgentEvent;
import io.agentscope.core.message.ContentBlock;
import io.agentscope.core.message.ImageBlock;
import io.agentscope.core.message.Msg;
import io.agentscope.core.message.TextBlock;
import io.agentscope.core.message.ThinkingBlock;
import io.agentscope.core.message.ToolResultBlock;
import io.agentscope.core.message.ToolUseBlock;
import io.agentscope.core.message.URLSource;
import io.agentscope.core.message.UserMessage;
import io.agentscope.core.model.ChatModelBase;
import io.agentscope.core.model.ChatResponse;
import io.agentscope.core.model.ChatUsage;
import io.agentscope.core.model.GenerateOptions;
import io.agentscope.core.model.ToolSchema;
import io.agentscope.core.state.InMemoryAgentStateStore;
import io.agentscope.core.tool.AgentTool;
import io.agentscope.core.tool.ToolCallParam;
import io.agentscope.core.tool.Toolkit;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Extra mode {@code stream}: a real {@link ReActAgent} (AgentScope's own agent loop) driven by a scripted model
 * (no network), streaming its AgentEvents. Shows what the released jar really emits: replyIds, blockIds, block
 * lifecycle, tool-result events and the final AGENT_RESULT message.
 *
 * <p>OUT_DIR/stream-SCENARIO.jsonl: one event per line, exactly as AgentScope's codec wrote it (duplicate
 * "type" key included). OUT_DIR/stream-SCENARIO.chunks.json: the scripted model chunks (what the model
 * "said", per model call), for reference.
 */
final class Stream {
  private Stream() {}

  /** A model whose i-th call streams the i-th scripted list of chunks. */
  static final class ScriptedModel extends ChatModelBase {
    private final List<List<ChatResponse>> calls;
    private final AtomicInteger next = new AtomicInteger();

    ScriptedModel(List<List<ChatResponse>> calls) {
      this.calls = calls;
    }

    @Override
    protected Flux<ChatResponse> doStream(List<Msg> messages, List<ToolSchema> tools, GenerateOptions options) {
      int i = next.getAndIncrement();
      if (i >= calls.size()) return Flux.just(chunk("done", List.of(TextBlock.builder().text("(no more script)").build()), null));
      return Flux.fromIterable(calls.get(i));
    }

    @Override
    public String getModelName() {
      return "scripted-model";
    }
  }

  /** get_weather(city): returns text plus an image, with result metadata. */
  static final class WeatherTool implements AgentTool {
    @Override
    public String getName() {
      return "get_weather";
    }

    @Override
    public String getDescription() {
      return "Current weather for a city.";
    }

    @Override
    public Map<String, Object> getParameters() {
      return Map.of(
          "type", "object",
          "properties", Map.of("city", Map.of("type", "string")),
          "required", List.of("city"));
    }

    @Override
    public Mono<ToolResultBlock> callAsync(ToolCallParam param) {
      Object city = param.getInput() == null ? null : param.getInput().get("city");
      return Mono.just(
          ToolResultBlock.of(
              List.<ContentBlock>of(
                  TextBlock.builder().text("Sunny, 25°C in " + city).build(),
                  ImageBlock.builder().source(new URLSource("https://example.com/sun.png")).build()),
              Map.of("provider", "example-weather")));
    }
  }

  static ChatResponse chunk(String id, List<ContentBlock> content, ChatUsage usage) {
    return ChatResponse.builder().id(id).content(content).usage(usage).build();
  }

  static TextBlock text(String s) {
    return TextBlock.builder().text(s).build();
  }

  static ThinkingBlock thinking(String s) {
    return ThinkingBlock.builder().thinking(s).build();
  }

  static ToolUseBlock call(String id, String name, String args) {
    return ToolUseBlock.builder().id(id).name(name).input(Map.of()).content(args).build();
  }

  static void run(Path out) throws IOException {
    Files.createDirectories(out);
    // Reference case 5 shape: text, thinking, more text, a tool call whose arguments arrive in two fragments,
    // usage in a final chunk; then a second model call answers with text.
    List<List<ChatResponse>> weather =
        List.of(
            List.of(
                chunk("chatcmpl-1", List.of(text("Hel")), null),
                chunk("chatcmpl-1", List.of(thinking("think")), null),
                chunk("chatcmpl-1", List.of(text("lo")), null),
                chunk("chatcmpl-1", List.of(call("call_a", "get_weather", "{\"city\":")), null),
                chunk("chatcmpl-1", List.of(call("", "__fragment__", "\"Paris\"}")), null),
                chunk("chatcmpl-1", List.of(), new ChatUsage(7, 3, 0.25))),
            List.of(
                chunk("chatcmpl-2", List.of(text("It is sunny")), null),
                chunk("chatcmpl-2", List.of(text(" in Paris.")), new ChatUsage(20, 5, 0.5))));
    scenario(out, "tool-call-then-answer", weather, 5);

    // Reference edge case: parallel calls whose argument fragments arrive interleaved (OpenAI-style fragments
    // carry no id and the placeholder name "__fragment__").
    List<List<ChatResponse>> parallel =
        List.of(
            List.of(
                chunk("chatcmpl-p", List.of(call("call_a", "get_weather", "")), null),
                chunk("chatcmpl-p", List.of(call("call_b", "get_weather", "")), null),
                chunk("chatcmpl-p", List.of(call("", "__fragment__", "{\"city\":\"Paris\"}")), null),
                chunk("chatcmpl-p", List.of(call("", "__fragment__", "{\"city\":\"Oslo\"}")), new ChatUsage(9, 4, 0.1))),
            List.of(chunk("chatcmpl-q", List.of(text("Both sunny.")), null)));
    scenario(out, "parallel-tool-calls-interleaved", parallel, 5);

    // Max iterations reached: the model keeps asking for the tool; the last call (after EXCEED_MAX_ITERS)
    // answers with text.
    List<List<ChatResponse>> loop = new ArrayList<>();
    for (int i = 0; i < 2; i++)
      loop.add(List.of(chunk("loop-" + i, List.of(call("call_" + i, "get_weather", "{\"city\":\"Oslo\"}")), new ChatUsage(1, 1, 0.0))));
    loop.add(List.of(chunk("loop-2", List.of(thinking("Out of steps."), text("Summary: it is sunny in Oslo.")), new ChatUsage(2, 6, 0.0))));
    scenario(out, "max-iters", loop, 2);
  }

  static void scenario(Path out, String name, List<List<ChatResponse>> script, int maxIters) throws IOException {
    StringBuilder jsonl = new StringBuilder();
    try {
      Toolkit toolkit = new Toolkit();
      toolkit.registerAgentTool(new WeatherTool());
      ReActAgent agent =
          ReActAgent.builder()
              .name("Friday")
              .sysPrompt("You are a helpful assistant.")
              .model(new ScriptedModel(script))
              .toolkit(toolkit)
              .maxIters(maxIters)
              .stateStore(new InMemoryAgentStateStore())
              .build();
      List<AgentEvent> events =
          agent.streamEvents(new UserMessage("alice", "What's the weather in Paris?")).collectList().block(Duration.ofSeconds(30));
      for (AgentEvent e : events == null ? List.<AgentEvent>of() : events) jsonl.append(Json.CODEC.toJson(e)).append('\n');
      System.err.printf("stream %-22s %d events%n", name, events == null ? 0 : events.size());
    } catch (Throwable e) {
      jsonl.append(new Json.Inline().put("harnessError", Json.describe(e)).put("exception", Json.chain(e)).text()).append('\n');
      System.err.println("stream " + name + ": " + Json.describe(e));
    }
    Files.writeString(out.resolve("stream-" + name + ".jsonl"), jsonl.toString(), StandardCharsets.UTF_8);
    Json.RawObject chunks = new Json.RawObject();
    for (int i = 0; i < script.size(); i++) {
      StringBuilder arr = new StringBuilder("[");
      for (ChatResponse c : script.get(i)) {
        if (arr.length() > 1) arr.append(", ");
        arr.append(new Json.Inline().put("id", c.getId()).putRaw("content", Json.CODEC.toJson(c.getContent())).putRaw("usage", Json.CODEC.toJson(c.getUsage())).text());
      }
      chunks.putRaw("model call " + (i + 1), arr.append("]").toString());
    }
    chunks.writeTo(out.resolve("stream-" + name + ".chunks.json"));
  }
}
