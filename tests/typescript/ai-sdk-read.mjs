// The AI SDK's own client reading agentmsg's endpoint (tests/ui/test_ai_sdk_oracle.py runs it; not a
// `node --test` file): for each URL given, DefaultChatTransport (what useChat uses) POSTs a chat request, its
// parseJsonEventStream checks every chunk against uiMessageChunkSchema, and readUIMessageStream builds the
// UIMessage. One JSON line per URL: the last UIMessage, the chunks, the errors, the response headers.
import { DefaultChatTransport, readUIMessageStream } from "ai";

for (const api of process.argv.slice(2)) {
  const headers = {};
  const transport = new DefaultChatTransport({
    api,
    fetch: async (url, init) => {
      const response = await fetch(url, init);
      response.headers.forEach((value, key) => (headers[key] = value));
      return response;
    },
  });
  const errors = [];
  const chunks = [];
  let message = null;
  try {
    const stream = await transport.sendMessages({
      chatId: "chat-1",
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: undefined,
      messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] }],
    });
    const [forReader, forChunks] = stream.tee();
    const collect = (async () => {
      for await (const chunk of forChunks) chunks.push(chunk);
    })();
    for await (const m of readUIMessageStream({ stream: forReader, onError: (e) => errors.push(String(e)) })) {
      message = m;
    }
    await collect;
  } catch (e) {
    errors.push(`thrown: ${e}`);
  }
  process.stdout.write(JSON.stringify({ api, message, chunks, errors, headers }) + "\n");
}
