// The benchmark's peer: an A2A 1.0 server built on the official @a2a-js/sdk (installed by
// tests/interop/js/install.sh) with the SDK's DefaultRequestHandler, InMemoryTaskStore and express JSON-RPC
// handler, and a trivial executor that answers every message with one fixed artifact, COMPLETED.
//
//   node bench/js_agent.mjs PORT [API_KEY]
//
// With API_KEY, every JSON-RPC call must carry `Authorization: Bearer API_KEY` (the SDK's UserBuilder hook),
// as the Quineling server under test is run with one API key. GET /healthz answers 200 once listening.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(here, "..", "tests", "interop", "js", "node_modules");
const require = createRequire(path.join(modules, "x.js"));
const resolve = (name) => import(require.resolve(name));

const { DefaultRequestHandler, AgentEvent } = await resolve("@a2a-js/sdk/server");
const { TaskState } = await resolve("@a2a-js/sdk");
const { InMemoryTaskStore } = await import(path.join(modules, "@a2a-js/sdk/dist/server/index.js"));
const { jsonRpcHandler, agentCardHandler } = await resolve("@a2a-js/sdk/server/express");
const express = (await resolve("express")).default;

const port = Number(process.argv[2] ?? 8050);
const apiKey = process.argv[3] ?? "";

const card = {
  name: "bench-js-sdk",
  description: "Trivial @a2a-js/sdk agent for side-by-side benchmarks",
  supportedInterfaces: [
    { url: `http://127.0.0.1:${port}/a2a/jsonrpc`, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
  ],
  provider: undefined,
  version: "1.0.0",
  capabilities: { streaming: true, pushNotifications: false },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ["application/json", "text/plain"],
  defaultOutputModes: ["application/json"],
  skills: [],
};

// One fixed artifact for every message: the SDK's cost of a send, with no work of the agent's own.
// Parts and states are the SDK's internal (protobuf) shapes; its transport writes them as A2A 1.0 JSON.
const FIXED = [
  {
    content: { $case: "data", value: { operation: "noop", result: { status: "ok" } } },
    mediaType: "application/json",
    metadata: undefined,
    filename: "",
  },
];

class FixedExecutor {
  async execute(context, bus) {
    const { taskId, contextId } = context;
    const task = {
      id: taskId,
      contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: new Date().toISOString() },
      history: [context.userMessage],
      artifacts: [],
    };
    bus.publish(AgentEvent.task(task));
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: { artifactId: "result", name: "result", parts: FIXED },
        append: false,
        lastChunk: true,
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_COMPLETED, timestamp: new Date().toISOString() },
      }),
    );
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    bus.finished();
  }
}

class KeyUser {
  get isAuthenticated() {
    return true;
  }
  get userName() {
    return "bench";
  }
}

const users = apiKey
  ? async (req) => {
      if (req.headers.authorization !== `Bearer ${apiKey}`) {
        const error = new Error("unauthenticated");
        error.status = 401;
        throw error;
      }
      return new KeyUser();
    }
  : async () => new KeyUser();

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new FixedExecutor());
const app = express();
app.get("/healthz", (_req, res) => res.json({ status: "ok" }));
app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler }));
app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: users }));
app.use((err, _req, res, _next) => res.status(err.status ?? 500).json({ error: String(err.message) }));
app.listen(port, "127.0.0.1");
